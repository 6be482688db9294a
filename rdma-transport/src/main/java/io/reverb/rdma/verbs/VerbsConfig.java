package io.reverb.rdma.verbs;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Objects;

/**
 * Provider settings, validated in one place. Immutable; use the {@code with...} methods.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>system property</th><th>default</th></tr>
 *   <tr><td>{@link #shmDirectory()}</td><td>{@code reverb.shm.dir}</td><td>{@code /dev/shm/reverb}</td></tr>
 *   <tr><td>{@link #rnrRetryNanos()}</td><td>{@code reverb.verbs.rnrRetryMs}</td><td>100 ms</td></tr>
 *   <tr><td>{@link #connectTimeoutNanos()}</td><td>{@code reverb.verbs.connectTimeoutMs}</td><td>5 s</td></tr>
 * </table>
 */
public final class VerbsConfig
{
    /** Directory for the shm provider's mapped files. */
    public static final String SHM_DIR_PROP = "reverb.shm.dir";
    /** Default for {@link #SHM_DIR_PROP}. */
    public static final String SHM_DIR_DEFAULT = "/dev/shm/reverb";
    /** How long a SEND waits for a posted receive before failing with RNR_RETRY_EXC_ERR. */
    public static final String RNR_RETRY_MS_PROP = "reverb.verbs.rnrRetryMs";
    /** Default for {@link #RNR_RETRY_MS_PROP}. */
    public static final long RNR_RETRY_MS_DEFAULT = 100;
    /** Connection establishment timeout. */
    public static final String CONNECT_TIMEOUT_MS_PROP = "reverb.verbs.connectTimeoutMs";
    /** Default for {@link #CONNECT_TIMEOUT_MS_PROP}. */
    public static final long CONNECT_TIMEOUT_MS_DEFAULT = 5_000;

    private final Path shmDirectory;
    private final long rnrRetryNanos;
    private final long connectTimeoutNanos;

    private VerbsConfig(final Path shmDirectory, final long rnrRetryNanos, final long connectTimeoutNanos)
    {
        this.shmDirectory = Objects.requireNonNull(shmDirectory, "shmDirectory");
        if (rnrRetryNanos < 0)
        {
            throw new IllegalArgumentException("rnrRetryNanos must be >= 0: " + rnrRetryNanos);
        }
        if (connectTimeoutNanos <= 0)
        {
            throw new IllegalArgumentException("connectTimeoutNanos must be > 0: " + connectTimeoutNanos);
        }
        this.rnrRetryNanos = rnrRetryNanos;
        this.connectTimeoutNanos = connectTimeoutNanos;
    }

    /**
     * @return defaults, overridden by the system properties named above.
     */
    public static VerbsConfig defaults()
    {
        return new VerbsConfig(
            Paths.get(System.getProperty(SHM_DIR_PROP, SHM_DIR_DEFAULT)),
            Long.getLong(RNR_RETRY_MS_PROP, RNR_RETRY_MS_DEFAULT) * 1_000_000L,
            Long.getLong(CONNECT_TIMEOUT_MS_PROP, CONNECT_TIMEOUT_MS_DEFAULT) * 1_000_000L);
    }

    /** @return directory for the shm provider's files (mode 0700, files 0600). */
    public Path shmDirectory()
    {
        return shmDirectory;
    }

    /**
     * @return how long a SEND retries when the peer has no receive posted (shm, tcp). On {@code rdma://}
     *         rdma_cm can only set a retry count of 655.36 ms waits, and it is the receiver's setting that
     *         applies to the sender: 0 fails at once, anything else becomes 655 ms to 3.9 s (see the disni
     *         provider's {@code RnrRetry}).
     */
    public long rnrRetryNanos()
    {
        return rnrRetryNanos;
    }

    /** @return how long connect waits for the peer to accept. */
    public long connectTimeoutNanos()
    {
        return connectTimeoutNanos;
    }

    /** @param dir new shm directory. @return a copy with it. */
    public VerbsConfig withShmDirectory(final Path dir)
    {
        return new VerbsConfig(dir, rnrRetryNanos, connectTimeoutNanos);
    }

    /** @param nanos new RNR retry time. @return a copy with it. */
    public VerbsConfig withRnrRetryNanos(final long nanos)
    {
        return new VerbsConfig(shmDirectory, nanos, connectTimeoutNanos);
    }

    /** @param nanos new connect timeout. @return a copy with it. */
    public VerbsConfig withConnectTimeoutNanos(final long nanos)
    {
        return new VerbsConfig(shmDirectory, rnrRetryNanos, nanos);
    }

    @Override
    public String toString()
    {
        return "VerbsConfig{shmDirectory=" + shmDirectory + ", rnrRetryNanos=" + rnrRetryNanos +
            ", connectTimeoutNanos=" + connectTimeoutNanos + '}';
    }
}
