package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.agrona.collections.Int2ObjectHashMap;
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
 * {@code credits} counts receives the peer has posted that this side has not consumed; every SEND
 * and every RDMA_WRITE_WITH_IMM consumes one. Data (eager batches, RTS, rendezvous writes) needs
 * two credits, so the last one is reserved for messages that return credits: a control-only
 * batch may use it only if it carries at least one credit back. Every batch returns all owed
 * credits; a control-only batch is sent when half of this side's receive window is owed. So the
 * peer always has a receive posted when a SEND arrives, and both sides can never be stuck at zero.
 *
 * <h2>Ordering</h2>
 * Frames leave in ring order. An eager frame behind an RTS waits until that rendezvous write is posted
 * (or refused), so a later eager message can never overtake a large one: RC keeps the order of
 * work requests, and the receiver sees completions in ring order. Up to
 * {@value #MAX_PIPELINED_RENDEZVOUS} RTS may be outstanding; the receiver answers them strictly in
 * order (CTS or REFUSE, queueing while its pool is exhausted) and the writes follow in that order.
 */
final class EngineConnection implements Connection
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
    private static final int NO_RENDEZVOUS = Integer.MIN_VALUE;
    /** Rendezvous announced and not yet written, at most: bounds what the peer must queue. */
    static final int MAX_PIPELINED_RENDEZVOUS = 8;

    final RdmaEngine engine;
    final EngineConfig config;
    final Poller poller;
    final boolean acceptor;
    private final ProtectionDomain pd;
    final CompletionQueue sendCq;
    final CompletionQueue recvCq;
    private final MemoryRegion recvRegion;
    private final UnsafeBuffer recvBuffer;
    private final int slotLength;
    private final int receiveSlots;
    private final MemoryRegion ringRegion;
    private final UnsafeBuffer ring;
    private final ByteBuffer ringByteBuffer;
    private final int ringCapacity;
    private final MemoryRegion readyRegion;
    private final RecvRequest recvRequest = new RecvRequest();
    private final SendRequest sendRequest = new SendRequest();
    private final Object lock = new Object();
    private final ConnectionStats stats = new ConnectionStats();
    private final int creditThreshold;

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
    private long tail;
    private long posted;
    private long head;
    private int credits;
    private int owed;
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
    /** Rendezvous whose RTS is posted, in RTS order, waiting for CTS or REFUSE (answered in that order). */
    private final java.util.ArrayDeque<BufferPool.Buffer> awaitingCts = new java.util.ArrayDeque<>();
    /** Rendezvous granted, in order, waiting for a credit to post their write. */
    private final java.util.ArrayDeque<BufferPool.Buffer> pendingWrites = new java.util.ArrayDeque<>();
    private boolean creditStalled;
    private long nextMessageId;
    private int outstandingClaims;
    private final Int2ObjectHashMap<BufferPool.Buffer> outbound = new Int2ObjectHashMap<>();
    private int[] ctlType = new int[16];
    private int[] ctlCode = new int[16];
    private long[] ctlId = new long[16];
    private long[] ctlAddress = new long[16];
    private int[] ctlRkey = new int[16];
    private int[] ctlLength = new int[16];
    private int ctlHead;
    private int ctlCount;
    private final ArrayList<Runnable> writableWaiters = new ArrayList<>();
    private final ArrayList<Runnable> firing = new ArrayList<>();
    private long writableEpoch;
    private long backPressureEpoch = -1;
    private boolean closeSent;
    private long closeBatchSeq = -1;
    private boolean closeSendCompleted;

    // ---- receiver side, poller thread only
    private final Int2ObjectHashMap<BufferPool.Buffer> inbound = new Int2ObjectHashMap<>();
    private int[] queuedRtsIds = new int[8];
    private int[] queuedRtsLengths = new int[8];
    private int queuedRtsHead;
    private int queuedRtsCount;
    private BufferPool.Buffer deliveringRendezvous;
    private UnsafeBuffer deliveringBuffer;
    private int deliveringOffset;
    private int deliveringLength;
    private final WorkCompletions singleCompletion = new WorkCompletions(1);
    private int parkedSlot = -1;
    private int parkedOffset;
    private int parkedEnd;
    private int parkedRendezvousId;
    private boolean closeReceived;
    private boolean disconnectRequested;
    private long closeDeadlineNanos;
    private boolean flushed;

    // ---- lifecycle
    private volatile int state = STATE_CONNECTED;
    private volatile boolean attention;
    private volatile boolean disconnected;
    private volatile MessageHandler handler;
    private volatile boolean receivePaused;
    private volatile SendErrorHandler sendErrorHandler;
    private volatile boolean resourcesReleased;
    private boolean closeCallbacksRun;
    /** Acceptor with a token: holds the connection back until the connector's first batch proves it (AuthGate). */
    volatile AuthGate authGate;
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
        this.receiveSlots = config.receiveSlots();
        this.slotLength = config.receiveSlotLength();
        this.recvRegion = pd.allocate(receiveSlots * slotLength, Access.LOCAL_WRITE);
        this.recvBuffer = recvRegion.buffer();
        this.ringCapacity = config.sendSlots() * Wire.dataFrameLength(config.eagerLimit());
        this.ringRegion = pd.allocate(ringCapacity, Access.LOCAL_WRITE);
        this.ring = ringRegion.buffer();
        this.ringByteBuffer = ringRegion.byteBuffer();
        this.creditThreshold = Math.max(1, receiveSlots / 2);
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
        for (int i = 0; i < receiveSlots; i++)
        {
            postReceive(i);
        }
        if (acceptor)
        {
            // Credits arrive with the connector's first batch, sent once it has seen our ready word.
            credits = 0;
            owed = 0;
        }
        else
        {
            credits = peerReceiveSlots;
            owed = receiveSlots; // announced by the first batch: our receives are all posted
        }
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

    /** Connector with a token: its proof opens the first batch (see Handshake). Call before anything is flushed. */
    void sendAuthProof(final long word0, final long word1)
    {
        synchronized (lock)
        {
            enqueueControl(Wire.CONTROL_AUTH, 0, word0, word1, 0, 0);
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
        return ringByteBuffer;
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
                index = claimRing(frameLength);
                if (index < 0)
                {
                    backPressureEpoch = writableEpoch;
                    return BACK_PRESSURED;
                }
                id = nextMessageId++;
                ring.putInt(index + Wire.FRAME_LENGTH_OFFSET, length);
                ring.putInt(index + Wire.FRAME_TYPE_OFFSET, -Wire.FRAME_DATA);
                ring.putLong(index + Wire.FRAME_ID_OFFSET, id);
                outstandingClaims++;
            }
            claim.wrap(this, ring, index + Wire.FRAME_HEADER_LENGTH, length, id, index, null);
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
            index = claimRing(Wire.FRAME_HEADER_LENGTH);
            if (index < 0)
            {
                backPressureEpoch = writableEpoch;
                sendPool.release(buffer);
                return BACK_PRESSURED;
            }
            id = nextMessageId++;
            ring.putInt(index + Wire.FRAME_LENGTH_OFFSET, length);
            ring.putInt(index + Wire.FRAME_TYPE_OFFSET, -Wire.FRAME_RTS);
            ring.putLong(index + Wire.FRAME_ID_OFFSET, id);
            buffer.id = (int)id;
            buffer.messageId = id;
            buffer.length = length;
            outstandingClaims++;
        }
        claim.wrap(this, buffer.buffer, 0, length, id, index, buffer);
        return OK;
    }

    /** @return index of frameLength contiguous bytes, or -1; pads to the end of the ring if needed. */
    private int claimRing(final int frameLength)
    {
        int index = (int)(tail % ringCapacity);
        final int toEnd = ringCapacity - index;
        final int padding = toEnd < frameLength ? toEnd : 0;
        if (ringCapacity - (tail - head) < (long)frameLength + padding)
        {
            return -1;
        }
        if (padding > 0)
        {
            ring.putInt(index + Wire.FRAME_LENGTH_OFFSET, padding);
            ring.putInt(index + Wire.FRAME_TYPE_OFFSET, Wire.FRAME_PAD);
            ring.putLong(index + Wire.FRAME_ID_OFFSET, -1);
            tail += padding;
            index = 0;
        }
        tail += frameLength;
        return index;
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
                outbound.put(rendezvous.id, rendezvous);
                ring.putInt(frameIndex + Wire.FRAME_TYPE_OFFSET, Wire.FRAME_RTS);
                flushLocked();
            }
            else
            {
                ring.putInt(frameIndex + Wire.FRAME_TYPE_OFFSET, Wire.FRAME_DATA);
                flushLocked();
            }
        }
        if (lost)
        {
            final long id = ring.getLong(frameIndex + Wire.FRAME_ID_OFFSET);
            final int length = rendezvous != null ? rendezvous.length : ring.getInt(frameIndex + Wire.FRAME_LENGTH_OFFSET);
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
                ring.putInt(frameIndex + Wire.FRAME_LENGTH_OFFSET,
                    rendezvous != null ? Wire.FRAME_HEADER_LENGTH : Wire.dataFrameLength(length));
                ring.putInt(frameIndex + Wire.FRAME_TYPE_OFFSET, Wire.FRAME_PAD);
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

    private static int frameSize(final int type, final int length)
    {
        switch (type)
        {
            case Wire.FRAME_DATA:
            case -Wire.FRAME_DATA:
                return Wire.dataFrameLength(length);
            case Wire.FRAME_RTS:
            case -Wire.FRAME_RTS:
                return Wire.FRAME_HEADER_LENGTH;
            default:
                return length; // PAD: its whole size
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
            while (!pendingWrites.isEmpty() && credits >= 2)
            {
                if (signaledInFlight >= maxSignaledInFlight)
                {
                    sendCqStalled = true;
                    return;
                }
                if (!postRendezvousWrite(pendingWrites.peekFirst()))
                {
                    return;
                }
                pendingWrites.pollFirst();
            }
            skipPadding();
            // An eager frame behind a rendezvous waits until that rendezvous is written, so that it
            // cannot overtake it; further RTS may go ahead (their writes follow in RTS order).
            final int outstanding = awaitingCts.size() + pendingWrites.size();
            final int controlFrames = Math.min(ctlCount, Wire.MAX_CONTROL_FRAMES_PER_BATCH);
            int dataLength = 0;
            if (credits >= 2)
            {
                final int budget = Wire.receiveSlotLength(peerEagerLimit) - Wire.BATCH_HEADER_LENGTH -
                    controlFrames * Wire.CONTROL_FRAME_LENGTH;
                int rtsInBatch = 0;
                long p = posted;
                while (p < tail)
                {
                    final int index = (int)(p % ringCapacity);
                    if (index == 0 && p != posted)
                    {
                        break; // a batch is one contiguous range of the ring: it ends where the ring wraps
                    }
                    final int type = ring.getInt(index + Wire.FRAME_TYPE_OFFSET);
                    if (type <= 0 || type == Wire.FRAME_PAD ||
                        (type == Wire.FRAME_DATA && (outstanding > 0 || rtsInBatch > 0)) ||
                        (type == Wire.FRAME_RTS && outstanding + rtsInBatch >= MAX_PIPELINED_RENDEZVOUS))
                    {
                        break;
                    }
                    final int size = frameSize(type, ring.getInt(index + Wire.FRAME_LENGTH_OFFSET));
                    if (dataLength + size > budget)
                    {
                        break;
                    }
                    dataLength += size;
                    p += size;
                    if (type == Wire.FRAME_RTS)
                    {
                        rtsInBatch++;
                    }
                }
            }
            else if (posted < tail && !creditStalled)
            {
                creditStalled = true;
                stats.creditStalls++;
            }
            if (dataLength == 0)
            {
                final boolean creditReturnDue = owed >= creditThreshold || (!acceptor && sendSeq == 0);
                if (controlFrames == 0 && !creditReturnDue)
                {
                    return;
                }
                // The last credit is reserved for batches that give credits back.
                if (!(credits >= 2 || (credits == 1 && owed >= 1)))
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

    private void skipPadding()
    {
        final long before = posted;
        while (posted < tail)
        {
            final int index = (int)(posted % ringCapacity);
            if (ring.getInt(index + Wire.FRAME_TYPE_OFFSET) != Wire.FRAME_PAD)
            {
                break;
            }
            posted += ring.getInt(index + Wire.FRAME_LENGTH_OFFSET);
        }
        if (posted != before)
        {
            if (sendsInFlight == 0)
            {
                head = posted;
                writableEpoch++;
            }
            else
            {
                batchEnds[(int)((sendSeq - 1) % controlSlots)] = posted;
            }
        }
    }

    private boolean postBatch(final int controlFrames, final int dataLength)
    {
        final long seq = sendSeq;
        final int slot = (int)(seq % controlSlots);
        final int base = slot * Wire.CONTROL_SLOT_LENGTH;
        control.putInt(base + Wire.BATCH_CREDITS_OFFSET, owed);
        control.putInt(base + Wire.BATCH_CONTROL_LENGTH_OFFSET, controlFrames * Wire.CONTROL_FRAME_LENGTH);
        control.putLong(base + Wire.BATCH_SEQUENCE_OFFSET, seq);
        boolean carriesClose = false;
        for (int i = 0; i < controlFrames; i++)
        {
            final int q = (ctlHead + i) % ctlType.length;
            final int f = base + Wire.BATCH_HEADER_LENGTH + i * Wire.CONTROL_FRAME_LENGTH;
            control.putInt(f + Wire.CONTROL_TYPE_OFFSET, ctlType[q]);
            control.putInt(f + Wire.CONTROL_CODE_OFFSET, ctlCode[q]);
            control.putLong(f + Wire.CONTROL_ID_OFFSET, ctlId[q]);
            control.putLong(f + Wire.CONTROL_ADDRESS_OFFSET, ctlAddress[q]);
            control.putInt(f + Wire.CONTROL_RKEY_OFFSET, ctlRkey[q]);
            control.putInt(f + Wire.CONTROL_LENGTH_OFFSET, ctlLength[q]);
            carriesClose |= ctlType[q] == Wire.CONTROL_CLOSE;
        }
        final SendRequest req = sendRequest;
        req.reset();
        req.wrId((TAG_SEND << TAG_SHIFT) | seq);
        req.opcode(WrOpcode.SEND);
        req.setSge(controlRegion, base, Wire.BATCH_HEADER_LENGTH + controlFrames * Wire.CONTROL_FRAME_LENGTH);
        final int start = (int)(posted % ringCapacity);
        if (dataLength > 0)
        {
            req.addSge(ringRegion.address() + start, dataLength, ringRegion.lkey());
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
        credits--;
        owed = 0;
        ctlHead = (ctlHead + controlFrames) % ctlType.length;
        ctlCount -= controlFrames;
        posted += dataLength;
        batchEnds[slot] = posted;
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
            final int type = ring.getInt(offset + Wire.FRAME_TYPE_OFFSET);
            final int length = ring.getInt(offset + Wire.FRAME_LENGTH_OFFSET);
            if (type == Wire.FRAME_DATA)
            {
                stats.eagerMessagesSent++;
                stats.eagerBytesSent += length;
            }
            else if (type == Wire.FRAME_RTS)
            {
                awaitingCts.addLast(outbound.get((int)ring.getLong(offset + Wire.FRAME_ID_OFFSET)));
            }
            offset += frameSize(type, length);
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
        credits--;
        signaledInFlight++;
        return true;
    }

    /** Queues a control frame (lock held); it leaves with the next batch. */
    private void enqueueControl(final int type, final int code, final long id, final long address, final int rkey, final int length)
    {
        if (ctlCount == ctlType.length)
        {
            growControlQueue();
        }
        final int q = (ctlHead + ctlCount) % ctlType.length;
        ctlType[q] = type;
        ctlCode[q] = code;
        ctlId[q] = id;
        ctlAddress[q] = address;
        ctlRkey[q] = rkey;
        ctlLength[q] = length;
        ctlCount++;
    }

    private void growControlQueue()
    {
        final int n = ctlType.length * 2;
        final int[] type = new int[n];
        final int[] code = new int[n];
        final long[] id = new long[n];
        final long[] address = new long[n];
        final int[] rkey = new int[n];
        final int[] length = new int[n];
        for (int i = 0; i < ctlCount; i++)
        {
            final int q = (ctlHead + i) % ctlType.length;
            type[i] = ctlType[q];
            code[i] = ctlCode[q];
            id[i] = ctlId[q];
            address[i] = ctlAddress[q];
            rkey[i] = ctlRkey[q];
            length[i] = ctlLength[q];
        }
        ctlType = type;
        ctlCode = code;
        ctlId = id;
        ctlAddress = address;
        ctlRkey = rkey;
        ctlLength = length;
        ctlHead = 0;
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
        if (pollReceives(wc))
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
        grantQueuedRendezvous();
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
                    head = batchEnds[(int)(seq % controlSlots)];
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
                    buffer = outbound.remove(id);
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

    private void onErrorCompletion(final WcStatus status, final String what)
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

    private void onReceiveCompletions(final WorkCompletions wc, final int n)
    {
        int reposted = 0;
        for (int i = 0; i < n; i++)
        {
            final WcStatus status = wc.status(i);
            if (status != WcStatus.SUCCESS)
            {
                onErrorCompletion(status, "receive");
                continue;
            }
            final int slot = (int)wc.wrId(i);
            final boolean done;
            if (wc.opcode(i) == WcOpcode.RECV_RDMA_WITH_IMM)
            {
                done = onRendezvousData(slot, wc.immData(i));
            }
            else
            {
                done = onBatch(slot, wc.byteLen(i));
            }
            if (state >= STATE_CLOSED)
            {
                return;
            }
            if (done && !disconnected && postReceive(slot))
            {
                reposted++;
            }
        }
        synchronized (lock)
        {
            owed += reposted;
            flushLocked();
        }
    }

    /**
     * Before a handler is set, receives are taken one at a time; one that holds a message is parked
     * (not re-posted, and nothing after it is taken) until the handler arrives. Credits and control
     * frames keep flowing until then, so a send-only user need not set a handler at all.
     */
    private boolean pollReceives(final WorkCompletions wc)
    {
        if (receivePaused)
        {
            return false;
        }
        if (parkedSlot >= 0)
        {
            if (handler == null)
            {
                return false;
            }
            final int slot = parkedSlot;
            parkedSlot = -1;
            final boolean done = parkedRendezvousId != NO_RENDEZVOUS ?
                onRendezvousData(slot, parkedRendezvousId) : onBatchFrames(slot, parkedOffset, parkedEnd);
            if (done && state < STATE_CLOSED && !disconnected && postReceive(slot))
            {
                synchronized (lock)
                {
                    owed++;
                    flushLocked();
                }
            }
            return true;
        }
        final WorkCompletions target = handler != null ? wc : singleCompletion;
        final int n = recvCq.poll(target);
        if (n > 0)
        {
            onReceiveCompletions(target, n);
            return true;
        }
        return false;
    }

    private boolean postReceive(final int slot)
    {
        recvRequest.wrId(slot);
        recvRequest.setSge(recvRegion, slot * slotLength, slotLength);
        final int rc = qp.postRecv(recvRequest);
        if (rc != PostResult.OK)
        {
            failLater(new PeerDisconnectedException("re-posting a receive failed: " + PostResult.toString(rc)));
            return false;
        }
        return true;
    }

    /** @return false if parked (no handler yet): the slot is not to be re-posted now. */
    private boolean onBatch(final int slot, final int byteLength)
    {
        final int base = slot * slotLength;
        if (byteLength < Wire.BATCH_HEADER_LENGTH)
        {
            protocolError("batch of " + byteLength + " bytes");
            return true;
        }
        final int returned = recvBuffer.getInt(base + Wire.BATCH_CREDITS_OFFSET);
        final int controlLength = recvBuffer.getInt(base + Wire.BATCH_CONTROL_LENGTH_OFFSET);
        if (returned < 0 || controlLength < 0 || controlLength > Wire.MAX_CONTROL_SECTION ||
            Wire.BATCH_HEADER_LENGTH + controlLength > byteLength)
        {
            protocolError("bad batch header (credits " + returned + ", control " + controlLength + ")");
            return true;
        }
        final AuthGate gate = authGate;
        if (gate != null)
        {
            if (!gate.admit(this, recvBuffer, base + Wire.BATCH_HEADER_LENGTH, controlLength))
            {
                return true; // refused: the gate's outcome aborts the connection
            }
            authGate = null;
        }
        if (returned > 0)
        {
            synchronized (lock)
            {
                credits += returned;
            }
        }
        int offset = base + Wire.BATCH_HEADER_LENGTH;
        final int controlEnd = offset + controlLength;
        for (; offset < controlEnd; offset += Wire.CONTROL_FRAME_LENGTH)
        {
            onControlFrame(offset);
        }
        return onBatchFrames(slot, offset, base + byteLength);
    }

    private boolean onBatchFrames(final int slot, final int start, final int end)
    {
        int offset = start;
        while (offset < end)
        {
            if (end - offset < Wire.FRAME_HEADER_LENGTH)
            {
                protocolError("truncated frame");
                return true;
            }
            final int length = recvBuffer.getInt(offset + Wire.FRAME_LENGTH_OFFSET);
            final int type = recvBuffer.getInt(offset + Wire.FRAME_TYPE_OFFSET);
            if (type == Wire.FRAME_DATA)
            {
                if (length < 0 || offset + Wire.FRAME_HEADER_LENGTH + length > end)
                {
                    protocolError("data frame of " + length + " bytes overruns its batch");
                    return true;
                }
                final MessageHandler h = handler;
                if (h == null)
                {
                    park(slot, offset, end, NO_RENDEZVOUS);
                    return false;
                }
                stats.eagerMessagesReceived++;
                stats.eagerBytesReceived += length;
                deliver(h, recvBuffer, offset + Wire.FRAME_HEADER_LENGTH, length, null);
                offset += Wire.dataFrameLength(length);
            }
            else if (type == Wire.FRAME_RTS)
            {
                onRequestToSend((int)recvBuffer.getLong(offset + Wire.FRAME_ID_OFFSET), length);
                offset += Wire.FRAME_HEADER_LENGTH;
            }
            else
            {
                protocolError("unknown frame type " + type);
                return true;
            }
        }
        return true;
    }

    private void park(final int slot, final int offset, final int end, final int rendezvousId)
    {
        parkedSlot = slot;
        parkedOffset = offset;
        parkedEnd = end;
        parkedRendezvousId = rendezvousId;
    }

    private void deliver(
        final MessageHandler h, final UnsafeBuffer buffer, final int offset, final int length, final BufferPool.Buffer rendezvous)
    {
        deliveringBuffer = buffer;
        deliveringOffset = offset;
        deliveringLength = length;
        deliveringRendezvous = rendezvous;
        try
        {
            if (h != null)
            {
                h.onMessage(buffer, offset, length);
            }
        }
        catch (final Throwable t)
        {
            engine.onError(new EngineException("message handler of connection to " + remoteAddress + " threw", t));
        }
        finally
        {
            deliveringBuffer = null;
            deliveringRendezvous = null;
        }
    }

    @Override
    public RetainedMessage retain()
    {
        if (deliveringBuffer == null || Thread.currentThread() != poller.thread())
        {
            throw new IllegalStateException("retain() is only valid inside MessageHandler.onMessage, on the poller thread");
        }
        final BufferPool.Buffer rendezvous = deliveringRendezvous;
        if (rendezvous != null)
        {
            rendezvous.retained = true;
            return rendezvous;
        }
        final UnsafeBuffer copy = new UnsafeBuffer(new byte[deliveringLength]);
        copy.putBytes(0, deliveringBuffer, deliveringOffset, deliveringLength);
        final int length = deliveringLength;
        return new RetainedMessage()
        {
            public org.agrona.DirectBuffer buffer()
            {
                return copy;
            }

            public int offset()
            {
                return 0;
            }

            public int length()
            {
                return length;
            }

            public void release()
            {
            }
        };
    }

    private void onControlFrame(final int offset)
    {
        final int type = recvBuffer.getInt(offset + Wire.CONTROL_TYPE_OFFSET);
        final long id = recvBuffer.getLong(offset + Wire.CONTROL_ID_OFFSET);
        switch (type)
        {
            case Wire.CONTROL_CTS:
            {
                synchronized (lock)
                {
                    final BufferPool.Buffer buffer = awaitingCts.peekFirst();
                    if (buffer == null || buffer.id != (int)id)
                    {
                        protocolErrorLocked("CTS for rendezvous " + id + " out of order");
                        return;
                    }
                    if (recvBuffer.getInt(offset + Wire.CONTROL_LENGTH_OFFSET) < buffer.length)
                    {
                        protocolErrorLocked("CTS granted fewer bytes than rendezvous " + id + " needs");
                        return;
                    }
                    awaitingCts.pollFirst();
                    buffer.remoteAddress = recvBuffer.getLong(offset + Wire.CONTROL_ADDRESS_OFFSET);
                    buffer.remoteRkey = recvBuffer.getInt(offset + Wire.CONTROL_RKEY_OFFSET);
                    pendingWrites.addLast(buffer);
                }
                break;
            }
            case Wire.CONTROL_REFUSE:
            {
                final BufferPool.Buffer buffer;
                synchronized (lock)
                {
                    buffer = awaitingCts.peekFirst();
                    if (buffer == null || buffer.id != (int)id)
                    {
                        protocolErrorLocked("REFUSE for rendezvous " + id + " out of order");
                        return;
                    }
                    awaitingCts.pollFirst();
                    outbound.remove((int)id);
                }
                final int limit = recvBuffer.getInt(offset + Wire.CONTROL_LENGTH_OFFSET);
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
            case Wire.CONTROL_AUTH:
                break; // checked by the AuthGate before this batch was processed
            default:
                protocolError("unknown control frame " + type);
        }
    }

    /** RTS are answered strictly in arrival order (CTS or REFUSE), so a queued one holds later ones back. */
    private void onRequestToSend(final int id, final int length)
    {
        if (queuedRtsCount == queuedRtsIds.length)
        {
            final int[] ids = new int[queuedRtsIds.length * 2];
            final int[] lengths = new int[ids.length];
            for (int i = 0; i < queuedRtsCount; i++)
            {
                ids[i] = queuedRtsIds[(queuedRtsHead + i) % queuedRtsIds.length];
                lengths[i] = queuedRtsLengths[(queuedRtsHead + i) % queuedRtsIds.length];
            }
            queuedRtsIds = ids;
            queuedRtsLengths = lengths;
            queuedRtsHead = 0;
        }
        final int q = (queuedRtsHead + queuedRtsCount) % queuedRtsIds.length;
        queuedRtsIds[q] = id;
        queuedRtsLengths[q] = length;
        queuedRtsCount++;
        grantQueuedRendezvous();
        if (queuedRtsCount > 0)
        {
            stats.rendezvousQueued++; // this one waits for a buffer (its own or an earlier one's)
        }
    }

    private boolean grant(final int id, final int length)
    {
        final BufferPool.Buffer buffer = recvPool.acquire(length);
        if (buffer == null)
        {
            return false;
        }
        buffer.id = id;
        buffer.length = length;
        inbound.put(id, buffer);
        synchronized (lock)
        {
            enqueueControl(Wire.CONTROL_CTS, 0, id, buffer.region.address(), buffer.region.rkey(), buffer.sizeClass);
        }
        return true;
    }

    private void grantQueuedRendezvous()
    {
        while (queuedRtsCount > 0)
        {
            final int q = queuedRtsHead;
            final int id = queuedRtsIds[q];
            final int length = queuedRtsLengths[q];
            if (length > config.maxInboundMessageSize())
            {
                stats.rendezvousRefused++;
                synchronized (lock)
                {
                    enqueueControl(Wire.CONTROL_REFUSE, Wire.REFUSE_TOO_LARGE, id, 0, 0, config.maxInboundMessageSize());
                }
            }
            else if (!grant(id, length))
            {
                return;
            }
            queuedRtsHead = (queuedRtsHead + 1) % queuedRtsIds.length;
            queuedRtsCount--;
        }
    }

    private boolean onRendezvousData(final int slot, final int id)
    {
        final MessageHandler h = handler;
        if (h == null)
        {
            park(slot, 0, 0, id);
            return false;
        }
        final BufferPool.Buffer buffer = inbound.remove(id);
        if (buffer == null)
        {
            protocolError("rendezvous data for unknown id " + id);
            return true;
        }
        stats.rendezvousMessagesReceived++;
        stats.rendezvousBytesReceived += buffer.length;
        deliver(h, buffer.buffer, 0, buffer.length, buffer);
        if (!buffer.retained)
        {
            recvPool.release(buffer);
        }
        grantQueuedRendezvous();
        return true;
    }

    private void onRecvBufferReleased()
    {
        if (queuedRtsCount > 0 || state >= STATE_CLOSED)
        {
            requestAttention();
        }
        if (state >= STATE_CLOSED)
        {
            maybeReleaseResources();
        }
    }

    private void protocolError(final String what)
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
    private void failLater(final Throwable cause)
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
            if (!closeSent && posted == tail && outstandingClaims == 0 && outbound.isEmpty())
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
                onReceiveCompletions(wc, m);
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
            long p = head;
            while (p < tail)
            {
                final int index = (int)(p % ringCapacity);
                final int type = ring.getInt(index + Wire.FRAME_TYPE_OFFSET);
                final int length = ring.getInt(index + Wire.FRAME_LENGTH_OFFSET);
                if (type == Wire.FRAME_DATA)
                {
                    failedFrames.add(new long[] {ring.getLong(index + Wire.FRAME_ID_OFFSET), length});
                }
                p += frameSize(type, length);
            }
            outbound.values().forEach(failedRendezvous::add);
            outbound.clear();
            awaitingCts.clear();
            pendingWrites.clear();
            ctlCount = 0;
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
        inbound.values().forEach(recvPool::release);
        inbound.clear();
        queuedRtsCount = 0;
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
        this.handler = java.util.Objects.requireNonNull(handler, "handler");
        requestAttention();
    }

    @Override
    public void pauseReceiving(final boolean paused)
    {
        receivePaused = paused;
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
        return receiveSlots;
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
            return credits;
        }
    }

    @Override
    public int creditsOwed()
    {
        synchronized (lock)
        {
            return owed;
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
            return state >= STATE_CLOSED ? 0 : tail - head;
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
        return out + inbound.size() + queuedRtsCount;
    }

    @Override
    public int queuedRendezvousRequests()
    {
        return queuedRtsCount;
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

    @Override
    public String toString()
    {
        return "Connection{" + remoteAddress + ", state=" + state + ", credits=" + credits + ", owed=" + owed +
            ", ring=" + (tail - head) + "/" + ringCapacity + '}';
    }
}
