package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.TlsConfig;
import io.reverb.rdma.verbs.VerbsConfig;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * Settings of an {@link RdmaEngine}: a fluent builder whose values are checked and completed in one
 * place, {@link #conclude()}, which {@link RdmaEngine#open} calls. A concluded config is frozen.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>{@link #receiveSlots(int)}</td><td>128</td><td>receives posted per connection = the peer's credit window</td></tr>
 *   <tr><td>{@link #eagerLimit(int)}</td><td>4096</td><td>largest payload sent by SEND; larger ones go by rendezvous</td></tr>
 *   <tr><td>{@link #sendSlots(int)}</td><td>128</td><td>send ring capacity, in maximal eager frames</td></tr>
 *   <tr><td>{@link #rendezvousMinClass(int)}</td><td>64 KiB</td><td>smallest rendezvous buffer (size classes are powers of two)</td></tr>
 *   <tr><td>{@link #rendezvousPoolBytes(long)}</td><td>128 MiB</td><td>registered rendezvous memory per connection and direction, allocated lazily</td></tr>
 *   <tr><td>{@link #rendezvousWriteTimeoutNanos(long)}</td><td>30 s</td><td>a peer holding a granted buffer unwritten this long is dropped</td></tr>
 *   <tr><td>{@link #directWrite(boolean)}</td><td>true</td><td>where the provider can map the peer's memory (shm), large messages are written straight into the receiver's granted buffer</td></tr>
 *   <tr><td>{@link #announceAtClaim(boolean)}</td><td>true ({@code -Dreverb.rendezvous.announceAtClaim})</td><td>a large message's RTS leaves at its claim, so the receiver's grant comes back while the message is serialised</td></tr>
 *   <tr><td>{@link #rendezvousMemoryBytes(long)}</td><td>half the heap limit, 64 MiB..1 GiB</td><td>registered rendezvous receive memory of all connections together</td></tr>
 *   <tr><td>{@link #maxInboundMessageSize(int)}</td><td>64 MiB</td><td>larger incoming messages are refused</td></tr>
 *   <tr><td>{@link #maxOutboundMessageSize(int)}</td><td>64 MiB</td><td>larger claims return {@link Connection#TOO_LARGE}</td></tr>
 *   <tr><td>{@link #pollingMode(PollingMode)}</td><td>ADAPTIVE</td><td>see {@link PollingMode}</td></tr>
 *   <tr><td>{@link #pollerCount(int)}</td><td>1</td><td>completion poller threads</td></tr>
 *   <tr><td>{@link #messagesPerPoll(int)}</td><td>{@value #DEFAULT_MESSAGES_PER_POLL}</td><td>messages one connection delivers per duty cycle before its poller moves on to the others</td></tr>
 *   <tr><td>{@link #tls(TlsConfig)}</td><td>none</td><td>TLS for {@code tcp://} (JDK SSLEngine, TLS 1.3; optional mutual TLS)</td></tr>
 *   <tr><td>{@link #authToken(String)}</td><td>none</td><td>shared secret both sides must prove they hold (challenge-response, see the package doc)</td></tr>
 *   <tr><td>{@link #maxConnections(int)}</td><td>4096</td><td>open connections accepted at most; more are refused with a clear reason</td></tr>
 *   <tr><td>{@link #maxUnprovenPerPeer(int)}</td><td>64</td><td>with a token: connections of one peer host still to prove it; more are refused</td></tr>
 *   <tr><td>{@link #meterRegistry(Object)}</td><td>none</td><td>a Micrometer {@code MeterRegistry}; Micrometer is optional</td></tr>
 *   <tr><td>{@link #closeTimeoutNanos(long)}</td><td>10 s</td><td>graceful close waits this long for in-flight messages</td></tr>
 * </table>
 */
public final class EngineConfig
{
    /** Most receive slots per connection (bounded so send queues and CQs stay small). */
    public static final int MAX_RECEIVE_SLOTS = 1024;
    /** Fewest receive slots: the credit protocol needs a window of at least four. */
    public static final int MIN_RECEIVE_SLOTS = 4;
    /** Largest eager limit. */
    public static final int MAX_EAGER_LIMIT = 1 << 20;
    /**
     * Default of {@link #messagesPerPoll(int)}: a burst on one connection delays another connection of the same poller
     * by this many messages' handling (a few µs each for small RPCs), while a streaming connection still takes a
     * whole receive's worth of small messages per duty cycle.
     */
    public static final int DEFAULT_MESSAGES_PER_POLL = 32;
    /** Largest rendezvous size class (ibverbs SGE lengths are 32-bit). */
    public static final int MAX_SIZE_CLASS = 1 << 30;

    private int receiveSlots = 128;
    private int messagesPerPoll = DEFAULT_MESSAGES_PER_POLL;
    private int eagerLimit = 4096;
    private int sendSlots = 128;
    private int rendezvousMinClass = 64 * 1024;
    private long rendezvousPoolBytes = 128L * 1024 * 1024;
    private long rendezvousMemoryBytes;
    private long rendezvousWriteTimeoutNanos = TimeUnit.SECONDS.toNanos(30);
    private boolean directWrite = true;
    private boolean announceAtClaim = announceAtClaimDefault();
    private int maxInboundMessageSize = 64 * 1024 * 1024;
    private int maxOutboundMessageSize = 64 * 1024 * 1024;
    private PollingMode pollingMode = PollingMode.ADAPTIVE;
    private int pollerCount = 1;
    private byte[] authToken;
    private int maxConnections = 4096;
    private int maxUnprovenPerPeer = 64;
    private Object meterRegistry;
    private VerbsConfig verbsConfig;
    private TlsConfig tls;
    private Consumer<Throwable> errorHandler;
    private long closeTimeoutNanos = TimeUnit.SECONDS.toNanos(10);
    private long adaptiveMinSpinNanos = TimeUnit.MICROSECONDS.toNanos(20);
    private long adaptiveMaxSpinNanos = TimeUnit.MICROSECONDS.toNanos(50);
    private long adaptiveYieldNanos = TimeUnit.MICROSECONDS.toNanos(300);
    private long pollerStallNanos = TimeUnit.MILLISECONDS.toNanos(100);
    private BooleanSupplier idleTask;
    private long idleTaskDelayNanos = TimeUnit.MICROSECONDS.toNanos(10);
    private String name = "reverb";
    private boolean concluded;

    /** @return receive slots per connection. */
    public int receiveSlots()
    {
        return receiveSlots;
    }

    /** @param n receive slots per connection, {@value #MIN_RECEIVE_SLOTS}..{@value #MAX_RECEIVE_SLOTS}. @return this. */
    public EngineConfig receiveSlots(final int n)
    {
        checkMutable();
        receiveSlots = n;
        return this;
    }

    /** @return messages one connection delivers per duty cycle of its poller. */
    public int messagesPerPoll()
    {
        return messagesPerPoll;
    }

    /**
     * How many messages one connection hands its handler per duty cycle before the poller turns to its other
     * connections (as Aeron's fragment limit per poll): the rest of a burst waits for the connection's next turn, in
     * order, its receives not yet re-posted (so the peer's credits also wait). Smaller is fairer between connections
     * that share a poller; larger amortises the cycle over more messages.
     *
     * @param n messages per poll, at least 1.
     * @return this.
     */
    public EngineConfig messagesPerPoll(final int n)
    {
        checkMutable();
        messagesPerPoll = n;
        return this;
    }

    /** @return largest payload sent eagerly. */
    public int eagerLimit()
    {
        return eagerLimit;
    }

    /**
     * @param bytes largest payload sent eagerly (receive slots are sized from it), 0..{@value #MAX_EAGER_LIMIT}.
     * @return this.
     */
    public EngineConfig eagerLimit(final int bytes)
    {
        checkMutable();
        eagerLimit = bytes;
        return this;
    }

    /** @return send ring capacity in maximal eager frames. */
    public int sendSlots()
    {
        return sendSlots;
    }

    /** @param n send ring capacity in maximal eager frames (&gt;= 2). @return this. */
    public EngineConfig sendSlots(final int n)
    {
        checkMutable();
        sendSlots = n;
        return this;
    }

    /** @return smallest rendezvous size class. */
    public int rendezvousMinClass()
    {
        return rendezvousMinClass;
    }

    /** @param bytes smallest rendezvous buffer; rounded up to a power of two. @return this. */
    public EngineConfig rendezvousMinClass(final int bytes)
    {
        checkMutable();
        rendezvousMinClass = bytes;
        return this;
    }

    /** @return registered rendezvous bytes per connection and direction. */
    public long rendezvousPoolBytes()
    {
        return rendezvousPoolBytes;
    }

    /**
     * @param bytes cap on registered rendezvous memory per connection and direction; buffers are
     *              allocated on demand and kept for reuse. Must hold one buffer of the largest class.
     * @return this.
     */
    public EngineConfig rendezvousPoolBytes(final long bytes)
    {
        checkMutable();
        rendezvousPoolBytes = bytes;
        return this;
    }

    /** @return registered rendezvous receive bytes of all connections together (the engine-wide budget). */
    public long rendezvousMemoryBytes()
    {
        return rendezvousMemoryBytes;
    }

    /**
     * The engine-wide budget of registered rendezvous receive memory: what all peers together can make this
     * engine register for messages they announce. Each connection also stays within
     * {@link #rendezvousPoolBytes(long)}. An announced message whose buffer can never fit either is refused at
     * once (the sender's message fails, the connection stays up); one that fits waits, without blocking the
     * poller, until buffers come back on any connection. Default (0): half of {@code Runtime.maxMemory()}
     * (which is also the JVM's default direct-memory limit), at least 64 MiB and at most 1 GiB.
     *
     * @param bytes the budget, or 0 for the default.
     * @return this.
     */
    public EngineConfig rendezvousMemoryBytes(final long bytes)
    {
        checkMutable();
        rendezvousMemoryBytes = bytes;
        return this;
    }

    /** @return how long a peer may hold a granted rendezvous buffer without writing it; 0: no limit. */
    public long rendezvousWriteTimeoutNanos()
    {
        return rendezvousWriteTimeoutNanos;
    }

    /**
     * A peer granted a rendezvous buffer (CTS) that has not written it this long is dropped (a protocol error): the
     * buffer and every other it holds return to the budget. A well-behaved sender writes at once, so the timeout
     * only has to cover the transfer of one message on a slow path. Checked whenever the connection's poller wakes
     * from a sleep (ADAPTIVE and EVENT polling; a BUSY poller never sleeps and does not check). Default 30 s.
     *
     * @param nanos the timeout, or 0 for none.
     * @return this.
     */
    public EngineConfig rendezvousWriteTimeoutNanos(final long nanos)
    {
        checkMutable();
        rendezvousWriteTimeoutNanos = nanos;
        return this;
    }

    /** @return whether large messages are written straight into the receiver's grant where the provider can map it. */
    public boolean directWrite()
    {
        return directWrite;
    }

    /**
     * Direct writes: on a provider that can map the peer's registered memory ({@code QueuePair.canMapRemote()}: shm),
     * a message above the eager limit is serialised by its sender straight into the buffer the receiver grants for
     * it, instead of into a buffer of this side's pool that the fabric then copies (one copy of the message fewer per
     * message; the claim waits for the grant: {@code tryClaim} returns {@code BACK_PRESSURED} until the CTS is in,
     * and the writable callback follows it). Providers without the capability (tcp, and rdma, where the NIC copies
     * without the CPU) ignore it. Default true; false measures or avoids it (an address's {@code ?directWrite=false}).
     *
     * @param enabled false to always copy through this side's pool.
     * @return this.
     */
    public EngineConfig directWrite(final boolean enabled)
    {
        checkMutable();
        directWrite = enabled;
        return this;
    }

    /** @return whether a large message copied through this side's pool is announced (RTS) at its claim. */
    public boolean announceAtClaim()
    {
        return announceAtClaim;
    }

    /**
     * Early announcement: a message above the eager limit that is copied through this side's pool (every provider
     * but shm's direct writes) sends its RTS when it is claimed rather than when it is committed, so that the RTS
     * to CTS round trip (and a sleeping receiver's wake-up) overlaps the serialisation of the message; its write
     * leaves at the commit if the CTS is in by then, else with the CTS. The wire protocol is the same: the receiver
     * checks the RTS against its limits and budget as before, and grants its buffer a serialisation earlier. A claim
     * aborted after its RTS sends ABORT once granted (the receiver returns the buffer); a REFUSE that comes before
     * the commit fails the message at its commit. A claimant must commit within the peer's
     * {@link #rendezvousWriteTimeoutNanos(long) write timeout} (30 s by default) of its grant, or the peer drops
     * the connection. Default true ({@code -Dreverb.rendezvous.announceAtClaim=false} changes the default, e.g. to
     * measure it).
     *
     * @param enabled false to send the RTS at the commit.
     * @return this.
     */
    public EngineConfig announceAtClaim(final boolean enabled)
    {
        checkMutable();
        announceAtClaim = enabled;
        return this;
    }

    private static boolean announceAtClaimDefault()
    {
        final String value = System.getProperty("reverb.rendezvous.announceAtClaim");
        if (value == null || value.isEmpty())
        {
            return true;
        }
        if ("true".equalsIgnoreCase(value) || "false".equalsIgnoreCase(value))
        {
            return Boolean.parseBoolean(value);
        }
        throw new IllegalArgumentException("-Dreverb.rendezvous.announceAtClaim must be true or false: " + value);
    }

    /** @return largest message accepted from a peer. */
    public int maxInboundMessageSize()
    {
        return maxInboundMessageSize;
    }

    /** @param bytes largest message accepted from a peer; larger ones are refused and fail at the sender. @return this. */
    public EngineConfig maxInboundMessageSize(final int bytes)
    {
        checkMutable();
        maxInboundMessageSize = bytes;
        return this;
    }

    /** @return largest message this side may claim. */
    public int maxOutboundMessageSize()
    {
        return maxOutboundMessageSize;
    }

    /** @param bytes largest message this side may claim. @return this. */
    public EngineConfig maxOutboundMessageSize(final int bytes)
    {
        checkMutable();
        maxOutboundMessageSize = bytes;
        return this;
    }

    /** @return polling mode. */
    public PollingMode pollingMode()
    {
        return pollingMode;
    }

    /** @param mode polling mode. @return this. */
    public EngineConfig pollingMode(final PollingMode mode)
    {
        checkMutable();
        pollingMode = mode;
        return this;
    }

    /** @return poller threads. */
    public int pollerCount()
    {
        return pollerCount;
    }

    /** @param n poller threads (&gt;= 1); connections are spread over them. @return this. */
    public EngineConfig pollerCount(final int n)
    {
        checkMutable();
        pollerCount = n;
        return this;
    }

    /** @return the token bytes (a copy), or null. */
    public byte[] authToken()
    {
        return authToken == null ? null : authToken.clone();
    }

    /** @param token shared secret (UTF-8), or null for none. @return this. */
    public EngineConfig authToken(final String token)
    {
        return authToken(token == null ? null : token.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * @param token shared secret, or null for none. It never travels: each side proves it holds it by an
     *              HMAC over fresh nonces of both sides (see the package doc). Use 128 random bits or more.
     * @return this.
     */
    public EngineConfig authToken(final byte[] token)
    {
        checkMutable();
        if (token != null && token.length == 0)
        {
            throw new IllegalArgumentException("authToken must not be empty (use null for none)");
        }
        authToken = token == null ? null : token.clone();
        return this;
    }

    /** @return open connections a listener of this engine accepts at most. */
    public int maxConnections()
    {
        return maxConnections;
    }

    /**
     * @param n open connections (accepted or connected) beyond which listeners refuse new ones, each with a
     *          reject that says so (the connector's error names the limit) and one rate-limited log line.
     * @return this.
     */
    public EngineConfig maxConnections(final int n)
    {
        checkMutable();
        maxConnections = n;
        return this;
    }

    /** @return connections of one peer host that may be accepted and still have to prove the token. */
    public int maxUnprovenPerPeer()
    {
        return maxUnprovenPerPeer;
    }

    /**
     * With an {@link #authToken(byte[]) authToken}: how many accepted connections of one peer host (an IPv4 address,
     * an IPv6 /64, one shm process) may still have to prove the token (until the proof or the handshake deadline).
     * More from that host are refused UNAVAILABLE ("too many unproven connections from host"), so that a peer without the
     * token cannot hold the {@link #maxConnections(int)} slots that clients with it need.
     *
     * @param n at least 1.
     * @return this.
     */
    public EngineConfig maxUnprovenPerPeer(final int n)
    {
        checkMutable();
        maxUnprovenPerPeer = n;
        return this;
    }

    /** @return the Micrometer registry, or null. */
    public Object meterRegistry()
    {
        return meterRegistry;
    }

    /**
     * @param registry an {@code io.micrometer.core.instrument.MeterRegistry}, or null. Typed as Object
     *                 so that the engine runs without Micrometer on the class path.
     * @return this.
     */
    public EngineConfig meterRegistry(final Object registry)
    {
        checkMutable();
        meterRegistry = registry;
        return this;
    }

    /** @return verbs provider settings. */
    public VerbsConfig verbsConfig()
    {
        return verbsConfig;
    }

    /** @param config verbs provider settings; default {@link VerbsConfig#defaults()}. @return this. */
    public EngineConfig verbsConfig(final VerbsConfig config)
    {
        checkMutable();
        verbsConfig = config;
        return this;
    }

    /** @return TLS for {@code tcp://} set by {@link #tls(TlsConfig)}, else the verbs config's, or null for none. */
    public TlsConfig tls()
    {
        return tls != null ? tls : verbsConfig == null ? null : verbsConfig.tls();
    }

    /**
     * @param config TLS for {@code tcp://} connections of this engine, in both roles (its listeners and its
     *               connects); overrides the {@linkplain #verbsConfig(VerbsConfig) verbs config}'s. Other schemes
     *               ignore it. Null: plaintext (unless the verbs config has TLS).
     * @return this.
     */
    public EngineConfig tls(final TlsConfig config)
    {
        checkMutable();
        tls = config;
        return this;
    }

    /** @return handler for errors that cannot be returned to a caller (refused handshakes, callback failures). */
    public Consumer<Throwable> errorHandler()
    {
        return errorHandler;
    }

    /** @param handler receives errors no caller can be told about; default logs them. @return this. */
    public EngineConfig errorHandler(final Consumer<Throwable> handler)
    {
        checkMutable();
        errorHandler = handler;
        return this;
    }

    /** @return how long a graceful close waits. */
    public long closeTimeoutNanos()
    {
        return closeTimeoutNanos;
    }

    /** @param nanos how long a graceful close waits before the connection is torn down. @return this. */
    public EngineConfig closeTimeoutNanos(final long nanos)
    {
        checkMutable();
        closeTimeoutNanos = nanos;
        return this;
    }

    /** @return ADAPTIVE: shortest spin before yielding. */
    public long adaptiveMinSpinNanos()
    {
        return adaptiveMinSpinNanos;
    }

    /** @return ADAPTIVE: longest spin before yielding. */
    public long adaptiveMaxSpinNanos()
    {
        return adaptiveMaxSpinNanos;
    }

    /** @return ADAPTIVE: time spent yielding after spinning, before arming and sleeping. */
    public long adaptiveYieldNanos()
    {
        return adaptiveYieldNanos;
    }

    /**
     * ADAPTIVE tuning: the spin budget is four times the recent mean gap between completions caught
     * while spinning, clamped to [min, max]; spinning stops while spins miss more often than they
     * catch (see {@link PollingMode#ADAPTIVE}); the idle period right after a poller was woken by work spins for the
     * max, so that it waits out its peer's wake-up (without it, one side's sleep made the other sleep, and the sleeps
     * chained from side to side). Defaults: 20 us, 50 us, 300 us. The yield phase is long because a sleep costs a
     * wake-up, on a virtual machine 100-500 us (the woken vCPU may have halted), and a yielding thread holds no core
     * another thread wants: with 10 us of yielding, ping-pongs whose peer was descheduled for a moment slept, and
     * ADAPTIVE's p99.9 was 2-38x BUSY's on 2 vCPUs, with 300 us 0.1-1.8x in 6 runs of 8
     * (benchmarks/results/20261202-2340-quiet/RESULTS.md). It costs CPU only between messages 60-350 us apart (client
     * and server in one process, measured: +46% CPU at 5,000 calls/s, with a p50 3x lower; +50% at 2,000 calls/s, where
     * the yield is wasted); an idle poller yields once, then sleeps until work comes. For the CPU back at such rates:
     * {@code adaptiveSpin(20 us, 50 us, 10 us)}, or EVENT. A longer minimum spins through longer hiccups of the
     * peer, but on an oversubscribed machine it holds the core the descheduled peer needs (50 us at load 11-15 on 2
     * vCPUs: 1.6x the CPU per round trip and 2-3x the p99; benchmarks/results/20261202-1615-tail/RESULTS.md). An idle
     * poller spins once, for the budget, then sleeps until work comes.
     *
     * @param minSpinNanos shortest spin.
     * @param maxSpinNanos longest spin.
     * @param yieldNanos   yielding after the spin, before sleeping.
     * @return this.
     */
    public EngineConfig adaptiveSpin(final long minSpinNanos, final long maxSpinNanos, final long yieldNanos)
    {
        checkMutable();
        adaptiveMinSpinNanos = minSpinNanos;
        adaptiveMaxSpinNanos = maxSpinNanos;
        adaptiveYieldNanos = yieldNanos;
        return this;
    }

    /**
     * A poller whose duty cycle runs longer than this (a handler blocking the poller thread freezes every
     * connection of that poller) is reported once per stall, with its stack, at most once per
     * {@link PollerWatchdog#REPORT_INTERVAL_NANOS} per poller. Default 100 ms; 0 turns the watchdog off.
     *
     * @param nanos threshold, &gt;= 0.
     * @return this.
     */
    public EngineConfig pollerStallThresholdNanos(final long nanos)
    {
        checkMutable();
        pollerStallNanos = nanos;
        return this;
    }

    /** @return see {@link #pollerStallThresholdNanos(long)}. */
    public long pollerStallThresholdNanos()
    {
        return pollerStallNanos;
    }

    /**
     * Work each poller thread runs after duty cycles that found nothing to do for {@link #idleTaskDelayNanos(long)}
     * (not in the few microseconds a rendezvous's clear-to-send takes), and at once in every duty cycle without work
     * while one of its connections has granted a rendezvous whose data has not arrived (the peer is still writing
     * the message, tens of microseconds or more for a large one), before it spins, yields or parks as its polling
     * mode says: it must be short and bounded (the next duty cycle waits for it) and must not block. It does not
     * count as work: the polling mode spins, yields and parks on the same clock as without it.
     * rpc-core's transports set {@code ProtoMarshaller::prepareIdle} (large messages' arrays allocated ahead of time)
     * unless one is set here. Default: none.
     *
     * @param task returns true if it did something; null for none.
     * @return this.
     */
    public EngineConfig idleTask(final BooleanSupplier task)
    {
        checkMutable();
        idleTask = task;
        return this;
    }

    /** @return see {@link #idleTask(BooleanSupplier)}; null if none. */
    public BooleanSupplier idleTask()
    {
        return idleTask;
    }

    /**
     * How long a poller finds no work before it runs its {@link #idleTask(BooleanSupplier) idle task}, unless it
     * awaits the data of a rendezvous it granted (then at once). Default 10 µs: shorter, a poller waiting a few
     * microseconds for the clear-to-send of its own large message would start the task and delay that message.
     *
     * @param nanos the delay, >= 0.
     * @return this.
     */
    public EngineConfig idleTaskDelayNanos(final long nanos)
    {
        checkMutable();
        idleTaskDelayNanos = nanos;
        return this;
    }

    /** @return see {@link #idleTaskDelayNanos(long)}. */
    public long idleTaskDelayNanos()
    {
        return idleTaskDelayNanos;
    }

    /** @return name used for threads and metric tags. */
    public String name()
    {
        return name;
    }

    /** @param name used for thread names and the {@code engine} metric tag. @return this. */
    public EngineConfig name(final String name)
    {
        checkMutable();
        this.name = name;
        return this;
    }

    /** @return largest rendezvous size class: the larger message limit rounded up to a power of two. */
    public int rendezvousMaxClass()
    {
        final int largest = Math.max(Math.max(maxInboundMessageSize, maxOutboundMessageSize), rendezvousMinClass);
        return sizeClassFor(largest);
    }

    /** @return bytes of one receive slot. */
    public int receiveSlotLength()
    {
        return Wire.receiveSlotLength(eagerLimit);
    }

    /**
     * @return bytes one connection registers (pins) for eager traffic whatever it sends: its send ring, its
     *         receive slots and its control slots (rendezvous buffers come on top, lazily, within
     *         {@link #rendezvousPoolBytes()} and {@link #rendezvousMemoryBytes()}).
     */
    public long eagerRegisteredBytesPerConnection()
    {
        return (long)sendSlots * Wire.dataFrameLength(eagerLimit) + (long)receiveSlots * receiveSlotLength() +
            (long)(receiveSlots + 1) * Wire.CONTROL_SLOT_LENGTH + 16 + 64;
    }

    /** @return true once {@link #conclude()} ran. */
    public boolean isConcluded()
    {
        return concluded;
    }

    /**
     * Validates every setting and fills defaults. Idempotent; the config cannot be changed afterwards.
     *
     * @return this.
     * @throws IllegalArgumentException naming the first invalid setting.
     */
    public EngineConfig conclude()
    {
        if (concluded)
        {
            return this;
        }
        require(messagesPerPoll >= 1, "messagesPerPoll must be at least 1: " + messagesPerPoll);
        require(receiveSlots >= MIN_RECEIVE_SLOTS && receiveSlots <= MAX_RECEIVE_SLOTS,
            "receiveSlots must be in " + MIN_RECEIVE_SLOTS + ".." + MAX_RECEIVE_SLOTS + ": " + receiveSlots);
        require(eagerLimit >= 0 && eagerLimit <= MAX_EAGER_LIMIT,
            "eagerLimit must be in 0.." + MAX_EAGER_LIMIT + ": " + eagerLimit);
        require(sendSlots >= 2, "sendSlots must be >= 2: " + sendSlots);
        require((long)sendSlots * Wire.dataFrameLength(eagerLimit) <= Integer.MAX_VALUE / 2,
            "sendSlots * eagerLimit too large");
        require(maxInboundMessageSize >= 0 && maxInboundMessageSize <= MAX_SIZE_CLASS,
            "maxInboundMessageSize must be in 0.." + MAX_SIZE_CLASS + ": " + maxInboundMessageSize);
        require(maxOutboundMessageSize >= 0 && maxOutboundMessageSize <= MAX_SIZE_CLASS,
            "maxOutboundMessageSize must be in 0.." + MAX_SIZE_CLASS + ": " + maxOutboundMessageSize);
        require(rendezvousMinClass > 0 && rendezvousMinClass <= MAX_SIZE_CLASS,
            "rendezvousMinClass must be in 1.." + MAX_SIZE_CLASS + ": " + rendezvousMinClass);
        rendezvousMinClass = sizeClassFor(Math.max(rendezvousMinClass, eagerLimit + 1));
        require(rendezvousPoolBytes >= rendezvousMaxClass(),
            "rendezvousPoolBytes (" + rendezvousPoolBytes + ") must hold one buffer of the largest size class (" +
            rendezvousMaxClass() + " bytes, from the message size limits)");
        require(rendezvousWriteTimeoutNanos >= 0, "rendezvousWriteTimeoutNanos must be >= 0: " + rendezvousWriteTimeoutNanos);
        require(rendezvousMemoryBytes >= 0, "rendezvousMemoryBytes must be >= 0 (0: the default): " + rendezvousMemoryBytes);
        if (rendezvousMemoryBytes == 0)
        {
            rendezvousMemoryBytes = Math.max(64L << 20, Math.min(1L << 30, Runtime.getRuntime().maxMemory() / 2));
        }
        require(rendezvousMemoryBytes >= rendezvousMinClass,
            "rendezvousMemoryBytes (" + rendezvousMemoryBytes + ") must hold one buffer of the smallest size class (" +
            rendezvousMinClass + " bytes)");
        require(pollingMode != null, "pollingMode must not be null");
        require(maxConnections >= 1, "maxConnections must be >= 1: " + maxConnections);
        require(maxUnprovenPerPeer >= 1, "maxUnprovenPerPeer must be >= 1: " + maxUnprovenPerPeer);
        require(pollerCount >= 1 && pollerCount <= 64, "pollerCount must be in 1..64: " + pollerCount);
        require(pollerStallNanos >= 0, "pollerStallThresholdNanos must be >= 0: " + pollerStallNanos);
        require(idleTaskDelayNanos >= 0, "idleTaskDelayNanos must be >= 0: " + idleTaskDelayNanos);
        require(closeTimeoutNanos > 0, "closeTimeoutNanos must be > 0");
        require(adaptiveMinSpinNanos >= 0 && adaptiveMaxSpinNanos >= adaptiveMinSpinNanos && adaptiveYieldNanos >= 0,
            "adaptive spin settings must satisfy 0 <= min <= max and yield >= 0");
        require(name != null && !name.isEmpty(), "name must not be empty");
        if (meterRegistry != null && !isMeterRegistry(meterRegistry))
        {
            throw new IllegalArgumentException("meterRegistry must be an io.micrometer.core.instrument.MeterRegistry: " +
                meterRegistry.getClass().getName());
        }
        if (verbsConfig == null)
        {
            verbsConfig = VerbsConfig.defaults();
        }
        if (tls != null)
        {
            verbsConfig = verbsConfig.withTls(tls);
        }
        if (errorHandler == null)
        {
            errorHandler = new ErrorLog();
        }
        concluded = true;
        return this;
    }

    static int sizeClassFor(final int length)
    {
        if (length <= 1)
        {
            return 1;
        }
        final int highest = Integer.highestOneBit(length - 1) << 1;
        return highest <= 0 ? Integer.MIN_VALUE : highest;
    }

    private static boolean isMeterRegistry(final Object registry)
    {
        try
        {
            final Class<?> type = Class.forName(
                "io.micrometer.core.instrument.MeterRegistry", false, EngineConfig.class.getClassLoader());
            return type.isInstance(registry);
        }
        catch (final ClassNotFoundException ex)
        {
            return false;
        }
    }

    private static void require(final boolean condition, final String message)
    {
        if (!condition)
        {
            throw new IllegalArgumentException(message);
        }
    }

    private void checkMutable()
    {
        if (concluded)
        {
            throw new IllegalStateException("EngineConfig is concluded (in use by an engine) and cannot change");
        }
    }

    /**
     * A mutable copy of every setting (a concluded config's copy is not concluded), so that one field can be
     * overridden, e.g. by an address's {@code ?polling=} parameter, without dropping the others.
     *
     * @return the copy.
     */
    public EngineConfig copy()
    {
        final EngineConfig copy = new EngineConfig();
        copy.receiveSlots = receiveSlots;
        copy.messagesPerPoll = messagesPerPoll;
        copy.eagerLimit = eagerLimit;
        copy.sendSlots = sendSlots;
        copy.rendezvousMinClass = rendezvousMinClass;
        copy.rendezvousPoolBytes = rendezvousPoolBytes;
        copy.rendezvousMemoryBytes = rendezvousMemoryBytes;
        copy.rendezvousWriteTimeoutNanos = rendezvousWriteTimeoutNanos;
        copy.directWrite = directWrite;
        copy.announceAtClaim = announceAtClaim;
        copy.maxInboundMessageSize = maxInboundMessageSize;
        copy.maxOutboundMessageSize = maxOutboundMessageSize;
        copy.pollingMode = pollingMode;
        copy.pollerCount = pollerCount;
        copy.authToken = authToken == null ? null : authToken.clone();
        copy.maxConnections = maxConnections;
        copy.maxUnprovenPerPeer = maxUnprovenPerPeer;
        copy.meterRegistry = meterRegistry;
        copy.verbsConfig = verbsConfig;
        copy.tls = tls;
        copy.errorHandler = errorHandler;
        copy.closeTimeoutNanos = closeTimeoutNanos;
        copy.adaptiveMinSpinNanos = adaptiveMinSpinNanos;
        copy.adaptiveMaxSpinNanos = adaptiveMaxSpinNanos;
        copy.adaptiveYieldNanos = adaptiveYieldNanos;
        copy.pollerStallNanos = pollerStallNanos;
        copy.idleTask = idleTask;
        copy.idleTaskDelayNanos = idleTaskDelayNanos;
        copy.name = name;
        return copy;
    }

    @Override
    public String toString()
    {
        return "EngineConfig{receiveSlots=" + receiveSlots + ", eagerLimit=" + eagerLimit + ", sendSlots=" + sendSlots +
            ", rendezvousMinClass=" + rendezvousMinClass + ", rendezvousPoolBytes=" + rendezvousPoolBytes +
            ", rendezvousMemoryBytes=" + rendezvousMemoryBytes + ", directWrite=" + directWrite +
            ", announceAtClaim=" + announceAtClaim +
            ", maxInboundMessageSize=" + maxInboundMessageSize + ", maxOutboundMessageSize=" + maxOutboundMessageSize +
            ", pollingMode=" + pollingMode + ", pollerCount=" + pollerCount +
            ", authToken=" + (authToken == null ? "none" : "set(" + authToken.length + " bytes)") +
            ", meterRegistry=" + (meterRegistry == null ? "none" : meterRegistry.getClass().getSimpleName()) +
            ", tls=" + (tls == null ? "none" : tls) + ", verbsConfig=" + verbsConfig + '}';
    }
}
