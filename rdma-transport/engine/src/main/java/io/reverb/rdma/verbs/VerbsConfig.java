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
 *   <tr><td>{@link #shmDirectory()}</td><td>{@code reverb.shm.dir}</td><td>{@code /dev/shm/reverb-<user>}</td></tr>
 *   <tr><td>{@link #rnrRetryNanos()}</td><td>{@code reverb.verbs.rnrRetryMs}</td><td>100 ms</td></tr>
 *   <tr><td>{@link #connectTimeoutNanos()}</td><td>{@code reverb.verbs.connectTimeoutMs}</td><td>5 s</td></tr>
 *   <tr><td>{@link #handshakeTimeoutNanos()}</td><td>{@code reverb.verbs.handshakeTimeoutMs}</td><td>2 s</td></tr>
 *   <tr><td>{@link #maxPendingHandshakes()}</td><td>{@code reverb.verbs.maxPendingHandshakes}</td><td>64</td></tr>
 *   <tr><td>{@link #tls()}</td><td>none</td><td>none (plaintext {@code tcp://})</td></tr>
 * </table>
 */
public final class VerbsConfig
{
    /** Directory for the shm provider's mapped files. */
    public static final String SHM_DIR_PROP = "reverb.shm.dir";
    /**
     * Default for {@link #SHM_DIR_PROP}: one directory per user ({@code /dev/shm/reverb-<user name>}), so
     * two users of one host each have their own and neither can reach the other's.
     */
    public static final String SHM_DIR_DEFAULT = "/dev/shm/reverb-" + safeUserName();
    /** How long a SEND waits for a posted receive before failing with RNR_RETRY_EXC_ERR. */
    public static final String RNR_RETRY_MS_PROP = "reverb.verbs.rnrRetryMs";
    /** Default for {@link #RNR_RETRY_MS_PROP}. */
    public static final long RNR_RETRY_MS_DEFAULT = 100;
    /** Connection establishment timeout. */
    public static final String CONNECT_TIMEOUT_MS_PROP = "reverb.verbs.connectTimeoutMs";
    /** Default for {@link #CONNECT_TIMEOUT_MS_PROP}. */
    public static final long CONNECT_TIMEOUT_MS_DEFAULT = 5_000;
    /** How long a listener waits for an accepted socket's handshake before dropping it. */
    public static final String HANDSHAKE_TIMEOUT_MS_PROP = "reverb.verbs.handshakeTimeoutMs";
    /** Default for {@link #HANDSHAKE_TIMEOUT_MS_PROP}. */
    public static final long HANDSHAKE_TIMEOUT_MS_DEFAULT = 2_000;
    /** Handshakes a listener reads at once; a new connection beyond it evicts the oldest pending one (logged, rate-limited). */
    public static final String MAX_PENDING_HANDSHAKES_PROP = "reverb.verbs.maxPendingHandshakes";
    /** Default for {@link #MAX_PENDING_HANDSHAKES_PROP}. */
    public static final int MAX_PENDING_HANDSHAKES_DEFAULT = 64;

    private final Path shmDirectory;
    private final long rnrRetryNanos;
    private final long connectTimeoutNanos;
    private final long handshakeTimeoutNanos;
    private final int maxPendingHandshakes;
    private final TlsConfig tls;

    private VerbsConfig(
        final Path shmDirectory,
        final long rnrRetryNanos,
        final long connectTimeoutNanos,
        final long handshakeTimeoutNanos,
        final int maxPendingHandshakes,
        final TlsConfig tls)
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
        if (handshakeTimeoutNanos <= 0)
        {
            throw new IllegalArgumentException("handshakeTimeoutNanos must be > 0: " + handshakeTimeoutNanos);
        }
        if (maxPendingHandshakes <= 0)
        {
            throw new IllegalArgumentException("maxPendingHandshakes must be > 0: " + maxPendingHandshakes);
        }
        this.rnrRetryNanos = rnrRetryNanos;
        this.connectTimeoutNanos = connectTimeoutNanos;
        this.handshakeTimeoutNanos = handshakeTimeoutNanos;
        this.maxPendingHandshakes = maxPendingHandshakes;
        this.tls = tls;
    }

    private static String safeUserName()
    {
        final String user = System.getProperty("user.name", "");
        final StringBuilder safe = new StringBuilder();
        for (int i = 0; i < user.length(); i++)
        {
            final char c = user.charAt(i);
            safe.append(Character.isLetterOrDigit(c) || c == '-' || c == '_' || c == '.' ? c : '_');
        }
        return safe.length() == 0 || safe.charAt(0) == '.' ? "user" + safe : safe.toString();
    }

    /**
     * @return defaults, overridden by the system properties named above.
     */
    public static VerbsConfig defaults()
    {
        return new VerbsConfig(
            Paths.get(System.getProperty(SHM_DIR_PROP, SHM_DIR_DEFAULT)),
            Long.getLong(RNR_RETRY_MS_PROP, RNR_RETRY_MS_DEFAULT) * 1_000_000L,
            Long.getLong(CONNECT_TIMEOUT_MS_PROP, CONNECT_TIMEOUT_MS_DEFAULT) * 1_000_000L,
            Long.getLong(HANDSHAKE_TIMEOUT_MS_PROP, HANDSHAKE_TIMEOUT_MS_DEFAULT) * 1_000_000L,
            Integer.getInteger(MAX_PENDING_HANDSHAKES_PROP, MAX_PENDING_HANDSHAKES_DEFAULT), null);
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

    /**
     * @return how long a listener waits for the handshake of a socket it accepted. Handshakes are read
     *         concurrently, so a silent peer costs one pending slot for this long, never the listener.
     */
    public long handshakeTimeoutNanos()
    {
        return handshakeTimeoutNanos;
    }

    /** @return handshakes a listener reads at once; a new connection beyond it evicts the oldest pending one (logged). */
    public int maxPendingHandshakes()
    {
        return maxPendingHandshakes;
    }

    /** @param dir new shm directory. @return a copy with it. */
    public VerbsConfig withShmDirectory(final Path dir)
    {
        return new VerbsConfig(dir, rnrRetryNanos, connectTimeoutNanos, handshakeTimeoutNanos, maxPendingHandshakes, tls);
    }

    /** @param nanos new RNR retry time. @return a copy with it. */
    public VerbsConfig withRnrRetryNanos(final long nanos)
    {
        return new VerbsConfig(shmDirectory, nanos, connectTimeoutNanos, handshakeTimeoutNanos, maxPendingHandshakes, tls);
    }

    /** @param nanos new connect timeout. @return a copy with it. */
    public VerbsConfig withConnectTimeoutNanos(final long nanos)
    {
        return new VerbsConfig(shmDirectory, rnrRetryNanos, nanos, handshakeTimeoutNanos, maxPendingHandshakes, tls);
    }

    /** @param nanos new handshake deadline of listeners. @return a copy with it. */
    public VerbsConfig withHandshakeTimeoutNanos(final long nanos)
    {
        return new VerbsConfig(shmDirectory, rnrRetryNanos, connectTimeoutNanos, nanos, maxPendingHandshakes, tls);
    }

    /** @param n new cap on handshakes a listener reads at once. @return a copy with it. */
    public VerbsConfig withMaxPendingHandshakes(final int n)
    {
        return new VerbsConfig(shmDirectory, rnrRetryNanos, connectTimeoutNanos, handshakeTimeoutNanos, n, tls);
    }

    /**
     * @return TLS for {@code tcp://} connections (both roles: listeners and connects), or null for plaintext.
     *         Other providers ignore it.
     */
    public TlsConfig tls()
    {
        return tls;
    }

    /** @param config TLS for {@code tcp://}, or null for none. @return a copy with it. */
    public VerbsConfig withTls(final TlsConfig config)
    {
        return new VerbsConfig(shmDirectory, rnrRetryNanos, connectTimeoutNanos, handshakeTimeoutNanos,
            maxPendingHandshakes, config);
    }

    @Override
    public String toString()
    {
        return "VerbsConfig{shmDirectory=" + shmDirectory + ", rnrRetryNanos=" + rnrRetryNanos +
            ", connectTimeoutNanos=" + connectTimeoutNanos + ", handshakeTimeoutNanos=" + handshakeTimeoutNanos +
            ", maxPendingHandshakes=" + maxPendingHandshakes + ", tls=" + (tls == null ? "none" : tls) + '}';
    }
}
