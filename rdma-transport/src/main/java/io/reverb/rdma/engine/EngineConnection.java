package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The engine's connection: send ring, credits, eager batches, rendezvous and close, over one RC QP.
 *
 * <h2>Threads</h2>
 * Sender-side state (ring positions, credits, control queue, outgoing rendezvous) is guarded by
 * {@code lock} and touched by producers and the poller. Receiver-side state (incoming rendezvous,
 * queued requests, the delivery in progress) belongs to the poller thread alone. Whoever commits a
 * message posts it right away if credits allow ("flush"), so the poller is not on the send path;
 * the poller flushes what waited for credits or a CTS.
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
 * order (CTS or REFUSE, queueing while its pool is exhausted) and the writes follow in that order.
 */
final class EngineConnection implements Connection, InboundRendezvous.Answers
{
    static final int STATE_CONNECTED = 0;
    static final int STATE_CLOSING = 1;
    static final int STATE_CLOSED = 2;
    static final int STATE_FAILED = 3;

    private static final long TAG_SHIFT = 60;
    private static final long TAG_SEND = 0;
    private static final long TAG_WRITE = 1;
    private static final long TAG_READY = 2;
    private static final long ID_MASK = (1L << TAG_SHIFT) - 1;
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
    private final SendRing ring;
    private final MemoryRegion readyRegion;
    private final SendRequest sendRequest = new SendRequest();
    private final Object lock = new Object();
    private final ConnectionStats stats = new ConnectionStats();
    private final CreditWindow window;
    private final BatchHeaderFlyweight outboundHeader = new BatchHeaderFlyweight();

    private QueuePair qp;
    private String remoteAddress = "?";
    private MemoryRegion controlRegion;
    private UnsafeBuffer control;
    private int controlSlots;
    private BufferPool sendPool;
    private BufferPool recvPool;
    private int peerReceiveSlots;
    private int peerEagerLimit;
    private int peerMaxInbound;
    private int sendEagerLimit;

    // ---- sender side, guarded by lock
    private long sendSeq;
    private long[] batchEnds;
    private int sendsInFlight;
    /**
     * Signaled work requests (SENDs and rendezvous writes) posted and not yet reaped from the send CQ.
     * Bounded by {@link #maxSignaledInFlight}: a CQ holds only so many completions, the send queue only
     * so many requests, and {@link #batchEnds}/control slots are reused by sequence, so posting stops at the
     * bound (back-pressure) and resumes when the poller reaps (as ibverbs users count signaled sends).
     * Credits alone do not bound this: the peer returns credits before this side reaps its completions.
     */
    private int signaledInFlight;
    private int maxSignaledInFlight;
    private boolean sendCqStalled;
    private final OutboundRendezvous outbound = new OutboundRendezvous();
    private boolean creditStalled;
    private long nextMessageId;
    private int outstandingClaims;
    private final ControlQueue controlQueue = new ControlQueue(16);
    private final ArrayList<Runnable> writableWaiters = new ArrayList<>();
    private final ArrayList<Runnable> firing = new ArrayList<>();
    private long writableEpoch;
    private long backPressureEpoch = -1;
    private boolean closeSent;
    private long closeBatchSeq = -1;
    private boolean closeSendCompleted;

    // ---- receiver side, poller thread only
    private InboundRendezvous inbound;
    private boolean closeReceived;
    private boolean disconnectRequested;
    private long closeDeadlineNanos;
    private boolean flushed;

    // ---- lifecycle
    private volatile int state = STATE_CONNECTED;
    private volatile boolean attention;
    private volatile boolean disconnected;
    private volatile SendErrorHandler sendErrorHandler;
    private volatile boolean resourcesReleased;
    private boolean closeCallbacksRun;
    private Throwable closeCause;
    private final List<Consumer<Throwable>> closeCallbacks = new ArrayList<>();
    private final CompletableFuture<Void> closeFuture = new CompletableFuture<>();

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
        this.receiver = new ReceiveSlots(this, stats, pd, recvCq, config.receiveSlots(), config.receiveSlotLength());
        this.ring = new SendRing(pd.allocate(config.sendSlots() * Wire.dataFrameLength(config.eagerLimit()), Access.LOCAL_WRITE));
        this.window = new CreditWindow(config.receiveSlots());
    }

    /**
     * Completes set-up once the QP exists: peer geometry, control slots, pools, receives posted.
     */
    void attach(final QueuePair qp, final Handshake.Hello peer) throws IOException
    {
        this.qp = qp;
        this.remoteAddress = qp.remoteAddress();
        this.peerReceiveSlots = peer.receiveSlots;
        this.peerEagerLimit = peer.eagerLimit;
        this.peerMaxInbound = peer.maxInbound;
        this.sendEagerLimit = Math.min(config.eagerLimit(), peerEagerLimit);
        this.controlSlots = peerReceiveSlots + 1;
        // One extra 16 bytes at the end: the source of the acceptor's ready write.
        this.controlRegion = pd.allocate(controlSlots * Wire.CONTROL_SLOT_LENGTH + 16, Access.LOCAL_WRITE);
        this.control = controlRegion.buffer();
        this.batchEnds = new long[controlSlots];
        // Also within the send CQ (created for at least the peer's receive slots + 8, the ready write
        // included) and the QP's maxSendWr (peer receive slots + 4).
        this.maxSignaledInFlight = Math.min(peerReceiveSlots, sendCq.capacity() - 8);
        final int maxClass = config.rendezvousMaxClass();
        this.sendPool = new BufferPool(pd, Access.LOCAL_WRITE, config.rendezvousMinClass(), maxClass,
            config.rendezvousPoolBytes(), this::onSendBufferReleased);
        this.recvPool = new BufferPool(pd, Access.LOCAL_WRITE | Access.REMOTE_WRITE, config.rendezvousMinClass(), maxClass,
            config.rendezvousPoolBytes(), this::onRecvBufferReleased);
        this.inbound = new InboundRendezvous(recvPool, config.maxInboundMessageSize(), stats, this);
        receiver.attach(qp, inbound);
        // The acceptor's credits arrive with the connector's first batch, sent once it has seen our ready word;
        // that batch announces the connector's receives, all posted by now.
        window.start(acceptor, peerReceiveSlots, receiver.slots());
    }

    /** Acceptor: tell the connector our receives are posted (a one-sided write needs no receive). */
    void postReadyWrite(final long remoteAddress, final int rkey) throws IOException
    {
        final int readyOffset = controlSlots * Wire.CONTROL_SLOT_LENGTH;
        control.putLong(readyOffset, Handshake.MAGIC);
        synchronized (lock)
        {
            sendRequest.reset();
            sendRequest.opcode(WrOpcode.RDMA_WRITE).wrId(TAG_READY << TAG_SHIFT).remoteAddress(remoteAddress).rkey(rkey);
            sendRequest.setSge(controlRegion, readyOffset, 8);
            final int rc = qp.postSend(sendRequest);
            if (rc != PostResult.OK)
            {
                throw new IOException("could not post the handshake's ready write: " + PostResult.toString(rc));
            }
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
                java.util.concurrent.locks.LockSupport.parkNanos(20_000);
            }
            else
            {
                Thread.onSpinWait();
            }
        }
    }

    /** Connector: the first batch announces our receives. */
    void sendInitialCredits()
    {
        synchronized (lock)
        {
            flushLocked();
        }
    }

    ByteBuffer ringByteBuffer()
    {
        return ring.byteBuffer();
    }

    ConnectionStats statsRef()
    {
        return stats;
    }

    // =====================================================================================
    // Sending
    // =====================================================================================

    @Override
    public int tryClaim(final int length, final MessageClaim claim)
    {
        if (length < 0)
        {
            throw new IllegalArgumentException("negative length " + length);
        }
        if (length <= sendEagerLimit)
        {
            final int frameLength = Wire.dataFrameLength(length);
            final int index;
            final long id;
            synchronized (lock)
            {
                final int s = state;
                if (s != STATE_CONNECTED)
                {
                    return s == STATE_FAILED ? NOT_CONNECTED : CLOSED;
                }
                index = ring.claim(frameLength);
                if (index < 0)
                {
                    backPressureEpoch = writableEpoch;
                    return BACK_PRESSURED;
                }
                id = nextMessageId++;
                ring.writeHeader(index, length, -Wire.FRAME_DATA, id);
                outstandingClaims++;
            }
            claim.wrap(this, ring.buffer(), index + Wire.FRAME_HEADER_LENGTH, length, id, index, null);
            return OK;
        }
        if (length > config.maxOutboundMessageSize())
        {
            return TOO_LARGE;
        }
        final BufferPool.Buffer buffer;
        final int index;
        final long id;
        synchronized (lock)
        {
            final int s = state;
            if (s != STATE_CONNECTED)
            {
                return s == STATE_FAILED ? NOT_CONNECTED : CLOSED;
            }
            buffer = sendPool.acquire(length);
            if (buffer == null)
            {
                backPressureEpoch = writableEpoch;
                return BACK_PRESSURED;
            }
            index = ring.claim(Wire.FRAME_HEADER_LENGTH);
            if (index < 0)
            {
                backPressureEpoch = writableEpoch;
                sendPool.release(buffer);
                return BACK_PRESSURED;
            }
            id = nextMessageId++;
            ring.writeHeader(index, length, -Wire.FRAME_RTS, id);
            buffer.id = (int)id;
            buffer.messageId = id;
            buffer.length = length;
            outstandingClaims++;
        }
        claim.wrap(this, buffer.buffer, 0, length, id, index, buffer);
        return OK;
    }

    void commit(final int frameIndex, final BufferPool.Buffer rendezvous)
    {
        boolean lost = false;
        synchronized (lock)
        {
            outstandingClaims--;
            if (state >= STATE_CLOSED)
            {
                lost = true;
            }
            else if (rendezvous != null)
            {
                outbound.committed(rendezvous);
                ring.frameType(frameIndex, Wire.FRAME_RTS);
                flushLocked();
            }
            else
            {
                ring.frameType(frameIndex, Wire.FRAME_DATA);
                flushLocked();
            }
        }
        if (lost)
        {
            final long id = ring.frameId(frameIndex);
            final int length = rendezvous != null ? rendezvous.length : ring.frameLength(frameIndex);
            if (rendezvous != null)
            {
                sendPool.release(rendezvous);
            }
            reportFailedSend(id, length, lostCause());
            maybeReleaseResources();
        }
    }

    void abort(final int frameIndex, final int length, final BufferPool.Buffer rendezvous)
    {
        boolean terminal;
        synchronized (lock)
        {
            outstandingClaims--;
            terminal = state >= STATE_CLOSED;
            if (!terminal)
            {
                ring.frameLength(frameIndex, rendezvous != null ? Wire.FRAME_HEADER_LENGTH : Wire.dataFrameLength(length));
                ring.frameType(frameIndex, Wire.FRAME_PAD);
                flushLocked();
            }
        }
        if (rendezvous != null)
        {
            sendPool.release(rendezvous);
        }
        if (terminal)
        {
            maybeReleaseResources();
        }
    }

    /**
     * Posts everything that may go now: a pending rendezvous write, then batches of control frames
     * and committed data frames, as credits allow. Called with {@code lock} held.
     */
    private void flushLocked()
    {
        if (state >= STATE_CLOSED || qp == null || disconnected)
        {
            return;
        }
        while (true)
        {
            while (outbound.nextWrite() != null && window.canSendData())
            {
                if (signaledInFlight >= maxSignaledInFlight)
                {
                    sendCqStalled = true;
                    return;
                }
                if (!postRendezvousWrite(outbound.nextWrite()))
                {
                    return;
                }
                outbound.writePosted();
            }
            if (ring.skipPadding())
            {
                if (sendsInFlight == 0)
                {
                    ring.release(ring.posted());
                    writableEpoch++;
                }
                else
                {
                    batchEnds[(int)((sendSeq - 1) % controlSlots)] = ring.posted();
                }
            }
            // An eager frame behind a rendezvous waits until that rendezvous is written, so that it
            // cannot overtake it; further RTS may go ahead (their writes follow in RTS order).
            final int controlFrames = Math.min(controlQueue.size(), Wire.MAX_CONTROL_FRAMES_PER_BATCH);
            int dataLength = 0;
            if (window.canSendData())
            {
                final int budget = Wire.receiveSlotLength(peerEagerLimit) - Wire.BATCH_HEADER_LENGTH -
                    controlFrames * Wire.CONTROL_FRAME_LENGTH;
                dataLength = ring.batchLength(budget, outbound.outstanding(), MAX_PIPELINED_RENDEZVOUS);
            }
            else if (ring.hasUnposted() && !creditStalled)
            {
                creditStalled = true;
                stats.creditStalls++;
            }
            if (dataLength == 0)
            {
                final boolean creditReturnDue = window.creditReturnDue() || (!acceptor && sendSeq == 0);
                if (controlFrames == 0 && !creditReturnDue)
                {
                    return;
                }
                if (!window.canSendControlOnly())
                {
                    return;
                }
            }
            if (signaledInFlight >= maxSignaledInFlight)
            {
                // Reaping the send CQ (poller) resumes the flush.
                if (!sendCqStalled)
                {
                    sendCqStalled = true;
                    stats.sendQueueStalls++;
                }
                return;
            }
            if (!postBatch(controlFrames, dataLength))
            {
                return;
            }
        }
    }

    private boolean postBatch(final int controlFrames, final int dataLength)
    {
        final long seq = sendSeq;
        final int slot = (int)(seq % controlSlots);
        final int base = slot * Wire.CONTROL_SLOT_LENGTH;
        outboundHeader.wrap(control, base)
            .credits(window.owed())
            .controlLength(controlFrames * Wire.CONTROL_FRAME_LENGTH)
            .sequence(seq);
        final boolean carriesClose = controlQueue.copyTo(control, base + Wire.BATCH_HEADER_LENGTH, controlFrames);
        final SendRequest req = sendRequest;
        req.reset();
        req.wrId((TAG_SEND << TAG_SHIFT) | seq);
        req.opcode(WrOpcode.SEND);
        req.setSge(controlRegion, base, Wire.BATCH_HEADER_LENGTH + controlFrames * Wire.CONTROL_FRAME_LENGTH);
        final int start = ring.indexOf(ring.posted());
        if (dataLength > 0)
        {
            req.addSge(ring.region().address() + start, dataLength, ring.region().lkey());
        }
        final int rc = qp.postSend(req);
        if (rc != PostResult.OK)
        {
            failLater(new PeerDisconnectedException("posting a SEND to " + remoteAddress + " failed: " + PostResult.toString(rc)));
            return false;
        }
        if (dataLength > 0)
        {
            countEagerFrames(start, dataLength);
            creditStalled = false;
        }
        else
        {
            stats.creditOnlySends++;
        }
        stats.sendsPosted++;
        window.onBatchPosted();
        controlQueue.remove(controlFrames);
        ring.markPosted(dataLength);
        batchEnds[slot] = ring.posted();
        sendSeq++;
        sendsInFlight++;
        signaledInFlight++;
        if (carriesClose)
        {
            closeBatchSeq = seq;
        }
        return true;
    }

    private void countEagerFrames(final int start, final int dataLength)
    {
        int offset = start;
        final int end = start + dataLength;
        while (offset < end)
        {
            final int type = ring.frameType(offset);
            final int length = ring.frameLength(offset);
            if (type == Wire.FRAME_DATA)
            {
                stats.eagerMessagesSent++;
                stats.eagerBytesSent += length;
            }
            else if (type == Wire.FRAME_RTS)
            {
                outbound.rtsPosted((int)ring.frameId(offset));
            }
            offset += Wire.frameSize(type, length);
        }
    }

    private boolean postRendezvousWrite(final BufferPool.Buffer buffer)
    {
        final SendRequest req = sendRequest;
        req.reset();
        req.opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
            .immData(buffer.id)
            .remoteAddress(buffer.remoteAddress)
            .rkey(buffer.remoteRkey)
            .wrId((TAG_WRITE << TAG_SHIFT) | (buffer.id & 0xFFFF_FFFFL));
        req.setSge(buffer.region, 0, buffer.length);
        final int rc = qp.postSend(req);
        if (rc != PostResult.OK)
        {
            failLater(new PeerDisconnectedException(
                "posting a rendezvous write to " + remoteAddress + " failed: " + PostResult.toString(rc)));
            return false;
        }
        window.onWritePosted();
        signaledInFlight++;
        return true;
    }

    /** Queues a control frame (lock held); it leaves with the next batch. */
    private void enqueueControl(final int type, final int code, final long id, final long address, final int rkey, final int length)
    {
        controlQueue.add(type, code, id, address, rkey, length);
    }

    @Override
    public void onWritable(Runnable callback)
    {
        synchronized (lock)
        {
            if (!closeCallbacksRun)
            {
                writableWaiters.add(callback);
                callback = null;
            }
        }
        if (callback != null)
        {
            callback.run(); // closed: no poller will look at this connection again; the retry sees CLOSED
            return;
        }
        requestAttention();
    }

    private void onSendBufferReleased()
    {
        synchronized (lock)
        {
            writableEpoch++;
        }
        if (!writableWaiters.isEmpty())
        {
            requestAttention();
        }
    }

    /** Runs writable callbacks if anything progressed since the last back-pressure. Poller thread. */
    private void fireWritable()
    {
        synchronized (lock)
        {
            if (writableWaiters.isEmpty() || (backPressureEpoch == writableEpoch && state == STATE_CONNECTED))
            {
                return;
            }
            firing.addAll(writableWaiters);
            writableWaiters.clear();
        }
        for (int i = 0; i < firing.size(); i++)
        {
            try
            {
                firing.get(i).run();
            }
            catch (final Throwable t)
            {
                engine.onError(t);
            }
        }
        firing.clear();
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
            onSendCompletions(wc, n);
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
            if (!writableWaiters.isEmpty())
            {
                fireWritable();
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

    private void requestAttention()
    {
        attention = true;
        poller.wakeup();
    }

    private int onAttention()
    {
        if (state >= STATE_CLOSED)
        {
            fireWritable();
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
        synchronized (lock)
        {
            flushLocked();
        }
        if (state == STATE_CLOSING)
        {
            progressClose();
        }
        fireWritable();
        return 1;
    }

    private void onSendCompletions(final WorkCompletions wc, final int n)
    {
        for (int i = 0; i < n; i++)
        {
            final WcStatus status = wc.status(i);
            final long wrId = wc.wrId(i);
            final long tag = wrId >>> TAG_SHIFT;
            if (status != WcStatus.SUCCESS)
            {
                onErrorCompletion(status, tag == TAG_WRITE ? "rendezvous write" : tag == TAG_READY ? "ready write" : "SEND");
                continue;
            }
            if (tag == TAG_SEND)
            {
                final long seq = wrId & ID_MASK;
                synchronized (lock)
                {
                    ring.release(batchEnds[(int)(seq % controlSlots)]);
                    sendsInFlight--;
                    signaledInFlight--;
                    writableEpoch++;
                    if (seq == closeBatchSeq)
                    {
                        closeSendCompleted = true;
                    }
                }
            }
            else if (tag == TAG_WRITE)
            {
                final int id = (int)(wrId & 0xFFFF_FFFFL);
                final BufferPool.Buffer buffer;
                synchronized (lock)
                {
                    signaledInFlight--;
                    buffer = outbound.onWriteCompleted(id);
                    if (buffer != null)
                    {
                        stats.rendezvousMessagesSent++;
                        stats.rendezvousBytesSent += buffer.length;
                    }
                }
                if (buffer != null)
                {
                    sendPool.release(buffer);
                }
            }
        }
        synchronized (lock)
        {
            if (sendCqStalled)
            {
                sendCqStalled = false;
                flushLocked();
            }
        }
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
            stats.rnrErrors++;
        }
        failLater(new PeerDisconnectedException(what + " to " + remoteAddress + " failed with " + status +
            (status == WcStatus.RNR_RETRY_EXC_ERR ? " (the peer had no receive posted: an engine credit bug)" : "")));
    }

    /** The receive side re-posted {@code reposted} slots: owe them to the peer, and send if that is due. */
    void onReceivesReposted(final int reposted)
    {
        synchronized (lock)
        {
            window.onReceivesReposted(reposted);
            flushLocked();
        }
    }

    /** A batch from the peer returned credits. */
    void onCreditsReturned(final int returned)
    {
        synchronized (lock)
        {
            window.onCreditsReturned(returned);
        }
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
        final long id = frame.id();
        switch (type)
        {
            case Wire.CONTROL_CTS:
            {
                synchronized (lock)
                {
                    final String error = outbound.onClearToSend(id, frame.length(), frame.address(), frame.rkey());
                    if (error != null)
                    {
                        protocolErrorLocked(error);
                        return;
                    }
                }
                break;
            }
            case Wire.CONTROL_REFUSE:
            {
                final BufferPool.Buffer buffer;
                synchronized (lock)
                {
                    buffer = outbound.onRefuse(id);
                    if (buffer == null)
                    {
                        protocolErrorLocked("REFUSE for rendezvous " + id + " out of order");
                        return;
                    }
                }
                final int limit = frame.length();
                final int length = buffer.length;
                final long messageId = buffer.messageId;
                sendPool.release(buffer);
                reportFailedSend(messageId, length, new MessageRefusedException("message " + messageId + " of " + length +
                    " bytes refused by " + remoteAddress + ": larger than its maxInboundMessageSize of " + limit +
                    " bytes (the connection stays usable)", limit));
                break;
            }
            case Wire.CONTROL_CLOSE:
                closeReceived = true;
                synchronized (lock)
                {
                    if (state == STATE_CONNECTED)
                    {
                        state = STATE_CLOSING;
                        closeDeadlineNanos = System.nanoTime() + config.closeTimeoutNanos();
                        writableEpoch++;
                    }
                }
                break;
            default:
                protocolError("unknown control frame " + type);
        }
    }

    @Override
    public void clearToSend(final int id, final long address, final int rkey, final int length)
    {
        synchronized (lock)
        {
            enqueueControl(Wire.CONTROL_CTS, 0, id, address, rkey, length);
        }
    }

    @Override
    public void refuse(final int id, final int limit)
    {
        synchronized (lock)
        {
            enqueueControl(Wire.CONTROL_REFUSE, Wire.REFUSE_TOO_LARGE, id, 0, 0, limit);
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
        failLater(new PeerDisconnectedException("protocol error from " + remoteAddress + ": " + what));
    }

    private void protocolErrorLocked(final String what)
    {
        if (pendingFailure == null)
        {
            pendingFailure = new PeerDisconnectedException("protocol error from " + remoteAddress + ": " + what);
        }
        disconnected = true;
        requestAttention();
    }

    private volatile Throwable pendingFailure;

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

    /** Poller thread, now and then: lets a graceful close notice its deadline. */
    void tick()
    {
        if (state == STATE_CLOSING)
        {
            attention = true;
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
                writableEpoch++;
            }
        }
        requestAttention();
        return closeFuture;
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
        if (Thread.currentThread() == poller.thread())
        {
            return;
        }
        try
        {
            f.get(config.closeTimeoutNanos() + 1_000_000_000L, java.util.concurrent.TimeUnit.NANOSECONDS);
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
            if (!closeSent && ring.isFullyPosted() && outstandingClaims == 0 && outbound.isEmpty())
            {
                enqueueControl(Wire.CONTROL_CLOSE, 0, 0, 0, 0, 0);
                closeSent = true;
                flushLocked();
            }
            if (closeSent && closeSendCompleted && closeReceived && inbound.isEmpty() && !disconnectRequested)
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
        for (int guard = 0; guard < 1000; guard++)
        {
            int n = sendCq.poll(wc);
            if (n > 0)
            {
                onSendCompletions(wc, n);
            }
            int m = recvCq.poll(wc);
            if (m > 0)
            {
                receiver.onCompletions(wc, m);
            }
            if (n == 0 && m == 0)
            {
                break;
            }
        }
        final boolean graceful = pendingFailure == null && closeSent && closeReceived && closeSendCompleted;
        teardown(graceful ? null : pendingFailure != null ? pendingFailure : new PeerDisconnectedException(
            "connection to " + remoteAddress + " lost: the peer disconnected without closing (process died or engine closed)"));
    }

    private Throwable lostCause()
    {
        return closeCause != null ? closeCause : new EngineException("connection to " + remoteAddress + " was closed");
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
            closeCause = cause;
            writableEpoch++;
            // Frames committed but not known delivered: everything from head to tail.
            for (long p = ring.head(); p < ring.tail(); )
            {
                final int index = ring.indexOf(p);
                if (ring.frameType(index) == Wire.FRAME_DATA)
                {
                    failedFrames.add(new long[] {ring.frameId(index), ring.frameLength(index)});
                }
                p += ring.frameSize(index);
            }
            outbound.drainTo(failedRendezvous);
            controlQueue.clear();
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
            sendPool.release(buffer);
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
        final List<Consumer<Throwable>> callbacks;
        synchronized (lock)
        {
            closeCallbacksRun = true;
            callbacks = new ArrayList<>(closeCallbacks);
            closeCallbacks.clear();
        }
        for (final Consumer<Throwable> callback : callbacks)
        {
            runCloseCallback(callback, cause);
        }
        if (cause == null)
        {
            closeFuture.complete(null);
        }
        else
        {
            closeFuture.completeExceptionally(cause);
        }
        fireWritable();
    }

    private void runCloseCallback(final Consumer<Throwable> callback, final Throwable cause)
    {
        try
        {
            callback.accept(cause);
        }
        catch (final Throwable t)
        {
            engine.onError(t);
        }
    }

    /** Frees registered memory once no claim or retained buffer can still touch it. */
    private void maybeReleaseResources()
    {
        synchronized (lock)
        {
            if (resourcesReleased || state < STATE_CLOSED || outstandingClaims > 0 ||
                (recvPool != null && recvPool.buffersInUse() > 0) || (sendPool != null && sendPool.buffersInUse() > 0))
            {
                return;
            }
            resourcesReleased = true;
        }
        if (sendPool != null)
        {
            sendPool.close();
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
        if (qp != null)
        {
            qp.close();
        }
        sendCq.close();
        recvCq.close();
        pd.close();
    }

    private void reportFailedSend(final long messageId, final int length, final Throwable cause)
    {
        stats.failedSends++;
        final SendErrorHandler h = sendErrorHandler;
        if (h != null)
        {
            try
            {
                h.onSendFailed(messageId, length, cause);
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

    @Override
    public void setHandler(final MessageHandler handler)
    {
        receiver.handler(java.util.Objects.requireNonNull(handler, "handler"));
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
        final boolean runNow;
        final Throwable cause;
        synchronized (lock)
        {
            runNow = closeCallbacksRun;
            cause = closeCause;
            if (!runNow)
            {
                closeCallbacks.add(callback);
            }
        }
        if (runNow)
        {
            runCloseCallback(callback, cause);
        }
    }

    @Override
    public boolean isConnected()
    {
        return state == STATE_CONNECTED;
    }

    @Override
    public boolean isClosed()
    {
        return closeFuture.isDone();
    }

    @Override
    public String remoteAddress()
    {
        return remoteAddress;
    }

    @Override
    public int eagerLimit()
    {
        return sendEagerLimit;
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
            return window.credits();
        }
    }

    @Override
    public int creditsOwed()
    {
        synchronized (lock)
        {
            return window.owed();
        }
    }

    @Override
    public int poolBuffersInUse()
    {
        return (sendPool == null ? 0 : sendPool.buffersInUse()) + (recvPool == null ? 0 : recvPool.buffersInUse());
    }

    @Override
    public long poolBytesInUse()
    {
        return (sendPool == null ? 0 : sendPool.bytesInUse()) + (recvPool == null ? 0 : recvPool.bytesInUse());
    }

    long poolBytesAllocated()
    {
        return (sendPool == null ? 0 : sendPool.bytesAllocated()) + (recvPool == null ? 0 : recvPool.bytesAllocated());
    }

    @Override
    public long sendBytesInFlight()
    {
        synchronized (lock)
        {
            return state >= STATE_CLOSED ? 0 : ring.bytesInFlight();
        }
    }

    @Override
    public int pendingRendezvous()
    {
        final int out;
        synchronized (lock)
        {
            out = outbound.size();
        }
        return out + (inbound == null ? 0 : inbound.granted() + inbound.queued());
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
        return "Connection{" + remoteAddress + ", state=" + state + ", credits=" + window.credits() + ", owed=" +
            window.owed() + ", ring=" + ring.bytesInFlight() + "/" + ring.capacity() + '}';
    }
}
