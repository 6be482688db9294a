package io.reverb.rdma.engine;

import io.reverb.common.counters.CounterGroup;
import io.reverb.common.counters.CountersLayout;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.common.WriteClaim;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import javax.net.ssl.SSLSession;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The engine's connection over one RC QP: its lifecycle (set-up, polling duty cycle, attention) and the close
 * state machine. The two directions live apart, as Aeron keeps {@code NetworkPublication} and
 * {@code PublicationImage} apart:
 * <ul>
 *   <li>{@link ConnectionSender}: the {@link SendRing} (claim, commit, batching), the {@link CreditWindow},
 *       the {@link ControlQueue}, and the {@link RendezvousSender} (claims above the eager limit, direct writes, CTS
 *       and REFUSE) with the {@link OutboundRendezvous} (RTS awaiting CTS, writes);</li>
 *   <li>{@link ReceiveSlots}: the receive slots (poll, batch decoding, delivery) and
 *       {@link InboundRendezvous} (RTS answered in order).</li>
 * </ul>
 *
 * <h2>Threads</h2>
 * Sender-side state and the state transitions are guarded by the send side's {@link SendLock} (created by the
 * {@link ConnectionSender}, which owns it; its javadoc lists what it guards and the lock order) and touched by
 * producers and the poller. Receiver-side state belongs to the poller thread alone.
 *
 * <h2>Close</h2>
 * CONNECTED → CLOSING (closeAsync or the peer's CLOSE) → CLOSE sent once everything committed is posted →
 * disconnect once both CLOSEs went through and nothing inbound is pending → CLOSED; any failure, or the close
 * timeout, → FAILED. Teardown fails what is pending, returns every buffer and runs the close callbacks.
 * Only one side disconnects, the one whose peer already has its proof: the side whose CLOSE answers the peer's
 * (it received the peer's CLOSE before sending its own, and says so in its CLOSE's code, {@link Wire#CLOSE_ANSWER}),
 * or the acceptor when the two CLOSEs crossed. A disconnect flushes the peer's QP, and a SEND's completion (its ACK)
 * travels apart from its delivery: had the initiator disconnected as soon as the answer arrived, the answer's own
 * completion could be flushed at the responder, which then could not tell a graceful close from a lost peer.
 *
 * <h2>Credits</h2>
 * {@link CreditWindow} counts the receives the peer has posted that this side has not consumed and owns the
 * reserve-one-credit rule; every SEND and every RDMA_WRITE_WITH_IMM consumes one credit, every batch returns
 * all owed credits.
 *
 * <h2>Ordering</h2>
 * Frames leave in ring order. An eager frame behind an RTS waits until that rendezvous write is posted
 * (or refused), so a later eager message can never overtake a large one: RC keeps the order of
 * work requests, and the receiver sees completions in ring order. Up to
 * {@value #MAX_PIPELINED_RENDEZVOUS} RTS may be outstanding; the receiver answers them strictly in
 * order (CTS or REFUSE, queueing while its pool is exhausted) and the writes follow in that order. A direct write
 * (shm) holds its place from its RTS: writes granted after it wait until its claimant commits or aborts.
 */
final class EngineConnection implements Connection
{
    static final int STATE_CONNECTED = 0;
    static final int STATE_CLOSING = 1;
    static final int STATE_CLOSED = 2;
    static final int STATE_FAILED = 3;

    /** Rendezvous announced and not yet written, at most: bounds what the peer must queue. */
    static final int MAX_PIPELINED_RENDEZVOUS = 8;

    final RdmaEngine engine;
    final EngineConfig config;
    final Poller poller;
    final boolean acceptor;
    private final ProtectionDomain pd;
    final CompletionQueue sendCq;
    final CompletionQueue recvCq;
    private final ReceiveSlots receiver;
    private final ConnectionSender sender;
    private final MemoryRegion readyRegion;
    /** The send side's lock ({@link SendLock}): this connection's state transitions and close take it too. */
    private final SendLock lock;
    private final ConnectionStats stats;
    /**
     * This connection's counters: in this process's memory until its peer is authenticated
     * ({@link #publishCounters()}), then in the process's counters file (its stats and gauges), so that a peer that
     * never proves itself costs the file nothing. Guarded by {@link #countersLock}.
     */
    private CounterGroup counters;
    private final Object countersLock = new Object();
    private boolean countersPublished;
    private boolean countersReleased;
    private final long number;

    private QueuePair qp;
    private String remoteAddress = "?";
    private BufferPool recvPool;
    private int peerReceiveSlots;
    private int peerMaxInbound;

    // ---- close, guarded by the send lock
    private boolean closeSent;
    /** The peer's CLOSE came before ours was sent: ours answers it, and this side disconnects. */
    private boolean closeResponder;
    /** The peer's CLOSE answered ours: the peer disconnects. */
    private boolean closeAnswered;

    // ---- receiver side, poller thread only
    private InboundRendezvous inbound;
    private boolean closeReceived;
    private boolean disconnectRequested;
    private long closeDeadlineNanos;
    private boolean flushed;

    // ---- lifecycle
    private volatile int state = STATE_CONNECTED;
    private volatile boolean attention;
    /** Its poller polls it: before that (a listener's accept callback), nothing of a close can happen. */
    private volatile boolean polled;
    private volatile boolean disconnected;
    private volatile SendErrorHandler sendErrorHandler;
    private volatile boolean resourcesReleased;
    /** Acceptor with a token: holds the connection back until the connector's first batch proves it (AuthGate). */
    volatile AuthGate authGate;
    private final CloseCallbacks closeCallbacks;

    EngineConnection(
        final RdmaEngine engine,
        final Poller poller,
        final boolean acceptor,
        final ProtectionDomain pd,
        final CompletionQueue sendCq,
        final CompletionQueue recvCq,
        final MemoryRegion readyRegion) throws IOException
    {
        this.engine = engine;
        this.config = engine.config();
        this.poller = poller;
        this.acceptor = acceptor;
        this.pd = pd;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.readyRegion = readyRegion;
        this.number = engine.nextConnectionNumber();
        this.counters = CounterGroup.detached(counterLabel());
        this.stats = new ConnectionStats(counters);
        this.receiver = new ReceiveSlots(this, pd);
        this.sender = new ConnectionSender(this, pd);
        this.lock = sender.lock();
        this.closeCallbacks = new CloseCallbacks(lock, engine::onError);
    }

    /**
     * Completes set-up once the QP exists: peer geometry, control slots, pools, receives posted.
     */
    void attach(final QueuePair qp, final Handshake.Hello peer) throws IOException
    {
        this.qp = qp;
        this.remoteAddress = qp.remoteAddress();
        this.peerReceiveSlots = peer.receiveSlots;
        this.peerMaxInbound = peer.maxInbound;
        sender.attach(qp, pd, peer, sendCq.capacity(), receiver.slots());
        this.recvPool = new BufferPool(pd, engine.rendezvousBudget(), Access.LOCAL_WRITE | Access.REMOTE_WRITE,
            config.rendezvousMinClass(), config.rendezvousMaxClass(), config.rendezvousPoolBytes(), this::onRecvBufferReleased);
        this.inbound = new InboundRendezvous(recvPool, engine.rendezvousBudget(), engine.rendezvousAllocator(),
            this::requestAttention, config.maxInboundMessageSize(), MAX_PIPELINED_RENDEZVOUS,
            config.rendezvousWriteTimeoutNanos(), stats, sender);
        receiver.attach(qp, inbound);
    }

    /**
     * The peer is authenticated (the acceptor's gate admitted it, or no token is configured and the handshake
     * completed): the connection's counters move into the process's counters file, where {@code reverb-stat} sees
     * them. Called before the connection is polled or handed to anyone (for an admitted connection: on the poller,
     * before its first batch is processed), so no count is written to the old counters meanwhile. If the file
     * cannot take them (full, or faulted) they stay in memory; nothing fails.
     */
    void publishCounters()
    {
        synchronized (countersLock)
        {
            if (countersPublished || countersReleased)
            {
                return;
            }
            countersPublished = true;
            // Micrometer's per-connection meters too (where a registry is set): a peer that never proves the token
            // adds no series to a time-series database
            engine.bindConnectionMetrics(this);
            CounterGroup group = null;
            try
            {
                group = engine.counters().newGroup(CountersLayout.KIND_CONNECTION, counterLabel(),
                    engine.engineCounters().id());
                stats.moveTo(group);
                group.gauge("state (0 connected, 1 closing, 2 closed, 3 failed)", () -> state);
                // Read without the send lock: a sampler taking it ten times a second would contend with the sender.
                group.gauge("credits available", sender::creditsUnlocked);
                group.gauge("send ring bytes used", () -> state >= STATE_CLOSED ? 0 : sender.ring().bytesInFlight());
                group.gauge("rendezvous buffers used", this::poolBuffersInUse);
                counters = group;
            }
            catch (final RuntimeException | InternalError fault)
            {
                // InternalError: a page of the counters file faulted (SIGBUS; ProcessCounters warns once). The
                // connection keeps its counters in memory: serving it matters more than showing it.
                if (group != null)
                {
                    group.close();
                }
            }
        }
    }

    private String counterLabel()
    {
        // shm's peer addresses already carry their scheme
        final String peer = remoteAddress.contains("://") ? remoteAddress : engine.fabric() + "://" + remoteAddress;
        return engine.config().name() + " #" + number + " " + peer + (acceptor ? " (accepted)" : " (connected)");
    }

    /** @return a number unique in its engine (in its counters' label and its meters' tags). */
    long number()
    {
        return number;
    }

    /**
     * The connection is closed: its numbers move into this process's memory (stats() still answers) and its
     * counters in the file are freed.
     */
    void releaseCounters()
    {
        synchronized (countersLock)
        {
            countersReleased = true;
            if (countersPublished)
            {
                engine.unbindConnectionMetrics(this);
            }
            stats.detach();
            counters.close();
        }
    }

    /** Connector: waits for the acceptor's ready write. */
    void awaitReady(final long timeoutNanos) throws IOException
    {
        final long deadline = System.nanoTime() + timeoutNanos;
        final UnsafeBuffer word = readyRegion.buffer();
        int spins = 0;
        while (word.getLongVolatile(0) != Handshake.MAGIC)
        {
            if (disconnected)
            {
                throw new IOException("connection to " + remoteAddress + " went down during the handshake");
            }
            if (System.nanoTime() - deadline > 0)
            {
                throw new IOException("connection to " + remoteAddress +
                    " timed out waiting for the acceptor's ready signal (is the peer a Reverb engine of the same version?)");
            }
            if (++spins > 1000)
            {
                LockSupport.parkNanos(20_000);
            }
            else
            {
                Thread.onSpinWait();
            }
        }
    }

    /** Acceptor: tell the connector our receives are posted (a one-sided write needs no receive). */
    void postReadyWrite(final long remoteAddress, final int rkey) throws IOException
    {
        sender.postReadyWrite(remoteAddress, rkey);
    }

    /** Connector with a token: its proof opens the first batch (see Handshake). Call before anything is flushed. */
    void sendAuthProof(final long word0, final long word1)
    {
        synchronized (lock)
        {
            sender.enqueueControl(Wire.CONTROL_AUTH, 0, word0, word1, 0, 0);
        }
    }

    /** Connector: the first batch announces our receives. */
    void sendInitialCredits()
    {
        sender.flushAndReportRefused();
    }

    @Override
    public int tryClaim(final int length, final WriteClaim claim)
    {
        return sender.tryClaim(length, claim); // the sender commits and aborts the claim (its WriteClaim.Committer)
    }

    @Override
    public void onWritable(final Runnable callback)
    {
        sender.onWritable(callback);
    }

    /** @return whether the close callbacks ran (send lock held): a closed connection answers onWritable at once. */
    boolean closeCallbacksRun()
    {
        assert lock.isHeldByCurrentThread();
        return closeCallbacks.ran();
    }

    ConnectionStats statsRef()
    {
        return stats;
    }

    // =====================================================================================
    // Polling (poller thread)
    // =====================================================================================

    /**
     * One duty cycle for this connection.
     *
     * @return work done (completions processed, events handled).
     */
    int poll(final WorkCompletions wc)
    {
        int work = 0;
        if (attention)
        {
            attention = false;
            work += onAttention();
        }
        if (resourcesReleased)
        {
            return work;
        }
        int n = sendCq.poll(wc);
        if (n > 0)
        {
            work += n;
            sender.onSendCompletions(wc, n);
        }
        if (receiver.poll(wc))
        {
            work++;
        }
        if (work > 0)
        {
            if (state == STATE_CLOSING)
            {
                progressClose();
            }
            if (sender.hasWritableWaiters())
            {
                sender.fireWritable();
            }
        }
        return work;
    }

    /** Arms both CQs before the poller sleeps. */
    void arm()
    {
        if (!resourcesReleased)
        {
            sendCq.requestNotify(false);
            recvCq.requestNotify(false);
        }
    }

    void requestAttention()
    {
        attention = true;
        poller.wakeup();
    }

    private int onAttention()
    {
        if (state >= STATE_CLOSED)
        {
            sender.fireWritable();
            return 1;
        }
        if (disconnected)
        {
            onDisconnected();
            return 1;
        }
        if (inbound != null)
        {
            inbound.grantQueued();
        }
        sender.flushAndReportRefused();
        if (state == STATE_CLOSING)
        {
            progressClose();
        }
        sender.fireWritable();
        return 1;
    }

    void onErrorCompletion(final WcStatus status, final String what)
    {
        if (status == WcStatus.WR_FLUSH_ERR)
        {
            // The QP is in ERROR: the disconnect handler follows (or already ran).
            flushed = true;
            if (!disconnected)
            {
                disconnected = true;
            }
            requestAttention();
            return;
        }
        if (status == WcStatus.RNR_RETRY_EXC_ERR)
        {
            stats.rnrErrors.incrementRelease();
        }
        failLater(new PeerDisconnectedException(what + " to " + remoteAddress + " failed with " + status +
            (status == WcStatus.RNR_RETRY_EXC_ERR ? " (the peer had no receive posted: an engine credit bug)" : "")));
    }

    /**
     * The receive side finished a poll: the batches it took returned {@code returned} credits, and it re-posted
     * {@code reposted} slots (owed to the peer); sends what that lets go.
     *
     * @return false if the peer returned more credits than it has receives (the caller reports the protocol error)
     */
    boolean afterReceives(final long returned, final int reposted)
    {
        return sender.afterReceives(returned, reposted);
    }

    /** @return how many credits a correct peer may have returned in all so far (poller: checked before a batch is used) */
    long creditReturnLimit()
    {
        return sender.creditReturnLimit();
    }

    @Override
    public RetainedMessage retain()
    {
        return receiver.retain();
    }

    /** A control frame arrived (poller thread). */
    void onControlFrame(final ControlFrameFlyweight frame)
    {
        final int type = frame.type();
        switch (type)
        {
            case Wire.CONTROL_CTS:
                sender.onClearToSend(frame);
                break;
            case Wire.CONTROL_REFUSE:
                sender.onRefuse(frame);
                break;
            case Wire.CONTROL_CLOSE:
                closeReceived = true;
                synchronized (lock)
                {
                    closeResponder = !closeSent;
                    closeAnswered = frame.code() == Wire.CLOSE_ANSWER;
                    if (state == STATE_CONNECTED)
                    {
                        state = STATE_CLOSING;
                        closeDeadlineNanos = System.nanoTime() + config.closeTimeoutNanos();
                        sender.stateChanged();
                    }
                }
                break;
            case Wire.CONTROL_ABORT:
            {
                final String error = inbound.abort(frame.id());
                if (error != null)
                {
                    protocolError(error);
                }
                break;
            }
            case Wire.CONTROL_AUTH:
                break; // checked by the AuthGate before this batch was processed
            default:
                protocolError("unknown control frame " + type);
        }
    }

    private void onRecvBufferReleased()
    {
        if ((inbound != null && inbound.queued() > 0) || state >= STATE_CLOSED)
        {
            requestAttention();
        }
        if (state >= STATE_CLOSED)
        {
            maybeReleaseResources();
        }
    }

    void protocolError(final String what)
    {
        peerBroke = true;
        failLater(new PeerDisconnectedException("protocol error from " + remoteAddress + ": " + what));
    }

    /**
     * @return whether the peer broke the protocol: nothing more of what it sent is used (the receives taken in the
     * same poll after the bad batch included), although the connection goes down only at the poller's next attention
     * check
     */
    boolean peerBroke()
    {
        return peerBroke;
    }

    /**
     * A protocol error found by a caller that holds the send lock: records it and leaves the QP to the poller, which
     * disconnects it at its next attention check (the provider's QP is never entered from here, see {@link SendLock}).
     */
    void protocolErrorDeferred(final String what)
    {
        if (pendingFailure == null)
        {
            pendingFailure = new PeerDisconnectedException("protocol error from " + remoteAddress + ": " + what);
        }
        peerBroke = true;
        disconnected = true;
        requestAttention();
    }

    private volatile Throwable pendingFailure;
    /** See {@link #peerBroke()}. */
    private volatile boolean peerBroke;

    /** Records a failure; the poller tears the connection down at its next attention check. */
    void failLater(final Throwable cause)
    {
        if (pendingFailure == null)
        {
            pendingFailure = cause;
        }
        qpDisconnect();
        disconnected = true;
        requestAttention();
    }

    private void qpDisconnect()
    {
        final QueuePair q = qp;
        if (q != null)
        {
            try
            {
                q.disconnect();
            }
            catch (final RuntimeException ignore)
            {
                // Already gone.
            }
        }
    }

    // =====================================================================================
    // Close and failure
    // =====================================================================================

    /** The provider's disconnect handler (any thread). */
    void onProviderDisconnect()
    {
        disconnected = true;
        requestAttention();
    }

    /**
     * Poller thread, now and then (whenever it wakes from a sleep): lets a graceful close notice its deadline,
     * drops a peer that holds granted rendezvous memory without writing, and gives back a grant this side holds
     * unclaimed for long (direct writes).
     */
    /**
     * Poller thread, before it sleeps: whether {@link #tick()} has something to watch, so the poller must not sleep
     * without a time limit. A graceful close (its deadline), a direct write's grant from the peer not yet claimed, or
     * memory this side granted and the peer has not written yet. A close begun on another thread wakes the poller
     * ({@link #closeAsync()}); the grants are made on the poller thread (a CTS arrives, an RTS is answered).
     *
     * @return true while a deadline is pending.
     */
    boolean hasDeadline()
    {
        final int s = state;
        if (s == STATE_CLOSING)
        {
            return true;
        }
        if (s == STATE_CONNECTED && sender.hasDirectWriteAnnounced())
        {
            return true;
        }
        final InboundRendezvous in = inbound;
        return in != null && s < STATE_CLOSED && in.granted() > 0;
    }

    void tick()
    {
        if (state == STATE_CLOSING)
        {
            attention = true;
        }
        if (state == STATE_CONNECTED)
        {
            sender.tick(System.nanoTime()); // a direct write's grant not claimed for long is given back
        }
        final InboundRendezvous in = inbound;
        if (in != null && state < STATE_CLOSED && in.granted() > 0)
        {
            final String overdue = in.overdue(System.nanoTime());
            if (overdue != null)
            {
                protocolError(overdue);
            }
        }
    }

    @Override
    public CompletableFuture<Void> closeAsync()
    {
        synchronized (lock)
        {
            if (state == STATE_CONNECTED)
            {
                state = STATE_CLOSING;
                closeDeadlineNanos = System.nanoTime() + config.closeTimeoutNanos();
                sender.stateChanged();
            }
        }
        // Closed before anyone set a handler (a refusal from an accept callback): what arrived can never be
        // delivered, and held as the first message waiting for a handler it would keep the poller from reading the
        // peer's answer to the CLOSE behind it, until the close timeout. It is dropped instead.
        receiver.discardIfNoHandler();
        requestAttention();
        return closeCallbacks.future();
    }

    @Override
    public void abort(final Throwable cause)
    {
        failLater(cause != null ? cause : new EngineException("connection to " + remoteAddress + " aborted"));
    }

    @Override
    public void close()
    {
        final CompletableFuture<Void> f = closeAsync();
        if (Thread.currentThread() == poller.thread() || !polled)
        {
            // On the poller the close cannot progress while it waits; before polling starts (a listener's accept
            // callback, whose return starts it) neither: it waited the whole close timeout, holding the accept loop.
            return;
        }
        try
        {
            f.get(config.closeTimeoutNanos() + 1_000_000_000L, TimeUnit.NANOSECONDS);
        }
        catch (final Exception ignore)
        {
            // Failure is reported through onClose; close() never throws.
        }
    }

    /** Poller thread: send CLOSE once drained, disconnect once both CLOSEs went through. */
    private void progressClose()
    {
        boolean disconnectNow = false;
        synchronized (lock)
        {
            if (state != STATE_CLOSING)
            {
                return;
            }
            if (!closeSent && sender.isDrained())
            {
                closeSent = true;
                sender.sendClose(closeResponder);
            }
            final boolean disconnectsHere = closeResponder || (!closeAnswered && acceptor);
            if (closeSent && sender.closeSendCompleted() && closeReceived && inbound.isEmpty() && !disconnectRequested &&
                disconnectsHere)
            {
                disconnectRequested = true;
                disconnectNow = true;
            }
        }
        if (disconnectNow)
        {
            qpDisconnect();
            disconnected = true;
            requestAttention();
        }
        else if (System.nanoTime() - closeDeadlineNanos > 0)
        {
            failLater(new EngineException("graceful close of the connection to " + remoteAddress + " timed out after " +
                config.closeTimeoutNanos() / 1_000_000 + " ms with messages in flight"));
        }
    }

    /** Poller thread: the QP is down. Drain what completed, then fail or finish. */
    private void onDisconnected()
    {
        final WorkCompletions wc = poller.completions();
        receiver.drain(wc, 0);
        for (int guard = 0; guard < 1000; guard++)
        {
            int n = sendCq.poll(wc);
            if (n > 0)
            {
                sender.onSendCompletions(wc, n);
            }
            int m = recvCq.poll(wc);
            if (m > 0)
            {
                receiver.drain(wc, m);
            }
            if (n == 0 && m == 0)
            {
                break;
            }
        }
        final QueuePair down = qp;
        final Throwable providerFailure = down == null ? null : down.failure();
        if (pendingFailure == null && providerFailure != null)
        {
            // The provider took the QP down (a broken CQ): that, not a vanished peer, is why the connection ends.
            pendingFailure = new EngineException("connection to " + remoteAddress + " failed: " +
                providerFailure.getMessage(), providerFailure);
        }
        if (pendingFailure == null && closeSent && closeReceived && !sender.closeSendCompleted() && !flushed &&
            System.nanoTime() - closeDeadlineNanos < 0)
        {
            // The peer disconnects as soon as it has received our CLOSE, which can be before the ACK of that SEND
            // (its completion here) is back: the two travel apart. Our QP is still up, so the completion comes (or
            // its error does): wait for it, at most until the close deadline, instead of calling this a lost peer.
            requestAttention();
            return;
        }
        final boolean graceful = pendingFailure == null && closeSent && closeReceived && sender.closeSendCompleted();
        teardown(graceful ? null : pendingFailure != null ? pendingFailure : new PeerDisconnectedException(
            "connection to " + remoteAddress + " lost: the peer disconnected without closing (process died or engine closed)"));
    }

    Throwable lostCause()
    {
        return closeCallbacks.lostCause(remoteAddress);
    }

    /** Poller thread. Fails everything pending, returns every buffer, runs the close callbacks. */
    private void teardown(final Throwable cause)
    {
        final List<long[]> failedFrames = new ArrayList<>();
        final List<BufferPool.Buffer> failedRendezvous = new ArrayList<>();
        synchronized (lock)
        {
            if (state >= STATE_CLOSED)
            {
                return;
            }
            state = cause == null ? STATE_CLOSED : STATE_FAILED;
            closeCallbacks.cause(cause);
            // Frames committed but not known delivered: everything from head to tail.
            sender.drain(failedFrames, failedRendezvous);
        }
        final Throwable reported = cause != null ? cause : lostCause();
        for (final long[] frame : failedFrames)
        {
            reportFailedSend(frame[0], (int)frame[1], reported);
        }
        for (final BufferPool.Buffer buffer : failedRendezvous)
        {
            final long id = buffer.messageId;
            final int length = buffer.length;
            sender.pool().release(buffer);
            reportFailedSend(id, length, reported);
        }
        if (inbound != null)
        {
            inbound.releaseAll();
        }
        qpDisconnect();
        poller.remove(this);
        engine.retire(this);
        maybeReleaseResources();
        closeCallbacks.runAll(cause);
        sender.fireWritable();
    }

    /** Frees registered memory once no claim or retained buffer can still touch it. */
    void maybeReleaseResources()
    {
        synchronized (lock)
        {
            final BufferPool sendPool = sender.pool();
            if (resourcesReleased || state < STATE_CLOSED || sender.outstandingClaims() > 0 ||
                (recvPool != null && (recvPool.buffersInUse() > 0 || recvPool.allocationsPending() > 0)) ||
                (sendPool != null && sendPool.buffersInUse() > 0))
            {
                return;
            }
            resourcesReleased = true;
        }
        if (sender.pool() != null)
        {
            sender.pool().close();
            recvPool.close();
        }
        if (qp != null)
        {
            qp.close();
        }
        sendCq.close();
        recvCq.close();
        pd.close();
    }

    /** Closes resources of a connection whose set-up failed. */
    void abandon()
    {
        synchronized (lock)
        {
            state = STATE_FAILED;
            resourcesReleased = true;
        }
        synchronized (countersLock)
        {
            countersReleased = true;
            counters.close();
        }
        if (qp != null)
        {
            qp.close();
        }
        sendCq.close();
        recvCq.close();
        pd.close();
    }

    void reportFailedSend(final long messageId, final int length, final Throwable cause)
    {
        reportFailedSend(messageId, length, null, cause);
    }

    void reportFailedSend(final long messageId, final int length, final Object attachment, final Throwable cause)
    {
        stats.failedSends.incrementRelease();
        final SendErrorHandler h = sendErrorHandler;
        if (h != null)
        {
            try
            {
                h.onSendFailed(messageId, length, attachment, cause);
            }
            catch (final Throwable t)
            {
                engine.onError(t);
            }
        }
    }

    // =====================================================================================
    // Plain accessors
    // =====================================================================================

    /** Its poller polls it from now on ({@link Poller#add}). */
    void polled()
    {
        polled = true;
    }

    @Override
    public void setHandler(final MessageHandler handler)
    {
        receiver.handler(Objects.requireNonNull(handler, "handler"));
        requestAttention();
    }

    @Override
    public void pauseReceiving(final boolean paused)
    {
        receiver.pause(paused);
        requestAttention();
    }

    @Override
    public void setSendErrorHandler(final SendErrorHandler handler)
    {
        this.sendErrorHandler = handler;
    }

    @Override
    public void onClose(final Consumer<Throwable> callback)
    {
        closeCallbacks.add(callback);
    }

    @Override
    public boolean isConnected()
    {
        return state == STATE_CONNECTED;
    }

    @Override
    public boolean isClosed()
    {
        return closeCallbacks.future().isDone();
    }

    @Override
    public String remoteAddress()
    {
        return remoteAddress;
    }

    @Override
    public InetSocketAddress[] socketAddresses()
    {
        final QueuePair q = qp;
        return q == null ? null : q.socketAddresses();
    }

    @Override
    public String localAddress()
    {
        final QueuePair q = qp;
        return q == null ? null : q.localAddress();
    }

    @Override
    public SSLSession sslSession()
    {
        final QueuePair q = qp;
        return q == null ? null : q.sslSession();
    }

    @Override
    public int eagerLimit()
    {
        return sender.eagerLimit();
    }

    @Override
    public void limitInboundMessageSize(final int bytes)
    {
        if (bytes < 0)
        {
            throw new IllegalArgumentException("inbound message size limit must be >= 0: " + bytes);
        }
        inbound.limitTo(bytes);
    }

    @Override
    public int peerMaxInboundMessageSize()
    {
        return peerMaxInbound;
    }

    @Override
    public int receiveSlots()
    {
        return receiver.slots();
    }

    @Override
    public int peerReceiveSlots()
    {
        return peerReceiveSlots;
    }

    @Override
    public int creditsAvailable()
    {
        synchronized (lock)
        {
            return sender.credits();
        }
    }

    @Override
    public int creditsOwed()
    {
        synchronized (lock)
        {
            return sender.owed();
        }
    }

    @Override
    public int poolBuffersInUse()
    {
        return (sender.pool() == null ? 0 : sender.pool().buffersInUse()) + (recvPool == null ? 0 : recvPool.buffersInUse());
    }

    @Override
    public long poolBytesInUse()
    {
        return (sender.pool() == null ? 0 : sender.pool().bytesInUse()) + (recvPool == null ? 0 : recvPool.bytesInUse());
    }

    long poolBytesAllocated()
    {
        return (sender.pool() == null ? 0 : sender.pool().bytesAllocated()) + (recvPool == null ? 0 : recvPool.bytesAllocated());
    }

    @Override
    public long sendBytesInFlight()
    {
        synchronized (lock)
        {
            return state >= STATE_CLOSED ? 0 : sender.ring().bytesInFlight();
        }
    }

    @Override
    public int pendingRendezvous()
    {
        final int out;
        synchronized (lock)
        {
            out = sender.outboundRendezvous();
        }
        return out + (inbound == null ? 0 : inbound.granted() + inbound.queued());
    }

    /** @return true if this side granted a rendezvous whose data has not arrived yet (its poller thread only). */
    boolean awaitsGrantedData()
    {
        final InboundRendezvous in = inbound;
        return in != null && in.granted() > 0;
    }

    /** @return this side's rendezvous granted by the peer whose write is not posted yet (tests). */
    int outboundGranted()
    {
        synchronized (lock)
        {
            return sender.outboundGranted();
        }
    }

    /** @return mappings of the peer's grants this side holds open for direct writes (0 when idle). */
    int directMappingsOpen()
    {
        synchronized (lock)
        {
            return sender.mappingsOpen();
        }
    }

    /** @return true if this connection writes large messages straight into the peer's grants. */
    boolean directWrite()
    {
        return sender.directWrite();
    }

    @Override
    public int queuedRendezvousRequests()
    {
        return inbound == null ? 0 : inbound.queued();
    }

    @Override
    public ConnectionStats stats()
    {
        return stats;
    }

    int state()
    {
        return state;
    }

    boolean isDisconnected()
    {
        return disconnected;
    }

    @Override
    public String toString()
    {
        synchronized (lock)
        {
            return "Connection{" + remoteAddress + ", state=" + state + ", credits=" + sender.credits() + ", owed=" +
                sender.owed() + ", ring=" + sender.ring().bytesInFlight() + "/" + sender.ring().capacity() + '}';
        }
    }
}
