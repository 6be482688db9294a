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
 *   <tr><td>{@link #shmPollerDoorbells()}</td><td>{@code reverb.shm.pollerDoorbells}</td><td>true</td></tr>
 *   <tr><td>{@link #shmInlineReceive()}</td><td>{@code reverb.shm.inlineReceive}</td><td>true</td></tr>
 *   <tr><td>{@link #tcpPollerReads()}</td><td>{@code reverb.tcp.pollerReads}</td><td>true</td></tr>
 *   <tr><td>{@link #tcpBusyPollNanos()}</td><td>{@code reverb.tcp.busyPollMicros}</td><td>0 (never)</td></tr>
 *   <tr><td>{@link #tcpAckHoldNanos()}</td><td>{@code reverb.tcp.ackHoldMicros}</td><td>500 µs</td></tr>
 *   <tr><td>{@link #rdmaLocalAddress()}</td><td>{@code reverb.disni.localAddress}</td><td>none (found from
 *       sysfs)</td></tr>
 * </table>
 *
 * <p>A system property is only the default of its field: {@link #defaults()} reads each once, and the providers read
 * the config they are given, never a property (Aeron's {@code Context} rule). Two contexts of one JVM can therefore
 * run different settings.
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
    /**
     * {@code shm://}: whether a sleeping poller is woken by its connections' doorbells directly (its completion channel
     * watches their sockets); {@code false} leaves the doorbells to the context's event thread, which then wakes the
     * poller (two thread wake-ups per message that finds the poller asleep).
     */
    public static final String SHM_POLLER_DOORBELLS_PROP = "reverb.shm.pollerDoorbells";
    /**
     * {@code shm://}: whether a QP receives small SENDs inline: the sender writes the bytes and the completion into
     * one slot of a single-producer ring that the receiving CQ's poller reads, instead of a separate CQ entry.
     */
    public static final String SHM_INLINE_RECEIVE_PROP = "reverb.shm.inlineReceive";
    /**
     * {@code tcp://}: whether the poller of a receive CQ reads its QPs' sockets while it polls; {@code false} leaves all
     * reading to the NIC thread (one hand-over between threads per message).
     */
    public static final String TCP_POLLER_READS_PROP = "reverb.tcp.pollerReads";
    /** {@code tcp://}: how long (µs) the NIC thread busy-polls after the last event before it sleeps; 0 never. */
    public static final String TCP_BUSY_POLL_MICROS_PROP = "reverb.tcp.busyPollMicros";
    /** {@code tcp://}: how long (µs) a lone ACK may wait to ride on a request; 0 sends every ACK at once. */
    public static final String TCP_ACK_HOLD_MICROS_PROP = "reverb.tcp.ackHoldMicros";
    /** Default for {@link #TCP_ACK_HOLD_MICROS_PROP}. */
    public static final long TCP_ACK_HOLD_MICROS_DEFAULT = 500;
    /** Largest busy-poll and ACK hold time: one second. */
    public static final long MAX_TCP_WAIT_NANOS = 1_000_000_000L;
    /** {@code rdma://}: IPv4 address of the RDMA interface whose device a context opens. */
    public static final String RDMA_LOCAL_ADDRESS_PROP = "reverb.disni.localAddress";

    private final Path shmDirectory;
    private final long rnrRetryNanos;
    private final long connectTimeoutNanos;
    private final long handshakeTimeoutNanos;
    private final int maxPendingHandshakes;
    private final TlsConfig tls;
    private final boolean shmPollerDoorbells;
    private final boolean shmInlineReceive;
    private final boolean tcpPollerReads;
    private final long tcpBusyPollNanos;
    private final long tcpAckHoldNanos;
    private final String rdmaLocalAddress;

    private VerbsConfig(final VerbsConfig from, final Builder change)
    {
        this(change.shmDirectory != null ? change.shmDirectory : from.shmDirectory,
            change.rnrRetryNanos != null ? change.rnrRetryNanos : from.rnrRetryNanos,
            change.connectTimeoutNanos != null ? change.connectTimeoutNanos : from.connectTimeoutNanos,
            change.handshakeTimeoutNanos != null ? change.handshakeTimeoutNanos : from.handshakeTimeoutNanos,
            change.maxPendingHandshakes != null ? change.maxPendingHandshakes : from.maxPendingHandshakes,
            change.tlsSet ? change.tls : from.tls,
            change.shmPollerDoorbells != null ? change.shmPollerDoorbells : from.shmPollerDoorbells,
            change.shmInlineReceive != null ? change.shmInlineReceive : from.shmInlineReceive,
            change.tcpPollerReads != null ? change.tcpPollerReads : from.tcpPollerReads,
            change.tcpBusyPollNanos != null ? change.tcpBusyPollNanos : from.tcpBusyPollNanos,
            change.tcpAckHoldNanos != null ? change.tcpAckHoldNanos : from.tcpAckHoldNanos,
            change.rdmaLocalAddressSet ? change.rdmaLocalAddress : from.rdmaLocalAddress);
    }

    private VerbsConfig(
        final Path shmDirectory,
        final long rnrRetryNanos,
        final long connectTimeoutNanos,
        final long handshakeTimeoutNanos,
        final int maxPendingHandshakes,
        final TlsConfig tls,
        final boolean shmPollerDoorbells,
        final boolean shmInlineReceive,
        final boolean tcpPollerReads,
        final long tcpBusyPollNanos,
        final long tcpAckHoldNanos,
        final String rdmaLocalAddress)
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
        if (tcpBusyPollNanos < 0 || tcpBusyPollNanos > MAX_TCP_WAIT_NANOS)
        {
            throw new IllegalArgumentException("tcpBusyPollNanos must be 0 to " + MAX_TCP_WAIT_NANOS + " (" +
                TCP_BUSY_POLL_MICROS_PROP + ": 0 to 1000000 µs): " + tcpBusyPollNanos);
        }
        if (tcpAckHoldNanos < 0 || tcpAckHoldNanos > MAX_TCP_WAIT_NANOS)
        {
            throw new IllegalArgumentException("tcpAckHoldNanos must be 0 to " + MAX_TCP_WAIT_NANOS + " (" +
                TCP_ACK_HOLD_MICROS_PROP + ": 0 to 1000000 µs): " + tcpAckHoldNanos);
        }
        this.shmPollerDoorbells = shmPollerDoorbells;
        this.shmInlineReceive = shmInlineReceive;
        this.tcpPollerReads = tcpPollerReads;
        this.tcpBusyPollNanos = tcpBusyPollNanos;
        this.tcpAckHoldNanos = tcpAckHoldNanos;
        this.rdmaLocalAddress = rdmaLocalAddress == null || rdmaLocalAddress.isBlank() ? null : rdmaLocalAddress.trim();
    }

    /** The fields a {@code with...} method changes; null (or not set) keeps the original's. */
    private static final class Builder
    {
        Path shmDirectory;
        Long rnrRetryNanos;
        Long connectTimeoutNanos;
        Long handshakeTimeoutNanos;
        Integer maxPendingHandshakes;
        boolean tlsSet;
        TlsConfig tls;
        Boolean shmPollerDoorbells;
        Boolean shmInlineReceive;
        Boolean tcpPollerReads;
        Long tcpBusyPollNanos;
        Long tcpAckHoldNanos;
        boolean rdmaLocalAddressSet;
        String rdmaLocalAddress;
    }

    private static long microsProperty(final String name, final long defaultMicros)
    {
        try
        {
            return Math.multiplyExact(longProperty(name, defaultMicros), 1000L);
        }
        catch (final ArithmeticException ex)
        {
            throw new IllegalArgumentException("-D" + name + " is out of range: " + System.getProperty(name), ex);
        }
    }

    private static int intProperty(final String name, final int defaultValue)
    {
        final long value = longProperty(name, defaultValue);
        if (value != (int)value)
        {
            throw new IllegalArgumentException("-D" + name + " is out of range: " + value);
        }
        return (int)value;
    }

    /** @return the property as a whole number, or the default if unset; a value that is not one is refused. */
    private static long longProperty(final String name, final long defaultValue)
    {
        final String value = System.getProperty(name);
        if (value == null || value.isBlank())
        {
            return defaultValue;
        }
        try
        {
            return Long.parseLong(value.trim());
        }
        catch (final NumberFormatException ex)
        {
            throw new IllegalArgumentException("-D" + name + " must be a whole number, got '" + value + "'", ex);
        }
    }

    private static boolean booleanProperty(final String name, final boolean defaultValue)
    {
        final String value = System.getProperty(name);
        if (value == null || value.isBlank())
        {
            return defaultValue;
        }
        if ("true".equalsIgnoreCase(value.trim()) || "false".equalsIgnoreCase(value.trim()))
        {
            return Boolean.parseBoolean(value.trim());
        }
        throw new IllegalArgumentException("-D" + name + " must be true or false, got '" + value + "'");
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
     * Reads the system properties named above, once: they are the defaults of the fields, nothing reads them later.
     *
     * @return defaults, overridden by the system properties named above.
     * @throws IllegalArgumentException if a property is set to a value its field does not accept.
     */
    public static VerbsConfig defaults()
    {
        return new VerbsConfig(
            Paths.get(System.getProperty(SHM_DIR_PROP, SHM_DIR_DEFAULT)),
            Math.multiplyExact(longProperty(RNR_RETRY_MS_PROP, RNR_RETRY_MS_DEFAULT), 1_000_000L),
            Math.multiplyExact(longProperty(CONNECT_TIMEOUT_MS_PROP, CONNECT_TIMEOUT_MS_DEFAULT), 1_000_000L),
            Math.multiplyExact(longProperty(HANDSHAKE_TIMEOUT_MS_PROP, HANDSHAKE_TIMEOUT_MS_DEFAULT), 1_000_000L),
            intProperty(MAX_PENDING_HANDSHAKES_PROP, MAX_PENDING_HANDSHAKES_DEFAULT), null,
            booleanProperty(SHM_POLLER_DOORBELLS_PROP, true),
            booleanProperty(SHM_INLINE_RECEIVE_PROP, true),
            booleanProperty(TCP_POLLER_READS_PROP, true),
            microsProperty(TCP_BUSY_POLL_MICROS_PROP, 0),
            microsProperty(TCP_ACK_HOLD_MICROS_PROP, TCP_ACK_HOLD_MICROS_DEFAULT),
            System.getProperty(RDMA_LOCAL_ADDRESS_PROP));
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
        final Builder change = new Builder();
        change.shmDirectory = Objects.requireNonNull(dir, "dir");
        return new VerbsConfig(this, change);
    }

    /** @param nanos new RNR retry time. @return a copy with it. */
    public VerbsConfig withRnrRetryNanos(final long nanos)
    {
        final Builder change = new Builder();
        change.rnrRetryNanos = nanos;
        return new VerbsConfig(this, change);
    }

    /** @param nanos new connect timeout. @return a copy with it. */
    public VerbsConfig withConnectTimeoutNanos(final long nanos)
    {
        final Builder change = new Builder();
        change.connectTimeoutNanos = nanos;
        return new VerbsConfig(this, change);
    }

    /** @param nanos new handshake deadline of listeners. @return a copy with it. */
    public VerbsConfig withHandshakeTimeoutNanos(final long nanos)
    {
        final Builder change = new Builder();
        change.handshakeTimeoutNanos = nanos;
        return new VerbsConfig(this, change);
    }

    /** @param n new cap on handshakes a listener reads at once. @return a copy with it. */
    public VerbsConfig withMaxPendingHandshakes(final int n)
    {
        final Builder change = new Builder();
        change.maxPendingHandshakes = n;
        return new VerbsConfig(this, change);
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
        final Builder change = new Builder();
        change.tlsSet = true;
        change.tls = config;
        return new VerbsConfig(this, change);
    }

    /**
     * @return {@code shm://}: whether a completion channel's waiter is woken by its QPs' doorbell sockets directly (one
     *         thread wake-up per message that finds the poller asleep); false leaves the doorbells to the context's
     *         event thread, which then signals the channel (two wake-ups).
     */
    public boolean shmPollerDoorbells()
    {
        return shmPollerDoorbells;
    }

    /** @param on see {@link #shmPollerDoorbells()}. @return a copy with it. */
    public VerbsConfig withShmPollerDoorbells(final boolean on)
    {
        final Builder change = new Builder();
        change.shmPollerDoorbells = on;
        return new VerbsConfig(this, change);
    }

    /**
     * @return {@code shm://}: whether this context's QPs receive small SENDs inline (bytes and completion in one slot
     *         the poller reads; no CQ entry, no read of the posted receive by the sender); false: every receive
     *         completion goes through the receive CQ's shared ring, as before.
     */
    public boolean shmInlineReceive()
    {
        return shmInlineReceive;
    }

    /** @param on see {@link #shmInlineReceive()}. @return a copy with it. */
    public VerbsConfig withShmInlineReceive(final boolean on)
    {
        final Builder change = new Builder();
        change.shmInlineReceive = on;
        return new VerbsConfig(this, change);
    }

    /**
     * @return {@code tcp://}: whether the thread that polls a receive CQ reads its QPs' sockets itself while it keeps
     *         polling (no hand-over to the NIC thread per message); false leaves all reading to the NIC thread.
     */
    public boolean tcpPollerReads()
    {
        return tcpPollerReads;
    }

    /** @param on see {@link #tcpPollerReads()}. @return a copy with it. */
    public VerbsConfig withTcpPollerReads(final boolean on)
    {
        final Builder change = new Builder();
        change.tcpPollerReads = on;
        return new VerbsConfig(this, change);
    }

    /**
     * @return {@code tcp://}: how long the NIC thread keeps polling its sockets without sleeping after the last event,
     *         so that a reply arriving within that time is read without a wake-up; 0 never. It costs a core while it
     *         spins: with fewer free cores than busy threads it makes latency worse.
     */
    public long tcpBusyPollNanos()
    {
        return tcpBusyPollNanos;
    }

    /** @param nanos see {@link #tcpBusyPollNanos()}, 0 to 1 s. @return a copy with it. */
    public VerbsConfig withTcpBusyPollNanos(final long nanos)
    {
        final Builder change = new Builder();
        change.tcpBusyPollNanos = nanos;
        return new VerbsConfig(this, change);
    }

    /**
     * @return {@code tcp://}: how long a lone ACK may wait to ride on a request of this side; 0 sends every ACK at once.
     *         The NIC's timer has millisecond granularity, so a held ACK that no request picks up leaves 1-2 ms later.
     */
    public long tcpAckHoldNanos()
    {
        return tcpAckHoldNanos;
    }

    /** @param nanos see {@link #tcpAckHoldNanos()}, 0 to 1 s. @return a copy with it. */
    public VerbsConfig withTcpAckHoldNanos(final long nanos)
    {
        final Builder change = new Builder();
        change.tcpAckHoldNanos = nanos;
        return new VerbsConfig(this, change);
    }

    /**
     * @return {@code rdma://}: the IPv4 address of the RDMA interface whose device a context opens, or null to take the
     *         device of the first specific address the context listens on, else the first one found in sysfs.
     */
    public String rdmaLocalAddress()
    {
        return rdmaLocalAddress;
    }

    /** @param address see {@link #rdmaLocalAddress()}; null or blank for none. @return a copy with it. */
    public VerbsConfig withRdmaLocalAddress(final String address)
    {
        final Builder change = new Builder();
        change.rdmaLocalAddressSet = true;
        change.rdmaLocalAddress = address;
        return new VerbsConfig(this, change);
    }

    @Override
    public String toString()
    {
        return "VerbsConfig{shmDirectory=" + shmDirectory + ", rnrRetryNanos=" + rnrRetryNanos +
            ", connectTimeoutNanos=" + connectTimeoutNanos + ", handshakeTimeoutNanos=" + handshakeTimeoutNanos +
            ", maxPendingHandshakes=" + maxPendingHandshakes + ", tls=" + (tls == null ? "none" : tls) +
            ", shmPollerDoorbells=" + shmPollerDoorbells + ", shmInlineReceive=" + shmInlineReceive +
            ", tcpPollerReads=" + tcpPollerReads +
            ", tcpBusyPollNanos=" + tcpBusyPollNanos + ", tcpAckHoldNanos=" + tcpAckHoldNanos +
            ", rdmaLocalAddress=" + (rdmaLocalAddress == null ? "auto" : rdmaLocalAddress) + '}';
    }
}
