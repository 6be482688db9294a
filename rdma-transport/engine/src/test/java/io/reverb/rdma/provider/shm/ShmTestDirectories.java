package io.reverb.rdma.provider.shm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * Private shm directories for tests: short (Unix socket paths are limited to 107 bytes) and unique
 * per JVM and test class, on /dev/shm when it exists.
 */
public final class ShmTestDirectories
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

    /**
     * Deletes the directory and everything in it. Files that vanish meanwhile (a closing engine removes its own,
     * asynchronously) are skipped rather than failing the walk.
     *
     * @param dir the directory; nothing happens if it does not exist.
     * @throws IOException if something in it cannot be read.
     */
    public static void delete(final Path dir) throws IOException
    {
        if (!Files.exists(dir))
        {
            return;
        }
        Files.walkFileTree(dir, new SimpleFileVisitor<>()
        {
            @Override
            public FileVisitResult visitFile(final Path file, final BasicFileAttributes attrs)
            {
                ShmFiles.deleteQuietly(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(final Path file, final IOException ex) throws IOException
            {
                if (ex instanceof NoSuchFileException)
                {
                    return FileVisitResult.CONTINUE; // gone meanwhile
                }
                throw ex;
            }

            @Override
            public FileVisitResult postVisitDirectory(final Path directory, final IOException ex)
            {
                ShmFiles.deleteQuietly(directory);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
