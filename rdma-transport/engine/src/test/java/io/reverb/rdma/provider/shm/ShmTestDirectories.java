package io.reverb.rdma.provider.shm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Private shm directories for tests: short (Unix socket paths are limited to 107 bytes) and unique
 * per JVM and test class, on /dev/shm when it exists.
 */
final class ShmTestDirectories
{
    private ShmTestDirectories()
    {
    }

    static Path newDirectory(final String tag)
    {
        final Path base = Files.isDirectory(Paths.get("/dev/shm")) ? Paths.get("/dev/shm") :
            Paths.get(System.getProperty("java.io.tmpdir"));
        try
        {
            final Path dir = base.resolve("rvb-" + tag + "-" + ProcessHandle.current().pid());
            ShmFiles.ensureDirectory(dir);
            return dir;
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }

    static void delete(final Path dir) throws IOException
    {
        if (!Files.exists(dir))
        {
            return;
        }
        try (Stream<Path> files = Files.walk(dir))
        {
            files.sorted(Comparator.reverseOrder()).forEach(ShmFiles::deleteQuietly);
        }
    }
}
