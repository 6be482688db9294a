package io.reverb.rdma.provider.shm;

import io.reverb.rdma.provider.base.AbstractQueuePair;
import io.reverb.rdma.provider.base.RegionChecks;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.QpState;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.RemoteMapping;
import io.reverb.rdma.verbs.ScatterGatherList;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.agrona.collections.Int2ObjectHashMap;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An RC queue pair of the shm fabric.
 *
 * <p>{@link #postSend} plays the part of both NICs: it validates the local SGEs, then (for SEND)
 * claims the peer's next posted receive from the peer's {@link RecvRing}, copies into the peer's
 * receive buffers and publishes the receive completion into the peer's {@link CqRing} (ringing the
 * doorbell if that CQ is armed), or (for RDMA) checks the peer region's header and copies directly.
 * The work request is complete when {@code postSend} returns; its completion is written only if it
 * was signaled or failed.
 *
 * <p>Semantics chosen where ibverbs leaves room:
 * <ul>
 *   <li>A SEND larger than the posted receive: the receiver gets LOC_LEN_ERR, the sender
 *       REM_INV_REQ_ERR (as an RC responder NAKs with "invalid request").</li>
 *   <li>A receive whose SGE is invalid (bad lkey, bounds, no LOCAL_WRITE): receiver LOC_PROT_ERR,
 *       sender REM_OP_ERR.</li>
 *   <li>RNR: the sender retries for {@link io.reverb.rdma.verbs.VerbsConfig#rnrRetryNanos()} (on the
 *       posting thread: posting blocks that long), then RNR_RETRY_EXC_ERR.</li>
 *   <li>Any error completion ends the connection, on both sides: the QP goes to ERROR, its socket is
 *       closed (the peer sees EOF and goes to ERROR too), posted receives are flushed with
 *       WR_FLUSH_ERR, later requests are flushed, and each side's disconnect handler runs once.</li>
 *   <li>Flushed send requests always produce a completion, signaled or not.</li>
 *   <li>{@code maxSendWr} is never reached: a request is finished when {@code postSend} returns, so
 *       postSend never answers QUEUE_FULL. {@code maxRecvWr} is rounded up to a power of two.</li>
 *   <li>Inbox mode ({@link io.reverb.rdma.verbs.VerbsConfig#shmInlineReceive()}, see {@link RecvRing}): the
 *       receive completions of this QP are written by the sender into this QP's inbox and read by the receive
 *       CQ's poller, which also flushes the posted receives after an error (when it next polls). A SEND of at most
 *       {@link RecvRing#INLINE_MAX} bytes that fits every posted receive carries its bytes in the slot; the poller
 *       copies them into the posted buffer. If that buffer's region was deregistered after the receive was posted,
 *       the receive completes with LOC_PROT_ERR while the sender's SEND had already completed successfully (the QP
 *       goes to ERROR as for any error).</li>
 *   <li>Known limits: a peer process killed in the few instructions between claiming a CQ slot and
 *       publishing it leaves that CQ stuck at the slot (the poller cannot tell a dead producer from a
 *       slow one); a receive the dying peer had claimed but not yet completed is neither completed
 *       nor flushed (in inbox mode it is flushed, with those after it, once the poller finds the peer's
 *       process gone).</li>
 * </ul>
 */
final class ShmQueuePair extends AbstractQueuePair<ShmProtectionDomain, ShmCompletionQueue>
{
    private static final Logger LOG = LoggerFactory.getLogger(ShmQueuePair.class);

    private final ShmVerbsContext context;
    private final long rnrRetryNanos;

    private final Path recvQueueFile;
    private final MappedByteBuffer recvQueueMapping;
    private final RecvRing recvRing;
    /** Whether this QP receives through its inbox (its receive CQ's poller reads it). */
    private final boolean inbox;
    /** Inbox mode: whether the receive CQ polls the inbox, so it (not this QP) unmaps it once closed (recvLock). */
    private boolean inboxAttached;
    private boolean recvQueueUnmapped;

    private final Object sendLock = new Object();
    private final Object recvLock = new Object();
    private final Object writeLock = new Object();
    private final AtomicBoolean down = new AtomicBoolean();
    private volatile boolean closed;
    private boolean established;

    // Peer, set once by attachPeer.
    private String peerPrefix;
    private int peerPdId;
    private int peerQpNum;
    private int peerRecvCqId;
    private MappedByteBuffer peerRecvQueueMapping;
    private MappedByteBuffer peerRecvCqMapping;
    private RecvRing peerRecvRing;
    private CqRing peerRecvCq;
    /** Whether the peer QP receives through its inbox (then every receive completion for it goes there). */
    private boolean peerInbox;
    private volatile SocketChannel socket;

    // Scratch state of the send path, reused under sendLock so posting allocates nothing.
    private final Int2ObjectHashMap<RemoteRegion> remoteRegions = new Int2ObjectHashMap<>();
    private int remoteMappingsOpen;
    private final ScatterGatherList peerReceive = new ScatterGatherList();
    private final long[] claimedWrId = new long[1];
    private long claimedIndex;
    /** Inbox-mode peer: receives of the peer this QP consumed (it alone consumes them; under sendLock). */
    private long peerNext;
    /** SENDs whose bytes went inside the peer's inbox slot (tests; under sendLock). */
    private long inlineSends;
    private final UnsafeBuffer[] srcBuffers = new UnsafeBuffer[ScatterGatherList.MAX_SGE];
    private final int[] srcOffsets = new int[ScatterGatherList.MAX_SGE];
    private final int[] srcLengths = new int[ScatterGatherList.MAX_SGE];
    private int srcCount;
    private final UnsafeBuffer[] dstBuffers = new UnsafeBuffer[ScatterGatherList.MAX_SGE];
    private final int[] dstOffsets = new int[ScatterGatherList.MAX_SGE];
    private final int[] dstLengths = new int[ScatterGatherList.MAX_SGE];
    private int dstCount;
    private final ByteBuffer doorbellFrame = ByteBuffer.allocateDirect(Handshake.FRAME_LENGTH);
    private boolean doorbellDropLogged;

    // Scratch of the flush path, under recvLock.
    private final ScatterGatherList flushScratch = new ScatterGatherList();
    private final long[] flushWrId = new long[1];

    // The receive CQ's poller only (inbox mode).
    private long inboxNext;
    private final ScatterGatherList inboxReceive = new ScatterGatherList();
    private final ShmMemoryRegion[] inboxRegions = new ShmMemoryRegion[ScatterGatherList.MAX_SGE];
    private final int[] inboxOffsets = new int[ScatterGatherList.MAX_SGE];
    private boolean malformedLogged;
    /** Polls of a down QP that found the next receive claimed by a sender and not yet published. */
    private int stuckPolls;
    private boolean peerGone;

    // Event thread only.
    private final ByteBuffer readBuffer = ByteBuffer.allocateDirect(Handshake.FRAME_LENGTH * 64);

    ShmQueuePair(
        final ShmVerbsContext context,
        final int qpNum,
        final QueuePairAttributes attributes,
        final Path recvQueueFile,
        final MappedByteBuffer recvQueueMapping,
        final int recvQueueEntries,
        final String remoteAddress)
    {
        super(qpNum, attributes, remoteAddress, QpState.INIT);
        this.context = context;
        this.rnrRetryNanos = context.config().rnrRetryNanos();
        this.recvQueueFile = recvQueueFile;
        this.recvQueueMapping = recvQueueMapping;
        final UnsafeBuffer buffer = new UnsafeBuffer(recvQueueMapping);
        RecvRing.LAYOUT.initialise(buffer, recvQueueEntries);
        this.recvRing = new RecvRing(buffer);
        this.inbox = context.config().shmInlineReceive();
        if (inbox)
        {
            recvRing.enableInbox();
        }
        recvCq.receivesCompletions(); // its peer will write into it (and an inbox may attach)
    }

    /** @return the handshake message describing this QP to its peer. */
    Handshake describe(final int type, final byte[] privateData)
    {
        final Handshake message = new Handshake();
        message.type = type;
        message.pid = ProcessHandle.current().pid();
        message.prefix = context.prefix();
        message.qpNum = qpNum;
        message.pdId = pd.id();
        message.recvCqId = recvCq.id();
        message.recvQueueFile = recvQueueFile.getFileName().toString();
        message.recvCqFile = recvCq.file().getFileName().toString();
        message.privateData = privateData;
        return message;
    }

    /** Maps the peer's receive queue and receive CQ (cold path, before the QP is usable). */
    void attachPeer(final Handshake peer) throws IOException
    {
        if (!peer.recvQueueFile.startsWith(peer.prefix + "-") || !peer.recvCqFile.startsWith(peer.prefix + "-"))
        {
            throw new IOException("shm peer names files outside its own prefix");
        }
        peerPrefix = peer.prefix;
        peerPdId = peer.pdId;
        peerQpNum = peer.qpNum;
        peerRecvCqId = peer.recvCqId;
        remotePrivateData(ByteBuffer.wrap(peer.privateData));

        peerRecvQueueMapping = ShmFiles.mapExisting(context.peerFile(peer.recvQueueFile));
        peerRecvCqMapping = ShmFiles.mapExisting(context.peerFile(peer.recvCqFile));
        if (peerRecvQueueMapping == null || peerRecvCqMapping == null)
        {
            throw new IOException("shm peer's queue files are missing (" + peer.recvQueueFile + ", " +
                peer.recvCqFile + "); is the peer using the same shm directory " + context.directory() + "?");
        }
        final UnsafeBuffer rq = new UnsafeBuffer(peerRecvQueueMapping);
        final UnsafeBuffer cq = new UnsafeBuffer(peerRecvCqMapping);
        if (!RecvRing.LAYOUT.isValid(rq) || !CqRing.LAYOUT.isValid(cq))
        {
            throw new IOException("shm peer's queue files are malformed");
        }
        peerRecvRing = new RecvRing(rq);
        peerRecvCq = new CqRing(cq);
        peerInbox = peerRecvRing.isInbox();
    }

    /** Connected: hand the socket to the event thread and become ready to send. */
    void start(final SocketChannel socket)
    {
        this.socket = socket;
        synchronized (sendLock)
        {
            established = true;
        }
        if (inbox)
        {
            synchronized (recvLock)
            {
                inboxAttached = !closed && recvCq.attachInbox(this);
            }
        }
        state = QpState.RTS;
        context.eventLoop().register(this);
    }

    /** Connector side: attach the acceptor's files and start. */
    void establish(final Handshake accept, final SocketChannel socket) throws IOException
    {
        attachPeer(accept);
        start(socket);
    }

    /**
     * Event thread, once the socket is non-blocking: the receive CQ's channel watches the socket for doorbells too, so
     * that a doorbell wakes its waiter directly ({@link ShmCompletionChannel}).
     */
    void watchDoorbells()
    {
        final ShmCompletionChannel channel = recvCq.shmChannel();
        if (channel != null)
        {
            channel.watch(socket, recvCq);
        }
    }

    SocketChannel socket()
    {
        return socket;
    }

    ByteBuffer readBuffer()
    {
        return readBuffer;
    }

    @Override
    public int postRecv(final RecvRequest request)
    {
        synchronized (recvLock)
        {
            final int checked = checkRecv(request, closed);
            if (checked != PostResult.OK)
            {
                return checked;
            }
            if (state == QpState.ERROR && !inboxAttached)
            {
                // goDown() sets ERROR before flushing under recvLock, so nothing posted here can be missed.
                if (!recvCq.offer(request.wrId(), WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qpNum))
                {
                    return PostResult.QUEUE_FULL;
                }
                return PostResult.OK;
            }
            if (inbox)
            {
                // Before the tail is published: a sender that sees this receive sees the floor it set.
                recvRing.lowerInlineFloor(inlineFit(request));
            }
            // In inbox mode after an error too: the poller flushes it after the receives posted before it.
            return recvRing.offer(request, inbox) ? PostResult.OK : PostResult.QUEUE_FULL;
        }
    }

    /** @return the longest message this receive takes (capped), or -1 if one of its SGEs is not writable memory. */
    private int inlineFit(final RecvRequest request)
    {
        long total = 0;
        for (int i = 0; i < request.sgeCount(); i++)
        {
            final long address = request.sgeAddress(i);
            final int length = request.sgeLength(i);
            final ShmMemoryRegion region = context.region(RegionChecks.indexOfAddress(address));
            if (RegionChecks.localOffset(region, pd, request.sgeLkey(i), address, length, true) == RegionChecks.DENIED)
            {
                return -1;
            }
            total += length;
        }
        return (int)Math.min(total, RecvRing.INLINE_MAX);
    }

    @Override
    public int postSend(final SendRequest request)
    {
        request.completedAtPost(false);
        synchronized (sendLock)
        {
            final int checked = checkSend(request, closed);
            if (checked != PostResult.OK)
            {
                return checked;
            }
            final WrOpcode opcode = request.opcode();
            final long total = request.totalLength();
            if (state != QpState.RTS || peerRecvRing.state() != RecvRing.STATE_OK)
            {
                completeSend(request, WcStatus.WR_FLUSH_ERR, 0);
                if (established)
                {
                    goDown();
                }
                return PostResult.OK;
            }

            final WcStatus status = execute(request, opcode, (int)total);
            if (status == WcStatus.SUCCESS)
            {
                request.completedAtPost(true); // the bytes are in the peer's memory (completesAtPost)
                if (request.isSignaled())
                {
                    completeSend(request, WcStatus.SUCCESS, (int)total);
                }
            }
            else
            {
                completeSend(request, status, 0);
                goDown();
            }
            return PostResult.OK;
        }
    }

    private WcStatus execute(final SendRequest request, final WrOpcode opcode, final int total)
    {
        final boolean solicited = (request.flags() & SendRequest.FLAG_SOLICITED) != 0;
        switch (opcode)
        {
            case SEND:
            case SEND_WITH_IMM:
            {
                if (!resolveLocal(request, false, true))
                {
                    return WcStatus.LOC_PROT_ERR;
                }
                final WcStatus claim = claimPeerReceive(!peerInbox);
                if (claim != WcStatus.SUCCESS)
                {
                    return claim;
                }
                final boolean withImm = opcode == WrOpcode.SEND_WITH_IMM;
                final int imm = withImm ? request.immData() : 0;
                final int wcFlags = withImm ? WorkCompletions.WC_WITH_IMM : 0;
                if (peerInbox && peerRecvRing.fitsInline(total))
                {
                    // Bytes and completion in one slot: the peer's poller copies them into the posted receive.
                    copyToSlot(peerRecvRing.buffer(), peerRecvRing.slotOffset(claimedIndex) + RecvRing.SLOT_DATA);
                    inlineSends++;
                    deliverToPeer(WcStatus.SUCCESS, WcOpcode.RECV, total, imm, wcFlags, solicited, RecvRing.KIND_INLINE);
                    return WcStatus.SUCCESS;
                }
                if (peerInbox)
                {
                    claimedWrId[0] = peerRecvRing.readEntry(claimedIndex, peerReceive);
                }
                if (total > peerReceive.totalLength())
                {
                    deliverToPeer(WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, 0, false, RecvRing.KIND_PLACED);
                    return WcStatus.REM_INV_REQ_ERR;
                }
                if (!resolvePeerReceive())
                {
                    deliverToPeer(WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0, false, RecvRing.KIND_PLACED);
                    return WcStatus.REM_OP_ERR;
                }
                copy();
                if (!deliverToPeer(WcStatus.SUCCESS, WcOpcode.RECV, total, imm, wcFlags, solicited, RecvRing.KIND_PLACED))
                {
                    return WcStatus.REM_OP_ERR;
                }
                return WcStatus.SUCCESS;
            }

            case RDMA_WRITE:
            case RDMA_WRITE_WITH_IMM:
            {
                if (!resolveLocal(request, false, true))
                {
                    return WcStatus.LOC_PROT_ERR;
                }
                // A zero-length RDMA operation carries no data and, as in InfiniBand, checks no rkey.
                if (total == 0)
                {
                    dstCount = 0;
                }
                else if (!resolveRemote(request.rkey(), request.remoteAddress(), total, Access.REMOTE_WRITE, false))
                {
                    return WcStatus.REM_ACCESS_ERR;
                }
                final boolean withImm = opcode == WrOpcode.RDMA_WRITE_WITH_IMM;
                if (withImm)
                {
                    // Claimed before copying: an RNR failure leaves the target memory untouched.
                    final WcStatus claim = claimPeerReceive(!peerInbox);
                    if (claim != WcStatus.SUCCESS)
                    {
                        return claim;
                    }
                }
                copy();
                if (withImm && !deliverToPeer(WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, total,
                    request.immData(), WorkCompletions.WC_WITH_IMM, solicited, RecvRing.KIND_PLACED))
                {
                    return WcStatus.REM_OP_ERR;
                }
                return WcStatus.SUCCESS;
            }

            case RDMA_READ:
            {
                if (!resolveLocal(request, true, false))
                {
                    return WcStatus.LOC_PROT_ERR;
                }
                if (total == 0)
                {
                    srcCount = 0;
                }
                else if (!resolveRemote(request.rkey(), request.remoteAddress(), total, Access.REMOTE_READ, true))
                {
                    return WcStatus.REM_ACCESS_ERR;
                }
                copy();
                return WcStatus.SUCCESS;
            }

            default:
                return WcStatus.REM_INV_REQ_ERR;
        }
    }

    private void completeSend(final SendRequest request, final WcStatus status, final int byteLen)
    {
        if (!sendCq.offer(request.wrId(), status, request.opcode().completionOpcode(), byteLen, 0, 0, qpNum))
        {
            if (!down.get())
            {
                // Once per QP (goDown runs once): a consumer that posts more signaled work than its
                // CQ holds; ibverbs reports this as IBV_EVENT_CQ_ERR.
                LOG.warn("send completion queue of QP {} to {} overflowed (capacity {}): more signaled work requests " +
                    "were posted than the CQ holds without being polled; the QP goes to ERROR", qpNum, remoteAddress(),
                    sendCq.capacity());
            }
            goDown();
        }
    }

    /**
     * Completes the claimed receive ({@link #claimedIndex}, {@link #claimedWrId}): in the peer's inbox slot, or as an
     * entry of the peer's receive CQ; rings the doorbell if that CQ was armed.
     *
     * @param kind the slot's kind if the peer has an inbox (for an inline one the bytes are in the slot already).
     * @return false if the peer's CQ overflowed.
     */
    private boolean deliverToPeer(
        final WcStatus status, final WcOpcode opcode, final int byteLen, final int imm, final int flags,
        final boolean solicited, final int kind)
    {
        if (peerInbox)
        {
            peerRecvRing.publishSlot(claimedIndex, byteLen, imm, RecvRing.info(status.value(),
                opcode == WcOpcode.RECV_RDMA_WITH_IMM, (flags & WorkCompletions.WC_WITH_IMM) != 0, kind));
            peerNext = claimedIndex + 1;
            if (peerRecvCq.disarm(solicited, status))
            {
                ringDoorbell();
            }
            return true;
        }
        final int result = peerRecvCq.offer(claimedWrId[0], status, opcode, byteLen, imm, flags, peerQpNum, solicited,
            CqRing.REMOTE_FULL_WAIT_NANOS);
        if (result == CqRing.OFFERED_RING)
        {
            ringDoorbell();
        }
        return result != CqRing.OVERFLOWED;
    }

    private void ringDoorbell()
    {
        final SocketChannel socket = this.socket;
        if (socket == null)
        {
            return;
        }
        synchronized (writeLock)
        {
            final ByteBuffer frame = doorbellFrame;
            frame.clear();
            frame.putInt(Handshake.FRAME_DOORBELL).putInt(peerRecvCqId).flip();
            try
            {
                int idle = 0;
                while (frame.hasRemaining())
                {
                    if (socket.write(frame) == 0)
                    {
                        // Socket buffer full (the peer's event thread is behind): back off briefly.
                        if (++idle > 10_000 || !socket.isOpen())
                        {
                            if (socket.isOpen() && !doorbellDropLogged)
                            {
                                // The peer's poller still wakes: the doorbells filling its socket are read (by its
                                // event thread or its own selector) after this completion was written. Visible, once.
                                doorbellDropLogged = true;
                                LOG.warn("doorbell of QP {} to {} dropped: the peer process's event thread did not " +
                                    "read its socket for 10,000 yields (the peer is overloaded or stopped)", qpNum,
                                    remoteAddress());
                            }
                            return;
                        }
                        Thread.yield();
                    }
                }
            }
            catch (final IOException ex)
            {
                // The peer is gone: its EOF reaches the event thread, which takes the QP down.
            }
        }
    }

    /**
     * Claims the peer's next posted receive into {@link #claimedIndex} (and, if {@code readEntry}, its SGEs and wrId
     * into {@link #peerReceive}/{@link #claimedWrId}), retrying for the RNR time.
     */
    private WcStatus claimPeerReceive(final boolean readEntry)
    {
        final RecvRing ring = peerRecvRing;
        if (tryClaim(ring, readEntry))
        {
            return WcStatus.SUCCESS;
        }
        final long deadline = System.nanoTime() + rnrRetryNanos;
        int idle = 0;
        while (true)
        {
            if (state != QpState.RTS || ring.state() != RecvRing.STATE_OK)
            {
                return WcStatus.WR_FLUSH_ERR;
            }
            if (tryClaim(ring, readEntry))
            {
                return WcStatus.SUCCESS;
            }
            if (System.nanoTime() - deadline >= 0)
            {
                return WcStatus.RNR_RETRY_EXC_ERR;
            }
            idle++;
            if (idle < 100)
            {
                Thread.onSpinWait();
            }
            else if (idle < 1_000)
            {
                Thread.yield();
            }
            else
            {
                LockSupport.parkNanos(50_000);
            }
        }
    }

    private boolean tryClaim(final RecvRing ring, final boolean readEntry)
    {
        if (peerInbox)
        {
            claimedIndex = peerNext;
            return ring.posted(peerNext);
        }
        final long index = ring.claimAt(peerReceive, claimedWrId);
        claimedIndex = index;
        return index >= 0;
    }

    /** Copies the resolved source spans into {@code dst} from {@code offset} (the caller checked they fit). */
    private void copyToSlot(final UnsafeBuffer dst, final int offset)
    {
        int at = offset;
        for (int i = 0; i < srcCount; i++)
        {
            dst.putBytes(at, srcBuffers[i], srcOffsets[i], srcLengths[i]);
            at += srcLengths[i];
            srcBuffers[i] = null;
        }
    }

    /** Resolves the request's own SGEs against this QP's PD into the source or destination spans. */
    private boolean resolveLocal(final ScatterGatherList sges, final boolean needLocalWrite, final boolean asSource)
    {
        final UnsafeBuffer[] buffers = asSource ? srcBuffers : dstBuffers;
        final int[] offsets = asSource ? srcOffsets : dstOffsets;
        final int[] lengths = asSource ? srcLengths : dstLengths;
        final int count = sges.sgeCount();
        for (int i = 0; i < count; i++)
        {
            final long address = sges.sgeAddress(i);
            final int length = sges.sgeLength(i);
            final ShmMemoryRegion region = context.region(RegionChecks.indexOfAddress(address));
            final long offset = RegionChecks.localOffset(region, pd, sges.sgeLkey(i), address, length, needLocalWrite);
            if (offset == RegionChecks.DENIED)
            {
                return false;
            }
            buffers[i] = region.buffer();
            offsets[i] = (int)offset;
            lengths[i] = length;
        }
        if (asSource)
        {
            srcCount = count;
        }
        else
        {
            dstCount = count;
        }
        return true;
    }

    /** Resolves the claimed peer receive's SGEs against the peer QP's PD into the destination spans. */
    private boolean resolvePeerReceive()
    {
        final ScatterGatherList sges = peerReceive;
        final int count = sges.sgeCount();
        for (int i = 0; i < count; i++)
        {
            final long address = sges.sgeAddress(i);
            final int length = sges.sgeLength(i);
            final RemoteRegion region = remoteRegion(RegionChecks.indexOfAddress(address));
            if (region == null || region.lkey != sges.sgeLkey(i) || region.pdId != peerPdId ||
                (region.access & Access.LOCAL_WRITE) == 0)
            {
                return false;
            }
            final long offset = RegionChecks.offsetIn(region.baseAddress, region.length, address, length);
            if (offset == RegionChecks.DENIED)
            {
                return false;
            }
            dstBuffers[i] = region.data;
            dstOffsets[i] = (int)offset;
            dstLengths[i] = length;
        }
        dstCount = count;
        return true;
    }

    /** Checks rkey, bounds, access and PD of a one-sided access to the peer's memory. */
    private boolean resolveRemote(
        final int rkey, final long address, final int length, final int access, final boolean asSource)
    {
        final int index = RegionChecks.indexOfKey(rkey);
        if (index != RegionChecks.indexOfAddress(address))
        {
            return false;
        }
        final RemoteRegion region = remoteRegion(index);
        if (region == null || region.rkey != rkey || region.pdId != peerPdId || (region.access & access) == 0)
        {
            return false;
        }
        final long offset = RegionChecks.offsetIn(region.baseAddress, region.length, address, length);
        if (offset == RegionChecks.DENIED)
        {
            return false;
        }
        if (asSource)
        {
            srcBuffers[0] = region.data;
            srcOffsets[0] = (int)offset;
            srcLengths[0] = length;
            srcCount = 1;
        }
        else
        {
            dstBuffers[0] = region.data;
            dstOffsets[0] = (int)offset;
            dstLengths[0] = length;
            dstCount = 1;
        }
        return true;
    }

    /**
     * @return the peer's registered region with this index, mapped on first use (cold path), or null
     * if it does not exist or is no longer registered.
     */
    private RemoteRegion remoteRegion(final int index)
    {
        RemoteRegion region = remoteRegions.get(index);
        if (region != null)
        {
            if (region.isRegistered())
            {
                return region;
            }
            // Indexes are never reused, so a deregistered region is gone for good: drop our mapping.
            remoteRegions.remove(index);
            dropLocked(region);
            return null;
        }
        if (index <= 0)
        {
            return null;
        }
        try
        {
            final MappedByteBuffer mapping = ShmFiles.mapExisting(context.peerFile(peerPrefix + "-mr" + index));
            if (mapping == null)
            {
                return null;
            }
            region = RemoteRegion.of(mapping, index);
            if (region == null)
            {
                ShmFiles.unmap(mapping);
                return null;
            }
            remoteRegions.put(index, region);
            return region;
        }
        catch (final IOException ex)
        {
            return null;
        }
    }

    /** A SEND or RDMA operation is carried out by the posting thread, inside {@link #postSend}. */
    @Override
    public boolean completesAtPost()
    {
        return true;
    }

    @Override
    public boolean canMapRemote()
    {
        return true;
    }

    /**
     * The peer's region is already mapped into this process (RDMA WRITEs copy through that mapping), so this hands
     * out a view of it after the checks an RDMA WRITE makes, and pins the mapping: neither the peer deregistering
     * the region nor this QP closing unmaps it before the view is closed (a write through an unmapped view would
     * crash the JVM; one into a deregistered region lands in pages the peer no longer reads).
     */
    @Override
    public RemoteMapping mapRemote(final long remoteAddress, final int rkey, final int length)
    {
        synchronized (sendLock)
        {
            if (closed || !established || state != QpState.RTS || length <= 0 ||
                RegionChecks.indexOfKey(rkey) != RegionChecks.indexOfAddress(remoteAddress))
            {
                return null;
            }
            final RemoteRegion region = remoteRegion(RegionChecks.indexOfKey(rkey));
            if (region == null || region.rkey != rkey || region.pdId != peerPdId || (region.access & Access.REMOTE_WRITE) == 0)
            {
                return null;
            }
            final long offset = RegionChecks.offsetIn(region.baseAddress, region.length, remoteAddress, length);
            if (offset == RegionChecks.DENIED)
            {
                return null;
            }
            region.pins++;
            remoteMappingsOpen++;
            return new ShmRemoteMapping(this, region, (int)offset, length);
        }
    }

    /** A {@link ShmRemoteMapping} was closed: the last one of a dropped region unmaps it. */
    void unpin(final RemoteRegion region)
    {
        synchronized (sendLock)
        {
            remoteMappingsOpen--;
            if (--region.pins == 0 && region.dropped)
            {
                ShmFiles.unmap(region.mapping);
            }
        }
    }

    /** @return mappings handed out by {@link #mapRemote} and not yet closed (tests). */
    int remoteMappingsOpen()
    {
        synchronized (sendLock)
        {
            return remoteMappingsOpen;
        }
    }

    /** Forgets our mapping of a peer region (send lock held): unmapped now, or by its last pin's close. */
    private void dropLocked(final RemoteRegion region)
    {
        if (region.pins > 0)
        {
            region.dropped = true;
        }
        else
        {
            ShmFiles.unmap(region.mapping);
        }
    }

    /** Copies the source spans into the destination spans (the caller checked the lengths fit). */
    private void copy()
    {
        int si = 0;
        int di = 0;
        int srcOffset = srcCount > 0 ? srcOffsets[0] : 0;
        int srcRemaining = srcCount > 0 ? srcLengths[0] : 0;
        int dstOffset = dstCount > 0 ? dstOffsets[0] : 0;
        int dstRemaining = dstCount > 0 ? dstLengths[0] : 0;
        while (si < srcCount && di < dstCount)
        {
            if (srcRemaining == 0)
            {
                if (++si < srcCount)
                {
                    srcOffset = srcOffsets[si];
                    srcRemaining = srcLengths[si];
                }
                continue;
            }
            if (dstRemaining == 0)
            {
                if (++di < dstCount)
                {
                    dstOffset = dstOffsets[di];
                    dstRemaining = dstLengths[di];
                }
                continue;
            }
            final int n = Math.min(srcRemaining, dstRemaining);
            dstBuffers[di].putBytes(dstOffset, srcBuffers[si], srcOffset, n);
            srcOffset += n;
            srcRemaining -= n;
            dstOffset += n;
            dstRemaining -= n;
        }
        // Drop references so that a deregistered region's mapping is not kept reachable from here.
        for (int i = 0; i < ScatterGatherList.MAX_SGE; i++)
        {
            srcBuffers[i] = null;
            dstBuffers[i] = null;
        }
    }

    /** EOF or error on the connection socket (event thread). */
    void peerGone()
    {
        goDown();
    }

    /**
     * Moves the QP to ERROR once: the peer is told (by closing the socket, which it sees as EOF),
     * posted receives are flushed, and the disconnect handler is scheduled on the event thread.
     */
    private void goDown()
    {
        if (!down.compareAndSet(false, true))
        {
            return;
        }
        state = QpState.ERROR;
        synchronized (recvLock)
        {
            if (!closed)
            {
                recvRing.state(RecvRing.STATE_ERROR);
                // An attached inbox is flushed by its poller, after the receives senders claimed before this.
                while (!inboxAttached && recvRing.claim(flushScratch, flushWrId))
                {
                    recvCq.offer(flushWrId[0], WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qpNum);
                }
            }
        }
        synchronized (sendLock)
        {
            // After the post in progress, if any (state is ERROR: no new one starts): the peer's poller flushes
            // the receives from here on. Not after close(), which unmapped the peer's queue.
            if (peerInbox && !closed)
            {
                peerRecvRing.finishSending(peerNext);
            }
        }
        final SocketChannel socket = this.socket;
        if (socket != null)
        {
            synchronized (writeLock)
            {
                try
                {
                    socket.close();
                }
                catch (final IOException ignore)
                {
                    // Closing anyway.
                }
            }
            final ShmCompletionChannel channel = recvCq.shmChannel();
            if (channel != null)
            {
                channel.socketClosed(socket);
            }
            final Runnable handler = disconnectHandler;
            if (handler != null)
            {
                context.eventLoop().execute(handler);
            }
        }
    }

    @Override
    public void disconnect()
    {
        goDown();
    }

    @Override
    public void close()
    {
        goDown();
        synchronized (sendLock)
        {
            synchronized (recvLock)
            {
                if (closed)
                {
                    return;
                }
                closed = true;
                remoteRegions.forEach((index, region) -> dropLocked(region));
                remoteRegions.clear();
                ShmFiles.unmap(peerRecvQueueMapping);
                ShmFiles.unmap(peerRecvCqMapping);
                peerRecvQueueMapping = null;
                peerRecvCqMapping = null;
                if (!inboxAttached)
                {
                    // Otherwise the receive CQ's poller unmaps it when it has flushed the last receive.
                    unmapRecvQueueLocked();
                }
            }
        }
        ShmFiles.deleteQuietly(recvQueueFile);
        context.fileRemoved(recvQueueFile);
        context.removed(this);
    }

    private void unmapRecvQueueLocked()
    {
        if (!recvQueueUnmapped)
        {
            recvQueueUnmapped = true;
            ShmFiles.unmap(recvQueueMapping);
        }
    }

    /** The receive CQ closed: it no longer polls this inbox; unmapped now if this QP closed, else at its close. */
    void inboxDetached()
    {
        synchronized (recvLock)
        {
            inboxAttached = false;
            if (closed)
            {
                unmapRecvQueueLocked();
            }
        }
    }

    /**
     * The receive CQ's poller (inside its poll): moves this QP's receive completions from the inbox into
     * {@code completions} from index {@code from}, in receive order; once the QP is down, flushes the receives no
     * sender claimed; once it is closed and nothing is outstanding, detaches and unmaps the inbox.
     *
     * @return completions added.
     */
    int pollInbox(final WorkCompletions completions, final int from)
    {
        final RecvRing ring = recvRing;
        final int max = completions.capacity() - from;
        long next = inboxNext;
        int count = 0;
        while (count < max)
        {
            if (ring.slotPublished(next))
            {
                completeSlot(completions, from + count, next);
                next++;
                count++;
                continue;
            }
            if (!down.get() || next >= ring.tail())
            {
                // Up: nothing more yet. Down: every posted receive is done.
                break;
            }
            final long senderFinal = ring.senderFinal();
            if (senderFinal < 0 && !peerGoneChecked())
            {
                // Down, and the sender may still publish this receive's slot: its QP writes how many it consumed
                // when it goes down too (it sees our EOF), unless its process died (checked now and then).
                break;
            }
            if (next < senderFinal && ring.slotPublished(next))
            {
                continue; // published before the final count was written
            }
            final long wrId = ring.readEntry(next, inboxReceive);
            completions.set(from + count, wrId, WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qpNum);
            next++;
            count++;
        }
        if (next != inboxNext)
        {
            inboxNext = next;
            ring.consumed(next - 1);
        }
        else if (closed && next >= ring.tail())
        {
            retireInbox();
        }
        return count;
    }

    /** @return whether the peer's process is known to be gone (looked up on one call in 1,024; poller only). */
    private boolean peerGoneChecked()
    {
        if (!peerGone && (++stuckPolls & 1023) == 1 && !peerAlive())
        {
            peerGone = true;
        }
        return peerGone;
    }

    /**
     * @return false once the peer's context is known to be gone: its lock file is missing or nobody holds its lock
     * (the kernel drops it when the process dies, across PID namespaces too: see {@link ShmFiles}).
     */
    private boolean peerAlive()
    {
        // A context of this JVM is alive, and its lock must not be probed: closing a channel of it would drop it.
        return ShmVerbsContext.isOpenHere(peerPrefix) || ShmFiles.isLockHeld(context.directory(), peerPrefix);
    }

    /** Closed and all flushed: nothing will read this inbox again (poller thread). */
    private void retireInbox()
    {
        synchronized (recvLock)
        {
            if (!inboxAttached)
            {
                return;
            }
            inboxAttached = false;
            unmapRecvQueueLocked();
        }
        recvCq.detachInbox(this);
    }

    /** Completes receive {@code index} from its published slot; every field the peer wrote is checked first. */
    private void completeSlot(final WorkCompletions completions, final int at, final long index)
    {
        final RecvRing ring = recvRing;
        final UnsafeBuffer buffer = ring.buffer();
        final int slot = ring.slotOffset(index);
        final int byteLen = buffer.getInt(slot + RecvRing.SLOT_BYTE_LEN);
        final int imm = buffer.getInt(slot + RecvRing.SLOT_IMM);
        final int info = ring.slotInfo(index);
        final int status = info & RecvRing.INFO_STATUS_MASK;
        final int kind = info >>> RecvRing.INFO_KIND_SHIFT & 3;
        final boolean rdmaWithImm = (info & RecvRing.INFO_RDMA_WITH_IMM) != 0;
        final int flags = (info & RecvRing.INFO_WITH_IMM) != 0 ? WorkCompletions.WC_WITH_IMM : 0;
        final long wrId = ring.readEntry(index, inboxReceive);
        final boolean wellFormed = (info & RecvRing.INFO_UNUSED) == 0 && byteLen >= 0;
        if (wellFormed && kind == RecvRing.KIND_INLINE && status == WcStatus.SUCCESS.value() && !rdmaWithImm &&
            byteLen <= RecvRing.INLINE_MAX)
        {
            final WcStatus placed = placeInline(buffer, slot + RecvRing.SLOT_DATA, byteLen);
            if (placed == WcStatus.SUCCESS)
            {
                completions.set(at, wrId, WcStatus.SUCCESS, WcOpcode.RECV, byteLen, imm, flags, qpNum);
                return;
            }
            completions.set(at, wrId, placed, WcOpcode.RECV, 0, 0, 0, qpNum);
            goDown();
            return;
        }
        if (wellFormed && kind == RecvRing.KIND_PLACED)
        {
            final WcStatus wcStatus = WcStatus.fromValue(status);
            completions.set(at, wrId, wcStatus, rdmaWithImm ? WcOpcode.RECV_RDMA_WITH_IMM : WcOpcode.RECV,
                wcStatus == WcStatus.SUCCESS ? byteLen : 0, imm, flags, qpNum);
            return;
        }
        if (!malformedLogged)
        {
            // Once per QP: the connection ends with it.
            malformedLogged = true;
            LOG.warn("QP {} to {}: the peer wrote a malformed inbox slot (info {}, length {}); the QP goes to ERROR",
                qpNum, remoteAddress(), Integer.toHexString(info), byteLen);
        }
        completions.set(at, wrId, WcStatus.LOC_QP_OP_ERR, WcOpcode.RECV, 0, 0, 0, qpNum);
        goDown();
    }

    /** Copies an inline message into the posted receive read into {@link #inboxReceive} (poller thread). */
    private WcStatus placeInline(final UnsafeBuffer from, final int offset, final int length)
    {
        final ScatterGatherList sges = inboxReceive;
        if (length > sges.totalLength())
        {
            return WcStatus.LOC_LEN_ERR;
        }
        // Every SGE is checked before a byte is written, as the sender does for a placed message.
        final int count = sges.sgeCount();
        final ShmMemoryRegion[] regions = inboxRegions;
        final int[] offsets = inboxOffsets;
        for (int i = 0; i < count; i++)
        {
            final long address = sges.sgeAddress(i);
            final ShmMemoryRegion region = context.region(RegionChecks.indexOfAddress(address));
            final long at = RegionChecks.localOffset(region, pd, sges.sgeLkey(i), address, sges.sgeLength(i), true);
            if (at == RegionChecks.DENIED)
            {
                return WcStatus.LOC_PROT_ERR;
            }
            regions[i] = region;
            offsets[i] = (int)at;
        }
        int done = 0;
        for (int i = 0; i < count && done < length; i++)
        {
            final int n = Math.min(length - done, sges.sgeLength(i));
            regions[i].buffer().putBytes(offsets[i], from, offset + done, n);
            done += n;
        }
        for (int i = 0; i < count; i++)
        {
            regions[i] = null;
        }
        return WcStatus.SUCCESS;
    }

    /** @return this QP's receive queue and inbox (tests). */
    RecvRing recvRing()
    {
        return recvRing;
    }

    /** @return SENDs this QP wrote inline into its peer's inbox (tests). */
    long inlineSends()
    {
        synchronized (sendLock)
        {
            return inlineSends;
        }
    }

    /** @return whether this QP receives through its inbox and its receive CQ polls it (tests). */
    boolean inboxAttached()
    {
        synchronized (recvLock)
        {
            return inboxAttached;
        }
    }

    @Override
    public String toString()
    {
        return "ShmQueuePair{qpNum=" + qpNum + ", state=" + state + ", remote=" + remoteAddress + '}';
    }
}
