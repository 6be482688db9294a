package io.reverb.rdma.engine;

import io.reverb.common.counters.CounterGroup;
import io.reverb.common.counters.CountersLayout;
import io.reverb.common.counters.ProcessCounters;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionChannel;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionRejectedException;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.VerbsProvider;
import io.reverb.rdma.verbs.VerbsProviders;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.ToLongFunction;

/**
 * The connection engine: one verbs context, a group of completion pollers, listeners and
 * connections. Thread-safe.
 *
 * <pre>{@code
 * RdmaEngine engine = RdmaEngine.open("shm", new EngineConfig().pollingMode(PollingMode.ADAPTIVE));
 * engine.listen("echo", c -> c.setHandler((buf, off, len) -> ...));
 * Connection c = engine.connect("echo");
 * WriteClaim claim = new WriteClaim(); // rpc-core's transport claim
 * if (c.tryClaim(64, claim) == Connection.OK) { claim.buffer().putLong(claim.offset(), 42); claim.commit(); }
 * }</pre>
 *
 * <p>Every connection has its own protection domain, so a peer can only reach the memory of its
 * own connection (receive slots are not remotely accessible at all; rendezvous buffers only
 * through the rkeys granted to it).
 */
public final class RdmaEngine implements AutoCloseable
{
    private final EngineConfig config;
    private final VerbsContext context;
    private final Poller[] pollers;
    /** The shared secret, or null; it never leaves this process (see Handshake). */
    private final byte[] token;
    private final SecureRandom random = new SecureRandom();
    private final CopyOnWriteArrayList<EngineConnection> connections = new CopyOnWriteArrayList<>();
    private final UnprovenPeers unproven;
    private final CopyOnWriteArrayList<EngineListener> listeners = new CopyOnWriteArrayList<>();
    /** This process's counters file, the engine's counters in it, and its pollers'. */
    private final ProcessCounters counters;
    private final CounterGroup engineCounters;
    private final CounterGroup[] pollerCounters;
    /** The fabric's URI scheme (shm, tcp, rdma), for the counters' labels. */
    private final String fabric;
    /** Totals of the closed connections (in the engine's counters; open ones have their own). */
    private final ConnectionStats retiredStats;
    private volatile boolean closed;
    private MetricsBinding metricsBinding;
    private final AtomicLong connectionNumbers = new AtomicLong();
    private final PollerWatchdog watchdog;
    private final RendezvousBudget rendezvousBudget;
    /** Registers rendezvous receive buffers, so that no poller waits for memory (issue 13, item 3). */
    private final ExecutorService rendezvousAllocator;

    private RdmaEngine(final VerbsProvider provider, final EngineConfig config) throws IOException
    {
        this.config = config.conclude();
        this.fabric = provider.scheme();
        this.counters = ProcessCounters.acquire();
        this.engineCounters = counters.newGroup(CountersLayout.KIND_ENGINE, this.config.name() + " " + fabric, 0);
        this.retiredStats = new ConnectionStats(engineCounters, "closed connections: ");
        this.pollerCounters = new CounterGroup[config.pollerCount()];
        try
        {
            this.context = provider.open(config.verbsConfig());
        }
        catch (final IOException | RuntimeException ex)
        {
            engineCounters.close();
            counters.release();
            throw ex;
        }
        this.token = config.authToken();
        this.unproven = new UnprovenPeers(this.config.maxUnprovenPerPeer());
        this.pollers = new Poller[config.pollerCount()];
        this.rendezvousBudget = new RendezvousBudget(this.config.rendezvousMemoryBytes());
        final String allocatorName = this.config.name() + "-rendezvous-allocator";
        this.rendezvousAllocator = Executors.newSingleThreadExecutor(task ->
        {
            final Thread thread = new Thread(task, allocatorName);
            thread.setDaemon(true);
            return thread;
        });
        try
        {
            for (int i = 0; i < pollers.length; i++)
            {
                final CompletionChannel channel = context.createCompletionChannel();
                pollerCounters[i] = counters.newGroup(CountersLayout.KIND_POLLER, this.config.name() + " poller " + i,
                    engineCounters.id());
                pollers[i] = new Poller(this, channel, i, pollerCounters[i]);
            }
        }
        catch (final IOException | RuntimeException ex)
        {
            context.close();
            closeCounters();
            throw ex;
        }
        engineCounters.gauge("connections open", () -> connections.size());
        engineCounters.gauge("rendezvous memory reserved bytes", this::rendezvousMemoryReserved);
        engineCounters.gauge("rendezvous memory limit bytes", () -> this.config.rendezvousMemoryBytes());
        for (final Poller poller : pollers)
        {
            poller.start();
        }
        if (this.config.pollerStallThresholdNanos() > 0)
        {
            watchdog = new PollerWatchdog(this.config.name(), pollers, this.config.pollerStallThresholdNanos());
            watchdog.start();
        }
        else
        {
            watchdog = null;
        }
        if (config.meterRegistry() != null)
        {
            metricsBinding = EngineMetrics.bind(config.meterRegistry(), this);
        }
    }

    /**
     * @param provider verbs provider.
     * @param config   settings (concluded here).
     * @return a running engine.
     * @throws IOException if the provider cannot open a context.
     */
    public static RdmaEngine open(final VerbsProvider provider, final EngineConfig config) throws IOException
    {
        JvmAccessCheck.requireAgronaAccess();
        return new RdmaEngine(Objects.requireNonNull(provider, "provider"), Objects.requireNonNull(config, "config"));
    }

    /**
     * @param scheme verbs provider scheme, e.g. {@code "shm"}.
     * @param config settings (concluded here).
     * @return a running engine.
     * @throws IOException if the provider cannot open a context.
     * @throws IllegalArgumentException if no provider serves the scheme here (the message says why).
     */
    public static RdmaEngine open(final String scheme, final EngineConfig config) throws IOException
    {
        return open(VerbsProviders.forScheme(scheme), config);
    }

    /** @return the concluded config. */
    public EngineConfig config()
    {
        return config;
    }

    /** @return the verbs context (for diagnostics). */
    public VerbsContext context()
    {
        return context;
    }

    /**
     * Listens on an address; each accepted connection is passed to {@code onAccept} on the
     * listener's own thread, before any of its messages is processed: set its handler there.
     *
     * @param address  provider address (a name for shm).
     * @param onAccept receives each new connection.
     * @return the listener.
     * @throws IOException if the address cannot be bound.
     */
    public EngineListener listen(final String address, final Consumer<Connection> onAccept) throws IOException
    {
        ensureOpen();
        final EngineListener listener = new EngineListener(this, context.listen(address, 128), onAccept);
        listeners.add(listener);
        listener.start();
        return listener;
    }

    /**
     * Connects, blocking for at most the verbs connect timeout (twice: establishment, then the
     * acceptor's ready signal). Receiving starts when the connection's handler is set.
     *
     * @param address the listener's address.
     * @return the connection.
     * @throws HandshakeException if the peer refused (wrong token, version, geometry).
     * @throws IOException on timeout or fabric errors.
     */
    public Connection connect(final String address) throws IOException
    {
        ensureOpen();
        final EngineConnection connection = open(false, EngineConfig.MAX_RECEIVE_SLOTS, (c, attributes, ready) ->
        {
            final QueuePair qp;
            final ByteBuffer request = Handshake.encodeRequest(
                config, token == null ? null : nonce(), ready.address(), ready.rkey(), Handshake.VERSION);
            try
            {
                qp = context.connect(address, attributes, request.duplicate());
            }
            catch (final ConnectionRejectedException ex)
            {
                throw Handshake.fromReject(ex.privateData(), address);
            }
            final Handshake.Hello peer = Handshake.decode(qp.remotePrivateData());
            final HandshakeException refusal = checkAccept(peer, address);
            if (refusal != null)
            {
                qp.close();
                throw refusal;
            }
            if (token != null)
            {
                // Nothing is sent to an acceptor that has not proven it holds the token.
                final HandshakeException unproven = Handshake.verifyAccept(token, request, qp.remotePrivateData(), address);
                if (unproven != null)
                {
                    qp.close();
                    throw unproven;
                }
            }
            c.attach(qp, peer);
            if (token != null)
            {
                final long[] proof = Handshake.proofWords(Handshake.connectorProof(token, request, qp.remotePrivateData()));
                c.sendAuthProof(proof[0], proof[1]);
            }
            c.awaitReady(config.verbsConfig().connectTimeoutNanos());
        }, c ->
        {
            c.publishCounters(); // the acceptor proved itself (or no token is set): before anything is polled
            c.poller.add(c);
            c.sendInitialCredits();
        });
        return connection;
    }

    /** @return why the acceptor's answer is unacceptable, or null if it is a Reverb accept this side can use. */
    private static HandshakeException checkAccept(final Handshake.Hello peer, final String address)
    {
        if (peer == null || peer.magic != Handshake.MAGIC)
        {
            return new HandshakeException(HandshakeException.Reason.PROTOCOL,
                "connection to " + address + " answered without a Reverb accept: is a Reverb engine listening there?");
        }
        if (peer.version != Handshake.VERSION)
        {
            return new HandshakeException(HandshakeException.Reason.VERSION, "connection to " + address +
                ": the peer speaks engine protocol v" + peer.version + ", this side v" + Handshake.VERSION +
                "; run the same Reverb version on both sides");
        }
        final String geometry = Handshake.checkGeometry(peer);
        if (geometry != null)
        {
            return new HandshakeException(HandshakeException.Reason.GEOMETRY, "connection to " + address +
                ": the peer announced an " + geometry);
        }
        return null;
    }

    /** Creates the QP of a connection being opened and completes its handshake. */
    @FunctionalInterface
    private interface Handshaker
    {
        void handshake(EngineConnection connection, QueuePairAttributes attributes, MemoryRegion ready) throws IOException;
    }

    /** Runs once the connection is registered with the engine. */
    @FunctionalInterface
    private interface OnOpened
    {
        void opened(EngineConnection connection) throws IOException;
    }

    /**
     * Opens one side of a connection: a PD, two CQs on the least loaded poller, the connection and its QP
     * attributes; on any failure everything allocated is closed again.
     *
     * @param acceptor         which side
     * @param peerReceiveSlots the peer's receive slots, or the most it may have (the connector does not know yet)
     */
    private EngineConnection open(
        final boolean acceptor, final int peerReceiveSlots, final Handshaker handshaker, final OnOpened onOpened)
        throws IOException
    {
        final Poller poller = leastLoadedPoller();
        final ProtectionDomain pd = context.allocPd();
        EngineConnection connection = null;
        CompletionQueue sendCq = null;
        CompletionQueue recvCq = null;
        try
        {
            sendCq = context.createCq(peerReceiveSlots + 8, poller.channel());
            recvCq = context.createCq(config.receiveSlots() + 8, poller.channel());
            // The connector learns that the acceptor's receives are posted from a one-sided write into this.
            final MemoryRegion ready = acceptor ? null : pd.allocate(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            connection = new EngineConnection(this, poller, acceptor, pd, sendCq, recvCq, ready);
            final EngineConnection c = connection;
            final QueuePairAttributes attributes = new QueuePairAttributes()
                .pd(pd).sendCq(sendCq).recvCq(recvCq)
                .maxSendWr(peerReceiveSlots + 4)
                .maxRecvWr(config.receiveSlots())
                .maxSge(2)
                .disconnectHandler(c::onProviderDisconnect);
            handshaker.handshake(connection, attributes, ready);
            connections.add(connection);
            onOpened.opened(connection);
            return connection;
        }
        catch (final IOException | RuntimeException ex)
        {
            if (connection != null)
            {
                connection.abandon();
            }
            else
            {
                if (sendCq != null)
                {
                    sendCq.close();
                }
                if (recvCq != null)
                {
                    recvCq.close();
                }
                pd.close();
            }
            throw ex;
        }
    }

    /**
     * {@link #connect(String)} on a new thread.
     *
     * @param address the listener's address.
     * @return completes with the connection or the failure.
     */
    public CompletableFuture<Connection> connectAsync(final String address)
    {
        final CompletableFuture<Connection> future = new CompletableFuture<>();
        final Thread thread = new Thread(() ->
        {
            try
            {
                future.complete(connect(address));
            }
            catch (final Throwable t)
            {
                future.completeExceptionally(t);
            }
        }, config.name() + "-connect-" + address);
        thread.setDaemon(true);
        thread.start();
        return future;
    }

    /**
     * Acceptor side of the handshake; called on a listener thread.
     *
     * @param request  the connection request.
     * @param outcome  told when an authenticating connection is admitted or refused (then the connection
     *                 has its {@link EngineConnection#authGate} set and must be polled to be decided).
     * @return the connection (not yet polled), or null if refused.
     */
    EngineConnection accept(final ConnectionRequest request, final AuthGate.Outcome outcome)
        throws IOException
    {
        final String remote = request.remoteAddress();
        final ByteBuffer requestData = request.privateData();
        final HandshakeException refusal = Handshake.validateRequest(requestData, config, token, remote);
        if (refusal != null)
        {
            request.reject(Handshake.encodeReject(refusal.reason(), Handshake.shortText(refusal)));
            onError(refusal);
            return null;
        }
        if (closed)
        {
            request.reject(Handshake.encodeReject(HandshakeException.Reason.UNAVAILABLE, "engine closing"));
            return null;
        }
        if (connections.size() >= config.maxConnections())
        {
            final HandshakeException full = new HandshakeException(HandshakeException.Reason.UNAVAILABLE,
                "refused connection from " + remote + ": this engine has " + config.maxConnections() +
                " connections open, its maxConnections");
            request.reject(Handshake.encodeReject(HandshakeException.Reason.UNAVAILABLE,
                "connection limit reached (" + config.maxConnections() + ")"));
            onError(full);
            return null;
        }
        final String host = UnprovenPeers.hostOf(remote);
        if (token != null && !unproven.reserve(host))
        {
            final HandshakeException busy = new HandshakeException(HandshakeException.Reason.UNAVAILABLE,
                "refused connection from " + remote + ": " + config.maxUnprovenPerPeer() + " connections from " + host +
                " are still to prove the authentication token (EngineConfig.maxUnprovenPerPeer)");
            request.reject(Handshake.encodeReject(HandshakeException.Reason.UNAVAILABLE,
                "too many unproven connections from host (" + config.maxUnprovenPerPeer() + ")"));
            onError(busy);
            return null;
        }
        // the count is given back exactly once: when the gate decides (it decides once), or here if none was made
        final AuthGate.Outcome counted = token == null ? outcome : new AuthGate.Outcome()
        {
            @Override
            public void admitted(final EngineConnection connection)
            {
                unproven.release(host);
                outcome.admitted(connection);
            }

            @Override
            public void refused(final EngineConnection connection, final HandshakeException why)
            {
                unproven.release(host);
                outcome.refused(connection, why);
            }
        };
        final Handshake.Hello peer = Handshake.decode(requestData);
        try
        {
            return open(true, peer.receiveSlots, (c, attributes, ready) ->
            {
                final ByteBuffer acceptData = Handshake.encodeAccept(config, requestData, token,
                    token == null ? null : nonce());
                if (token != null)
                {
                    // Set before any receive is posted: the first batch meets the gate.
                    c.authGate = new AuthGate(Handshake.connectorProof(token, requestData, acceptData),
                        System.nanoTime() + config.verbsConfig().handshakeTimeoutNanos(), remote, counted);
                }
                final QueuePair qp = request.accept(attributes, acceptData);
                c.attach(qp, peer);
                c.postReadyWrite(peer.readyAddress, peer.readyRkey);
            }, c ->
            {
            });
        }
        catch (final IOException | RuntimeException ex)
        {
            if (token != null)
            {
                unproven.release(host); // no gate can decide a connection that was never returned
            }
            throw ex;
        }
    }

    /** @return accepted connections still to prove the token, all peers together (tests). */
    int unprovenConnections()
    {
        return unproven.size();
    }

    private byte[] nonce()
    {
        final byte[] nonce = new byte[Handshake.NONCE_LENGTH];
        random.nextBytes(nonce);
        return nonce;
    }

    void startPolling(final EngineConnection connection)
    {
        connection.poller.add(connection);
    }

    private Poller leastLoadedPoller()
    {
        Poller best = pollers[0];
        for (final Poller poller : pollers)
        {
            if (poller.connectionCount() < best.connectionCount())
            {
                best = poller;
            }
        }
        return best;
    }

    RendezvousBudget rendezvousBudget()
    {
        return rendezvousBudget;
    }

    ExecutorService rendezvousAllocator()
    {
        return rendezvousAllocator;
    }

    /**
     * @return registered rendezvous receive bytes, summed over every connection (allocated or being allocated,
     * in use or idle); at most {@link EngineConfig#rendezvousMemoryBytes()}.
     */
    public long rendezvousMemoryReserved()
    {
        return rendezvousBudget.reservedBytes();
    }

    /** @return the most rendezvous receive bytes ever registered at once. */
    public long rendezvousMemoryPeak()
    {
        return rendezvousBudget.peakBytes();
    }

    /** A connection is closed: keep its counters in the engine totals. */
    void retire(final EngineConnection connection)
    {
        final boolean removed;
        // one step under the totals' lock: stats() never sees the connection in neither place (counted nowhere)
        synchronized (retiredStats)
        {
            removed = connections.remove(connection);
            if (removed)
            {
                retiredStats.add(connection.statsRef());
            }
        }
        if (removed)
        {
            connection.releaseCounters(); // and its meters
        }
    }

    /** A connection's peer is admitted ({@link EngineConnection#publishCounters()}): its meters, if a registry is set. */
    void bindConnectionMetrics(final EngineConnection connection)
    {
        final MetricsBinding metrics = metricsBinding;
        if (metrics != null)
        {
            metrics.bindConnection(connection, connection.number());
        }
    }

    /** A connection whose meters were bound is gone ({@link EngineConnection#releaseCounters()}). */
    void unbindConnectionMetrics(final EngineConnection connection)
    {
        final MetricsBinding metrics = metricsBinding;
        if (metrics != null)
        {
            metrics.unbindConnection(connection);
        }
    }

    void removeListener(final EngineListener listener)
    {
        listeners.remove(listener);
    }

    void onError(final Throwable t)
    {
        try
        {
            config.errorHandler().accept(t);
        }
        catch (final Throwable ignore)
        {
            // An error handler that throws has nowhere left to report to.
        }
    }

    /** @return counters summed over every connection, open or closed. */
    public ConnectionStats stats()
    {
        final ConnectionStats total = new ConnectionStats();
        // under the lock retire() moves a connection from the open ones to the totals with: each counted once
        synchronized (retiredStats)
        {
            total.add(retiredStats);
            for (final EngineConnection connection : connections)
            {
                total.add(connection.statsRef());
            }
        }
        return total;
    }

    /** @return open connections (a snapshot). */
    public List<Connection> connections()
    {
        return new ArrayList<>(connections);
    }

    /** @return rendezvous pool buffers in use over all open connections. */
    public int poolBuffersInUse()
    {
        return (int)sum(EngineConnection::poolBuffersInUse);
    }

    long poolBytesInUse()
    {
        return sum(EngineConnection::poolBytesInUse);
    }

    long poolBytesAllocated()
    {
        return sum(EngineConnection::poolBytesAllocated);
    }

    long queuedRendezvousRequests()
    {
        return sum(EngineConnection::queuedRendezvousRequests);
    }

    /** Metrics, not the data path: sums a gauge over the open connections. */
    private long sum(final ToLongFunction<EngineConnection> gauge)
    {
        long n = 0;
        for (final EngineConnection connection : connections)
        {
            n += gauge.applyAsLong(connection);
        }
        return n;
    }

    /** @param i poller index. @return that poller (tests). */
    Poller poller(final int i)
    {
        return pollers[i];
    }

    /** @return the pollers' watchdog, or null if it is off (tests). */
    PollerWatchdog watchdog()
    {
        return watchdog;
    }

    /** @return poller duty cycles found running longer than the stall threshold (0 if the watchdog is off). */
    public long pollerStalls()
    {
        return watchdog == null ? 0 : watchdog.stallsDetected();
    }

    /** @return number of poller threads. */
    public int pollerCount()
    {
        return pollers.length;
    }

    /** @param i poller index. @return duty cycles run. */
    public long pollerPolls(final int i)
    {
        return pollers[i].polls.get();
    }

    /** @param i poller index. @return duty cycles that found nothing. */
    public long pollerEmptyPolls(final int i)
    {
        return pollers[i].emptyPolls.get();
    }

    /** @param i poller index. @return times the poller was woken by a completion event after blocking. */
    public long pollerWakeups(final int i)
    {
        return pollers[i].wakeups.get();
    }

    /** @param i poller index. @return times the poller blocked on its completion channel. */
    public long pollerSleeps(final int i)
    {
        return pollers[i].sleeps.get();
    }

    /** @param i poller index. @return duty cycles the watchdog saw overrun its threshold. */
    public long pollerStalls(final int i)
    {
        return pollers[i].stalls.get();
    }

    /** @param i poller index. @return its thread (e.g. for CPU time measurements). */
    public Thread pollerThread(final int i)
    {
        return pollers[i].thread();
    }

    private void ensureOpen()
    {
        if (closed)
        {
            throw new IllegalStateException("engine is closed");
        }
    }

    /** @return true once {@link #close()} has begun (the engine takes no new listener or connection). */
    public boolean isClosed()
    {
        return closed;
    }

    /**
     * Closes listeners, closes every connection gracefully (bounded by the close timeout), stops
     * the pollers and closes the verbs context. Idempotent.
     */
    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        for (final EngineListener listener : listeners)
        {
            listener.close();
        }
        final List<CompletableFuture<Void>> closing = new ArrayList<>();
        for (final EngineConnection connection : connections)
        {
            closing.add(connection.closeAsync());
        }
        try
        {
            CompletableFuture.allOf(closing.toArray(new CompletableFuture[0]))
                .get(config.closeTimeoutNanos() + 1_000_000_000L, TimeUnit.NANOSECONDS);
        }
        catch (final Exception ignore)
        {
            // Failed closes were reported to their callbacks.
        }
        if (watchdog != null)
        {
            watchdog.stop();
        }
        for (final Poller poller : pollers)
        {
            poller.stop();
        }
        for (final Poller poller : pollers)
        {
            try
            {
                poller.join(5_000);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }
        if (metricsBinding != null)
        {
            try
            {
                metricsBinding.close();
            }
            catch (final Exception ignore)
            {
                // Best effort.
            }
        }
        for (final Poller poller : pollers)
        {
            poller.channel().close();
        }
        rendezvousAllocator.shutdown();
        try
        {
            // An allocation under way registers memory in the context: let it finish (its pool frees it).
            rendezvousAllocator.awaitTermination(5, TimeUnit.SECONDS);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
        context.close();
        closeCounters();
    }

    private void closeCounters()
    {
        for (final CounterGroup group : pollerCounters)
        {
            if (group != null)
            {
                group.close();
            }
        }
        engineCounters.close();
        counters.release();
    }

    /** @return the process's counters file this engine writes into. */
    ProcessCounters counters()
    {
        return counters;
    }

    /** @return the engine's counters group (the parent of its connections' and pollers'). */
    CounterGroup engineCounters()
    {
        return engineCounters;
    }

    /** @return the fabric's URI scheme. */
    String fabric()
    {
        return fabric;
    }

    /** @return a number for a new connection, unique in this engine. */
    long nextConnectionNumber()
    {
        return connectionNumbers.incrementAndGet();
    }
}
