package io.reverb.rdma.provider.shm;

import io.reverb.common.LogLimiter;
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
    /** Lines of a QP's trouble (once per QP each), limited across QPs: a stopped peer may hold many. */
    private static final LogLimiter QP_LOG = new LogLimiter((line, t) -> LOG.warn(line, t));

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
    /** The peer's regions this QP mapped (RDMA operations, direct writes), under sendLock. */
    private final PeerRegions peerRegions;
    private final ScatterGatherList peerReceive = new ScatterGatherList();
    private final long[] claimedWrId = new long[1];
    private long claimedIndex;
    /** Inbox-mode peer: receives of the peer this QP consumed (it alone consumes them; under sendLock). */
    private long peerNext;
    /** SENDs whose bytes went inside the peer's inbox slot (tests; under sendLock). */
    private long inlineSends;
    /** The operation's source and destination, resolved and checked, and the copy between them. */
    private final CopySpans spans;
    private final ByteBuffer doorbellFrame = ByteBuffer.allocateDirect(Handshake.FRAME_LENGTH);
    private boolean doorbellDropLogged;

    // Scratch of the flush path, under recvLock.
    private final ScatterGatherList flushScratch = new ScatterGatherList();
    private final long[] flushWrId = new long[1];

    /** The receive CQ's poller's side of the inbox (inbox mode). */
    private final InboxReader inboxReader;

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
        this.inboxReader = new InboxReader(this, recvRing, context, pd);
        this.peerRegions = new PeerRegions(context);
        this.spans = new CopySpans(context, pd, peerRegions);
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
        peerRegions.peer(peer.prefix);
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
                if (!spans.resolveLocal(request, false, true))
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
                    spans.copySourceTo(peerRecvRing.buffer(), peerRecvRing.slotOffset(claimedIndex) + RecvRing.SLOT_DATA);
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
                if (!spans.resolvePeerReceive(peerReceive, peerPdId))
                {
                    deliverToPeer(WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0, false, RecvRing.KIND_PLACED);
                    return WcStatus.REM_OP_ERR;
                }
                spans.copy();
                if (!deliverToPeer(WcStatus.SUCCESS, WcOpcode.RECV, total, imm, wcFlags, solicited, RecvRing.KIND_PLACED))
                {
                    return WcStatus.REM_OP_ERR;
                }
                return WcStatus.SUCCESS;
            }

            case RDMA_WRITE:
            case RDMA_WRITE_WITH_IMM:
            {
                if (!spans.resolveLocal(request, false, true))
                {
                    return WcStatus.LOC_PROT_ERR;
                }
                // A zero-length RDMA operation carries no data and, as in InfiniBand, checks no rkey.
                if (total == 0)
                {
                    spans.clearDestination();
                }
                else if (!spans.resolveRemote(request.rkey(), request.remoteAddress(), total, Access.REMOTE_WRITE, false,
                    peerPdId))
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
                spans.copy();
                if (withImm && !deliverToPeer(WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, total,
                    request.immData(), WorkCompletions.WC_WITH_IMM, solicited, RecvRing.KIND_PLACED))
                {
                    return WcStatus.REM_OP_ERR;
                }
                return WcStatus.SUCCESS;
            }

            case RDMA_READ:
            {
                if (!spans.resolveLocal(request, true, false))
                {
                    return WcStatus.LOC_PROT_ERR;
                }
                if (total == 0)
                {
                    spans.clearSource();
                }
                else if (!spans.resolveRemote(request.rkey(), request.remoteAddress(), total, Access.REMOTE_READ, true,
                    peerPdId))
                {
                    return WcStatus.REM_ACCESS_ERR;
                }
                spans.copy();
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
                QP_LOG.log("send cq overflow", "send completion queue of QP " + qpNum + " to " + remoteAddress() +
                    " overflowed (capacity " + sendCq.capacity() + "): more signaled work requests were posted than " +
                    "the CQ holds without being polled; the QP goes to ERROR", null);
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
                                QP_LOG.log("doorbell dropped", "doorbell of QP " + qpNum + " to " + remoteAddress() +
                                    " dropped: the peer process's event thread did not read its socket for 10,000 " +
                                    "yields (the peer is overloaded or stopped)", null);
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
            final RemoteRegion region = peerRegions.get(RegionChecks.indexOfKey(rkey));
            if (region == null || region.rkey != rkey || region.pdId != peerPdId || (region.access & Access.REMOTE_WRITE) == 0)
            {
                return null;
            }
            final long offset = RegionChecks.offsetIn(region.baseAddress, region.length, remoteAddress, length);
            if (offset == RegionChecks.DENIED)
            {
                return null;
            }
            peerRegions.pin(region);
            return new ShmRemoteMapping(this, region, (int)offset, length);
        }
    }

    /** A {@link ShmRemoteMapping} was closed: the last one of a dropped region unmaps it. */
    void unpin(final RemoteRegion region)
    {
        synchronized (sendLock)
        {
            peerRegions.unpin(region);
        }
    }

    /** @return mappings handed out by {@link #mapRemote} and not yet closed (tests). */
    int remoteMappingsOpen()
    {
        synchronized (sendLock)
        {
            return peerRegions.mappingsOpen();
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
    void goDown()
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
                peerRegions.dropAll();
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
     * {@code completions} from index {@code from}, in receive order (see {@link InboxReader#poll}).
     *
     * @return completions added.
     */
    int pollInbox(final WorkCompletions completions, final int from)
    {
        return inboxReader.poll(completions, from);
    }

    /** @return whether the QP went to ERROR (any thread). */
    boolean isDown()
    {
        return down.get();
    }

    /** @return whether {@link #close()} ran (any thread). */
    boolean isClosed()
    {
        return closed;
    }

    /**
     * @return false once the peer's context is known to be gone: its lock file is missing or nobody holds its lock
     * (the kernel drops it when the process dies, across PID namespaces too: see {@link ShmFiles}).
     */
    boolean peerAlive()
    {
        // A context of this JVM is alive, and its lock must not be probed: closing a channel of it would drop it.
        return ShmVerbsContext.isOpenHere(peerPrefix) || ShmFiles.isLockHeld(context.directory(), peerPrefix);
    }

    /** Closed and all flushed: nothing will read this inbox again (poller thread). */
    void retireInbox()
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
