package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.VerbsProvider;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The {@code shm://} fabric: RDMA verbs between threads and processes of one host, over memory-mapped
 * files and Unix domain sockets. See {@link ShmVerbsContext} for how the pieces fit together.
 */
public final class ShmVerbsProvider implements VerbsProvider
{
    /** Provider name and URI scheme. */
    public static final String NAME = "shm";

    @Override
    public String name()
    {
        return NAME;
    }

    @Override
    public String unavailabilityCause()
    {
        if (System.getProperty("os.name", "").toLowerCase().startsWith("windows"))
        {
            return "the shm provider needs POSIX file permissions and memory-mapped files in a tmpfs; " +
                "use tcp:// on Windows";
        }
        final Path dir = VerbsConfig.defaults().shmDirectory();
        Path existing = dir;
        while (existing != null && !Files.exists(existing))
        {
            existing = existing.getParent();
        }
        if (existing == null || !Files.isWritable(existing))
        {
            return "shm directory " + dir + " cannot be created (no writable ancestor); set -D" +
                VerbsConfig.SHM_DIR_PROP + " to a writable directory, ideally on a tmpfs such as /dev/shm";
        }
        return null;
    }

    @Override
    public VerbsContext open(final VerbsConfig config) throws IOException
    {
        return new ShmVerbsContext(this, config == null ? VerbsConfig.defaults() : config);
    }

    @Override
    public String toString()
    {
        return "ShmVerbsProvider";
    }
}
