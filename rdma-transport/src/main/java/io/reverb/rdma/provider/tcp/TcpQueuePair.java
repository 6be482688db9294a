package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.AbstractQueuePair;
import io.reverb.rdma.provider.RegionChecks;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.QpState;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.ScatterGatherList;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import org.agrona.BitUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An RC queue pair of the tcp fabric: one TCP socket, driven by the context's NIC thread
 * ({@link TcpNic}).
 *
 * <p>Posting threads only fill rings: the send queue (work requests with their local SGEs checked
 * and resolved at post time) and the receive queue, then nudge the NIC thread if it sleeps. The NIC
 * thread frames requests into a staging buffer ({@link TcpFrame}), copying payloads out of
 * registered memory, and writes it to the socket; on the target side it parses frames out of
 * another staging buffer, checks rkey, bounds, access and PD before touching memory, places SEND
 * data into the next posted receive, and answers every request in order (ACK, NAK or the data of a
 * READ). The requester completes its oldest outstanding request on each answer. Completions are
 * produced on the NIC thread, except that requests posted to a QP in ERROR are flushed by the
 * posting thread at once.
 *
 * <p>Semantics are the shm provider's:
 * <ul>
 *   <li>A SEND larger than the posted receive: the receiver gets LOC_LEN_ERR, the sender
 *       REM_INV_REQ_ERR. A receive whose SGE is invalid: receiver LOC_PROT_ERR, sender REM_OP_ERR.</li>
 *   <li>RNR: the target's NIC holds a SEND (or WRITE_WITH_IMM) that finds no receive for the
 *       sender's {@link io.reverb.rdma.verbs.VerbsConfig#rnrRetryNanos()} (told in the handshake),
 *       reading nothing more from that socket meanwhile, then answers RNR_RETRY_EXC_ERR.</li>
 *   <li>Any error completion ends the connection on both sides: the QP goes to ERROR before the
 *       error completion is published, outstanding requests and receives are flushed with
 *       WR_FLUSH_ERR (sends always complete when flushed, signaled or not), later requests are
 *       flushed, the socket is half-closed once the answer that carries the error is written (the
 *       peer sees EOF and goes down too) and the disconnect handler runs once, on the NIC thread
 *       after the flush. {@link #close()} does not wait for any of this.</li>
 *   <li>{@code maxSendWr} bounds requests not yet answered; beyond it postSend answers QUEUE_FULL.</li>
 * </ul>
 */
final class TcpQueuePair extends AbstractQueuePair<TcpProtectionDomain, TcpCompletionQueue>
{
    private static final Logger LOG = LoggerFactory.getLogger(TcpQueuePair.class);
    private static final int STAGING_BYTES = 64 * 1024;
    private static final int MAX_SGE = ScatterGatherList.MAX_SGE;

    private static final int STAGE_HEADER = 0;
    private static final int STAGE_DISPATCH = 1;
    private static final int STAGE_PAYLOAD = 2;
    private static final int STAGE_DISCARD = 3;

    private static final int TAKEN = 0;
    private static final int WAIT = 1;
    private static final int FAILED = 2;

    private final TcpVerbsContext context;
    private final TcpNic nic;
    private final long peerRnrRetryNanos;
    private final SocketChannel channel;

    private final Object sendLock = new Object();
    private final Object recvLock = new Object();
    private volatile boolean closed;

    // Send queue: posters fill at sqTail, the NIC thread transmits at sqTx and completes at sqHead.
    private final int sqMask;
    private final long[] sqWrId;
    private final WrOpcode[] sqOpcode;
    private final int[] sqFlags;
    private final int[] sqImm;
    private final long[] sqRemoteAddress;
    private final int[] sqRkey;
    private final int[] sqLength;
    private final boolean[] sqLocalError;
    private final int[] sqSgeCount;
    private final TcpMemoryRegion[] sqSgeRegion;
    private final int[] sqSgeOffset;
    private final int[] sqSgeLength;
    private volatile long sqTail;
    private volatile long sqHead;
    private long sqTx;

    // Receive queue: posters fill at rqTail, the NIC thread consumes at rqHead.
    private final int rqMask;
    private final long[] rqWrId;
    private final int[] rqSgeCount;
    private final long[] rqSgeAddress;
    private final int[] rqSgeLength;
    private final int[] rqSgeLkey;
    private volatile long rqTail;
    private volatile long rqHead;
    private boolean recvFlushed;
    private boolean sendFlushed;

    // NIC thread only from here on.
    private SelectionKey key;
    private int interestOps;
    private boolean down;
    private boolean socketClosed;
    private boolean outputShut;
    private boolean writeBlocked;

    // Answers owed to the peer, in request order.
    private final int respMask;
    private final int[] respType;
    private final int[] respValue;
    private final TcpMemoryRegion[] respRegion;
    private final int[] respOffset;
    private long respHead;
    private long respTail;

    // Outbound staging and the payload being copied into it.
    private final ByteBuffer txBuffer = ByteBuffer.allocateDirect(STAGING_BYTES);
    private final UnsafeBuffer tx = new UnsafeBuffer(txBuffer);
    private int txFill;
    private int txSent;
    private final UnsafeBuffer[] srcBuffers = new UnsafeBuffer[MAX_SGE];
    private final int[] srcOffsets = new int[MAX_SGE];
    private final int[] srcLengths = new int[MAX_SGE];
    private int srcCount;
    private int srcIndex;
    private int srcPosition;
    private long outRemaining;

    // Inbound staging and the frame being parsed out of it.
    private final ByteBuffer rxBuffer = ByteBuffer.allocateDirect(STAGING_BYTES);
    private final UnsafeBuffer rx = new UnsafeBuffer(rxBuffer);
    private int stage = STAGE_HEADER;
    private int inType;
    private int inFlags;
    private int inLength;
    private int inImm;
    private int inRkey;
    private long inAddress;
    private long inRemaining;
    private long inRecvWrId;
    private int remoteOffset;
    private final UnsafeBuffer[] dstBuffers = new UnsafeBuffer[MAX_SGE];
    private final int[] dstOffsets = new int[MAX_SGE];
    private final int[] dstLengths = new int[MAX_SGE];
    private int dstCount;
    private int dstIndex;
    private int dstPosition;
    private volatile boolean rnrWaiting;
    private long rnrDeadline;

    TcpQueuePair(
        final TcpVerbsContext context,
        final int qpNum,
        final QueuePairAttributes attributes,
        final SocketChannel channel,
        final TcpHandshake peer,
        final String remoteAddress)
    {
        super(qpNum, attributes, remoteAddress, QpState.RTS);
        this.context = context;
        this.nic = context.nic();
        remotePrivateData(peer.privateDataBuffer());
        this.peerRnrRetryNanos = peer.rnrRetryNanos;
        this.channel = channel;

        final int sqCapacity = BitUtil.findNextPositivePowerOfTwo(attributes.maxSendWr());
        sqMask = sqCapacity - 1;
        sqWrId = new long[sqCapacity];
        sqOpcode = new WrOpcode[sqCapacity];
        sqFlags = new int[sqCapacity];
        sqImm = new int[sqCapacity];
        sqRemoteAddress = new long[sqCapacity];
        sqRkey = new int[sqCapacity];
        sqLength = new int[sqCapacity];
        sqLocalError = new boolean[sqCapacity];
        sqSgeCount = new int[sqCapacity];
        sqSgeRegion = new TcpMemoryRegion[sqCapacity * MAX_SGE];
        sqSgeOffset = new int[sqCapacity * MAX_SGE];
        sqSgeLength = new int[sqCapacity * MAX_SGE];

        final int rqCapacity = BitUtil.findNextPositivePowerOfTwo(attributes.maxRecvWr());
        rqMask = rqCapacity - 1;
        rqWrId = new long[rqCapacity];
        rqSgeCount = new int[rqCapacity];
        rqSgeAddress = new long[rqCapacity * MAX_SGE];
        rqSgeLength = new int[rqCapacity * MAX_SGE];
        rqSgeLkey = new int[rqCapacity * MAX_SGE];

        // The peer has at most maxSendWr requests unanswered, so it can never be owed more answers.
        final int respCapacity = BitUtil.findNextPositivePowerOfTwo(peer.maxSendWr + 2);
        respMask = respCapacity - 1;
        respType = new int[respCapacity];
        respValue = new int[respCapacity];
        respRegion = new TcpMemoryRegion[respCapacity];
        respOffset = new int[respCapacity];
    }

    // ------------------------------------------------------------------------------------------------
    // Posting (any thread)
    // ------------------------------------------------------------------------------------------------

    @Override
    public int postSend(final SendRequest request)
    {
        synchronized (sendLock)
        {
            if (closed)
            {
                return PostResult.CLOSED;
            }
            final WrOpcode opcode = request.opcode();
            final int sges = request.sgeCount();
            if (opcode == null || sges > maxSge)
            {
                return PostResult.INVALID;
            }
            final long total = request.totalLength();
            if (total > Integer.MAX_VALUE)
            {
                return PostResult.INVALID;
            }
            if (sendFlushed)
            {
                // goDown() flushed the queue under sendLock; what is posted later is flushed here, in order.
                return sendCq.offer(request.wrId(), WcStatus.WR_FLUSH_ERR, opcode.completionOpcode(), 0, 0, 0,
                    qpNum, false) ? PostResult.OK : PostResult.QUEUE_FULL;
            }
            final long tail = sqTail;
            if (tail - sqHead > sqMask)
            {
                return PostResult.QUEUE_FULL;
            }
            final int i = (int)tail & sqMask;
            sqWrId[i] = request.wrId();
            sqOpcode[i] = opcode;
            sqFlags[i] = request.flags();
            sqImm[i] = request.immData();
            sqRemoteAddress[i] = request.remoteAddress();
            sqRkey[i] = request.rkey();
            sqLength[i] = (int)total;
            sqSgeCount[i] = sges;
            // A READ writes into its SGEs, so they need LOCAL_WRITE; a bad SGE fails the request with
            // LOC_PROT_ERR when its turn comes, after everything posted before it.
            sqLocalError[i] = !resolveLocal(request, i * MAX_SGE, opcode == WrOpcode.RDMA_READ);
            sqTail = tail + 1;
        }
        nic.wake();
        return PostResult.OK;
    }

    private boolean resolveLocal(final SendRequest request, final int base, final boolean needLocalWrite)
    {
        final int count = request.sgeCount();
        boolean valid = true;
        for (int k = 0; k < count; k++)
        {
            final long address = request.sgeAddress(k);
            final int length = request.sgeLength(k);
            final TcpMemoryRegion region = context.region(RegionChecks.indexOfAddress(address));
            final long offset = RegionChecks.localOffset(region, pd, request.sgeLkey(k), address, length, needLocalWrite);
            if (offset == RegionChecks.DENIED)
            {
                valid = false;
                sqSgeRegion[base + k] = null;
                sqSgeLength[base + k] = 0;
                continue;
            }
            sqSgeRegion[base + k] = region;
            sqSgeOffset[base + k] = (int)offset;
            sqSgeLength[base + k] = length;
        }
        return valid;
    }

    @Override
    public int postRecv(final RecvRequest request)
    {
        synchronized (recvLock)
        {
            if (closed)
            {
                return PostResult.CLOSED;
            }
            final int sges = request.sgeCount();
            if (sges > maxSge)
            {
                return PostResult.INVALID;
            }
            if (recvFlushed)
            {
                return recvCq.offer(request.wrId(), WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qpNum, false) ?
                    PostResult.OK : PostResult.QUEUE_FULL;
            }
            final long tail = rqTail;
            if (tail - rqHead > rqMask)
            {
                return PostResult.QUEUE_FULL;
            }
            final int i = (int)tail & rqMask;
            final int base = i * MAX_SGE;
            rqWrId[i] = request.wrId();
            rqSgeCount[i] = sges;
            for (int k = 0; k < sges; k++)
            {
                rqSgeAddress[base + k] = request.sgeAddress(k);
                rqSgeLength[base + k] = request.sgeLength(k);
                rqSgeLkey[base + k] = request.sgeLkey(k);
            }
            rqTail = tail + 1;
        }
        if (rnrWaiting)
        {
            nic.wake();
        }
        return PostResult.OK;
    }

    @Override
    public void disconnect()
    {
        nic.execute(() -> goDown(null));
    }

    @Override
    public void close()
    {
        synchronized (sendLock)
        {
            synchronized (recvLock)
            {
                if (closed)
                {
                    return;
                }
                closed = true;
            }
        }
        // Not waited for: a closer holding a lock that a disconnect handler wants must not deadlock.
        // Posting already answers CLOSED; the NIC flushes, runs the handler and closes the socket.
        nic.execute(() ->
        {
            goDown(null);
            closeSocket();
        });
        context.removed(this);
    }

    // ------------------------------------------------------------------------------------------------
    // NIC thread
    // ------------------------------------------------------------------------------------------------

    /** Registers the socket with the NIC's selector. */
    void register(final Selector selector) throws IOException
    {
        interestOps = SelectionKey.OP_READ;
        key = channel.register(selector, interestOps, this);
    }

    boolean isSocketClosed()
    {
        return socketClosed;
    }

    /**
     * One duty cycle: fail a request whose local SGEs were bad once its turn comes, resume or expire an
     * RNR wait, move queued frames to the socket.
     *
     * @return nanoseconds until this QP needs the NIC again without an event, or Long.MAX_VALUE.
     */
    long doWork(final long now)
    {
        if (socketClosed)
        {
            return Long.MAX_VALUE;
        }
        long next = Long.MAX_VALUE;
        try
        {
            if (!down && sqHead == sqTx && sqTx != sqTail && sqLocalError[(int)sqTx & sqMask])
            {
                goDown(WcStatus.LOC_PROT_ERR);
            }
            if (rnrWaiting)
            {
                if (rqHead != rqTail)
                {
                    resumeInbound();
                }
                else if (now - rnrDeadline >= 0)
                {
                    rnrWaiting = false;
                    fail(WcStatus.RNR_RETRY_EXC_ERR);
                    resumeInbound();
                }
                else
                {
                    next = rnrDeadline - now;
                }
            }
            if (!writeBlocked && !socketClosed)
            {
                pumpTx();
            }
        }
        catch (final IOException ex)
        {
            peerGone();
        }
        return next;
    }

    /** @return true if {@link #doWork(long)} has something to do now. */
    boolean hasPendingWork()
    {
        if (socketClosed)
        {
            return false;
        }
        if (rnrWaiting && rqTail != rqHead)
        {
            return true;
        }
        if (writeBlocked)
        {
            return false;
        }
        if (respHead != respTail || outRemaining > 0 || txSent != txFill)
        {
            return true;
        }
        final long tx = sqTx;
        return !down && tx != sqTail && (!sqLocalError[(int)tx & sqMask] || sqHead == tx);
    }

    void onReady(final SelectionKey selected)
    {
        try
        {
            if (selected.isReadable())
            {
                onReadable();
            }
            if (!socketClosed && selected.isValid() && selected.isWritable())
            {
                writeBlocked = false;
                pumpTx();
            }
        }
        catch (final IOException ex)
        {
            peerGone();
        }
    }

    private void onReadable() throws IOException
    {
        final int n = channel.read(rxBuffer);
        if (n < 0)
        {
            peerGone();
            return;
        }
        if (n > 0)
        {
            rxBuffer.flip();
            parse();
            rxBuffer.compact();
        }
    }

    private void resumeInbound() throws IOException
    {
        rnrWaiting = false;
        setInterest(SelectionKey.OP_READ, true);
        rxBuffer.flip();
        parse();
        rxBuffer.compact();
    }

    private void parse() throws IOException
    {
        while (true)
        {
            if (down)
            {
                // Whatever went down (a protocol error, a CQ overflow in the middle of an ACK run, close),
                // the frame being parsed is left: a stage reset after going down must not re-parse it.
                stage = STAGE_DISCARD;
            }
            switch (stage)
            {
                case STAGE_HEADER:
                {
                    if (rxBuffer.remaining() < TcpFrame.HEADER_LENGTH)
                    {
                        return;
                    }
                    final int at = rxBuffer.position();
                    inType = TcpFrame.type(rx, at);
                    inFlags = TcpFrame.flags(rx, at);
                    inLength = TcpFrame.length(rx, at);
                    inImm = TcpFrame.imm(rx, at);
                    inRkey = TcpFrame.rkey(rx, at);
                    inAddress = TcpFrame.address(rx, at);
                    rxBuffer.position(at + TcpFrame.HEADER_LENGTH);
                    stage = STAGE_DISPATCH;
                    break;
                }
                case STAGE_DISPATCH:
                    if (!dispatch())
                    {
                        return;
                    }
                    break;
                case STAGE_PAYLOAD:
                    if (inRemaining > 0)
                    {
                        placePayload();
                        if (inRemaining > 0)
                        {
                            return;
                        }
                    }
                    finishFrame();
                    break;
                default:
                    // Down: nothing more is processed; read until the peer's EOF.
                    rxBuffer.position(rxBuffer.limit());
                    return;
            }
        }
    }

    /**
     * Acts on a decoded header: checks, claims a receive, picks where the payload goes.
     *
     * @return false to stop parsing (waiting for a receive to be posted).
     */
    private boolean dispatch()
    {
        if (inLength < 0)
        {
            protocolError("negative length");
            return true;
        }
        switch (inType)
        {
            case TcpFrame.SEND:
            case TcpFrame.SEND_IMM:
            {
                final int taken = takeReceive();
                if (taken != TAKEN)
                {
                    return taken == FAILED;
                }
                final int i = (int)rqHead & rqMask;
                inRecvWrId = rqWrId[i];
                rqHead = rqHead + 1;
                if (!resolveReceive(i))
                {
                    return true;
                }
                startPayload();
                return true;
            }
            case TcpFrame.WRITE:
            case TcpFrame.WRITE_IMM:
            {
                // A zero-length RDMA operation carries no data and, as in InfiniBand, checks no rkey.
                dstCount = 0;
                if (inLength > 0)
                {
                    final TcpMemoryRegion region = resolveRemote(Access.REMOTE_WRITE);
                    if (region == null)
                    {
                        fail(WcStatus.REM_ACCESS_ERR);
                        return true;
                    }
                    dstBuffers[0] = region.data();
                    dstOffsets[0] = remoteOffset;
                    dstLengths[0] = inLength;
                    dstCount = 1;
                }
                if (inType == TcpFrame.WRITE_IMM)
                {
                    // Claimed before any data is placed: an RNR failure leaves the target memory untouched.
                    final int taken = takeReceive();
                    if (taken != TAKEN)
                    {
                        return taken == FAILED;
                    }
                    inRecvWrId = rqWrId[(int)rqHead & rqMask];
                    rqHead = rqHead + 1;
                }
                startPayload();
                return true;
            }
            case TcpFrame.READ_REQUEST:
            {
                TcpMemoryRegion region = null;
                if (inLength > 0)
                {
                    region = resolveRemote(Access.REMOTE_READ);
                    if (region == null)
                    {
                        fail(WcStatus.REM_ACCESS_ERR);
                        return true;
                    }
                }
                // Answered in turn; the data is copied out of the region when the answer is staged.
                respond(TcpFrame.READ_RESPONSE, inLength, region, remoteOffset);
                stage = STAGE_HEADER;
                return true;
            }
            case TcpFrame.ACK:
            {
                for (int n = 0; n < inLength && !down; n++)
                {
                    final long head = sqHead;
                    if (head == sqTx || sqOpcode[(int)head & sqMask] == WrOpcode.RDMA_READ)
                    {
                        protocolError("ACK without a matching request");
                        return true;
                    }
                    completeHead(WcStatus.SUCCESS, sqLength[(int)head & sqMask]);
                }
                stage = STAGE_HEADER;
                return true;
            }
            case TcpFrame.NAK:
            {
                if (sqHead == sqTx)
                {
                    protocolError("NAK without a matching request");
                    return true;
                }
                goDown(WcStatus.fromValue(inImm));
                return true;
            }
            case TcpFrame.READ_RESPONSE:
            {
                final long head = sqHead;
                final int i = (int)head & sqMask;
                if (head == sqTx || sqOpcode[i] != WrOpcode.RDMA_READ || sqLength[i] != inLength)
                {
                    protocolError("READ_RESPONSE without a matching READ");
                    return true;
                }
                final int base = i * MAX_SGE;
                dstCount = sqSgeCount[i];
                for (int k = 0; k < dstCount; k++)
                {
                    dstBuffers[k] = sqSgeRegion[base + k].data();
                    dstOffsets[k] = sqSgeOffset[base + k];
                    dstLengths[k] = sqSgeLength[base + k];
                }
                startPayload();
                return true;
            }
            default:
                protocolError("unknown frame type " + inType);
                return true;
        }
    }

    /** @return TAKEN if a receive is at rqHead, WAIT while the RNR time runs, FAILED once it ran out. */
    private int takeReceive()
    {
        if (rqHead != rqTail)
        {
            return TAKEN;
        }
        if (!rnrWaiting)
        {
            if (peerRnrRetryNanos <= 0)
            {
                fail(WcStatus.RNR_RETRY_EXC_ERR);
                return FAILED;
            }
            rnrWaiting = true;
            rnrDeadline = System.nanoTime() + peerRnrRetryNanos;
            // Stop reading: frames behind this one must wait for it, as on an RC connection.
            setInterest(SelectionKey.OP_READ, false);
            // A receive posted between the check above and the flag being visible is seen by doWork().
        }
        return WAIT;
    }

    /** Resolves receive {@code i}'s SGEs as the payload's destination; on failure completes it and fails. */
    private boolean resolveReceive(final int i)
    {
        final int base = i * MAX_SGE;
        final int count = rqSgeCount[i];
        long total = 0;
        for (int k = 0; k < count; k++)
        {
            total += rqSgeLength[base + k];
        }
        if (inLength > total)
        {
            completeReceive(inRecvWrId, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, 0);
            fail(WcStatus.REM_INV_REQ_ERR);
            return false;
        }
        for (int k = 0; k < count; k++)
        {
            final long address = rqSgeAddress[base + k];
            final int length = rqSgeLength[base + k];
            final TcpMemoryRegion region = context.region(RegionChecks.indexOfAddress(address));
            final long offset = RegionChecks.localOffset(region, pd, rqSgeLkey[base + k], address, length, true);
            if (offset == RegionChecks.DENIED)
            {
                clearDestinations();
                completeReceive(inRecvWrId, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0);
                fail(WcStatus.REM_OP_ERR);
                return false;
            }
            dstBuffers[k] = region.data();
            dstOffsets[k] = (int)offset;
            dstLengths[k] = length;
        }
        dstCount = count;
        return true;
    }

    /**
     * Checks rkey, bounds, access and PD of the current frame's one-sided access to this side's memory.
     *
     * @return the region, with the access's offset in {@link #remoteOffset}, or null if not permitted.
     */
    private TcpMemoryRegion resolveRemote(final int access)
    {
        final TcpMemoryRegion region = context.region(RegionChecks.indexOfKey(inRkey));
        final long offset = RegionChecks.remoteOffset(region, pd, inRkey, inAddress, inLength, access);
        if (offset == RegionChecks.DENIED)
        {
            return null;
        }
        remoteOffset = (int)offset;
        return region;
    }

    private void startPayload()
    {
        inRemaining = inLength;
        dstIndex = 0;
        dstPosition = 0;
        stage = STAGE_PAYLOAD;
    }

    /** Copies what the staging buffer holds of the payload into the destination spans. */
    private void placePayload()
    {
        int at = rxBuffer.position();
        int available = rxBuffer.limit() - at;
        while (available > 0 && inRemaining > 0)
        {
            if (dstIndex >= dstCount)
            {
                // Cannot happen: lengths were checked against the destination before the payload.
                protocolError("payload longer than its destination");
                return;
            }
            final int room = dstLengths[dstIndex] - dstPosition;
            if (room == 0)
            {
                dstIndex++;
                dstPosition = 0;
                continue;
            }
            final int n = (int)Math.min(Math.min(available, room), inRemaining);
            dstBuffers[dstIndex].putBytes(dstOffsets[dstIndex] + dstPosition, rx, at, n);
            dstPosition += n;
            at += n;
            available -= n;
            inRemaining -= n;
        }
        rxBuffer.position(at);
    }

    private void finishFrame()
    {
        stage = STAGE_HEADER;
        clearDestinations();
        final boolean solicited = (inFlags & TcpFrame.FLAG_SOLICITED) != 0;
        switch (inType)
        {
            case TcpFrame.SEND:
                completeReceive(inRecvWrId, WcStatus.SUCCESS, WcOpcode.RECV, inLength, 0, 0, solicited);
                respondAck();
                break;
            case TcpFrame.SEND_IMM:
                completeReceive(inRecvWrId, WcStatus.SUCCESS, WcOpcode.RECV, inLength, inImm,
                    WorkCompletions.WC_WITH_IMM, solicited);
                respondAck();
                break;
            case TcpFrame.WRITE:
                respondAck();
                break;
            case TcpFrame.WRITE_IMM:
                completeReceive(inRecvWrId, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, inLength, inImm,
                    WorkCompletions.WC_WITH_IMM, solicited);
                respondAck();
                break;
            case TcpFrame.READ_RESPONSE:
                completeHead(WcStatus.SUCCESS, inLength);
                break;
            default:
                break;
        }
    }

    private void clearDestinations()
    {
        for (int k = 0; k < MAX_SGE; k++)
        {
            dstBuffers[k] = null;
        }
        dstCount = 0;
    }

    private void completeReceive(
        final long wrId, final WcStatus status, final WcOpcode opcode, final int byteLen, final int imm, final int flags)
    {
        completeReceive(wrId, status, opcode, byteLen, imm, flags, false);
    }

    private void completeReceive(
        final long wrId,
        final WcStatus status,
        final WcOpcode opcode,
        final int byteLen,
        final int imm,
        final int flags,
        final boolean solicited)
    {
        if (status != WcStatus.SUCCESS)
        {
            // ERROR before the error completion is visible: whoever sees it sees the QP down. Requests
            // posted meanwhile still queue up and are flushed, in order, by the goDown() that follows.
            synchronized (sendLock)
            {
                state = QpState.ERROR;
            }
        }
        if (!recvCq.offer(wrId, status, opcode, byteLen, imm, flags, qpNum, solicited))
        {
            goDown(null);
        }
    }

    /** Completes the oldest outstanding request (its answer arrived). */
    private void completeHead(final WcStatus status, final int byteLen)
    {
        final long head = sqHead;
        final int i = (int)head & sqMask;
        final boolean signaled = (sqFlags[i] & SendRequest.FLAG_SIGNALED) != 0;
        final boolean offered = !signaled && status == WcStatus.SUCCESS ||
            sendCq.offer(sqWrId[i], status, sqOpcode[i].completionOpcode(), byteLen, 0, 0, qpNum, false);
        releaseSges(i);
        sqHead = head + 1;
        if (!offered)
        {
            goDown(null);
        }
    }

    private void releaseSges(final int i)
    {
        final int base = i * MAX_SGE;
        for (int k = 0; k < MAX_SGE; k++)
        {
            sqSgeRegion[base + k] = null;
        }
    }

    /** This side detected an error in a peer's request: answer it with a NAK and go down. */
    private void fail(final WcStatus status)
    {
        respond(TcpFrame.NAK, status.value(), null, 0);
        goDown(null);
    }

    /**
     * The peer broke the protocol: log once, go down, and leave the frame (nothing after it is parsed).
     * A frame that arrives after this QP went down for another reason (e.g. its CQ overflowed and flushed
     * the send queue, so a late ACK matches nothing) is not the peer's fault and is discarded silently.
     */
    private void protocolError(final String what)
    {
        if (!down)
        {
            LOG.warn("tcp:// peer {} broke the protocol ({}); disconnecting", remoteAddress, what);
        }
        goDown(null);
        stage = STAGE_DISCARD;
    }

    private void respondAck()
    {
        if (respTail != respHead && respType[(int)(respTail - 1) & respMask] == TcpFrame.ACK)
        {
            respValue[(int)(respTail - 1) & respMask]++;
            return;
        }
        respond(TcpFrame.ACK, 1, null, 0);
    }

    private void respond(final int type, final int value, final TcpMemoryRegion region, final int offset)
    {
        if (down)
        {
            return;
        }
        if (respTail - respHead > respMask)
        {
            protocolError("more requests unanswered than the peer's send queue holds");
            return;
        }
        final int j = (int)respTail & respMask;
        respType[j] = type;
        respValue[j] = value;
        respRegion[j] = region;
        respOffset[j] = offset;
        respTail++;
    }

    /** Moves staged frames to the socket, staging more as it drains, until it would block. */
    private void pumpTx() throws IOException
    {
        if (outputShut || socketClosed)
        {
            return;
        }
        while (true)
        {
            if (txSent == txFill)
            {
                txSent = 0;
                txFill = 0;
                stage();
                if (txFill == 0)
                {
                    break;
                }
            }
            txBuffer.limit(txFill).position(txSent);
            txSent += channel.write(txBuffer);
            if (txSent < txFill)
            {
                writeBlocked = true;
                setInterest(SelectionKey.OP_WRITE, true);
                return;
            }
        }
        setInterest(SelectionKey.OP_WRITE, false);
        if (down && respHead == respTail && outRemaining == 0)
        {
            // Everything owed is written (the NAK last): tell the peer with EOF, keep reading to its EOF.
            outputShut = true;
            channel.shutdownOutput();
        }
    }

    /** Fills the staging buffer: the payload in progress, then answers owed, then new requests. */
    private void stage()
    {
        while (true)
        {
            if (outRemaining > 0)
            {
                if (txFill == STAGING_BYTES)
                {
                    return;
                }
                copyPayloadOut();
                continue;
            }
            if (STAGING_BYTES - txFill < TcpFrame.HEADER_LENGTH)
            {
                return;
            }
            if (respHead != respTail)
            {
                stageAnswer();
                continue;
            }
            final long next = sqTx;
            if (down || next == sqTail)
            {
                return;
            }
            final int i = (int)next & sqMask;
            if (sqLocalError[i])
            {
                return;
            }
            stageRequest(i);
            sqTx = next + 1;
        }
    }

    private void stageAnswer()
    {
        final int j = (int)respHead & respMask;
        final int type = respType[j];
        switch (type)
        {
            case TcpFrame.ACK:
                TcpFrame.write(tx, txFill, TcpFrame.ACK, 0, respValue[j], 0, 0, 0);
                break;
            case TcpFrame.NAK:
                TcpFrame.write(tx, txFill, TcpFrame.NAK, 0, 0, respValue[j], 0, 0);
                break;
            default:
                TcpFrame.write(tx, txFill, TcpFrame.READ_RESPONSE, 0, respValue[j], 0, 0, 0);
                if (respValue[j] > 0)
                {
                    srcBuffers[0] = respRegion[j].data();
                    srcOffsets[0] = respOffset[j];
                    srcLengths[0] = respValue[j];
                    startOutPayload(1, respValue[j]);
                }
                respRegion[j] = null;
                break;
        }
        txFill += TcpFrame.HEADER_LENGTH;
        respHead++;
    }

    private void stageRequest(final int i)
    {
        final WrOpcode opcode = sqOpcode[i];
        final int type;
        switch (opcode)
        {
            case SEND:
                type = TcpFrame.SEND;
                break;
            case SEND_WITH_IMM:
                type = TcpFrame.SEND_IMM;
                break;
            case RDMA_WRITE:
                type = TcpFrame.WRITE;
                break;
            case RDMA_WRITE_WITH_IMM:
                type = TcpFrame.WRITE_IMM;
                break;
            default:
                type = TcpFrame.READ_REQUEST;
                break;
        }
        final int flags = (sqFlags[i] & SendRequest.FLAG_SOLICITED) != 0 ? TcpFrame.FLAG_SOLICITED : 0;
        final int length = sqLength[i];
        TcpFrame.write(tx, txFill, type, flags, length, sqImm[i], sqRkey[i], sqRemoteAddress[i]);
        txFill += TcpFrame.HEADER_LENGTH;
        if (type != TcpFrame.READ_REQUEST && length > 0)
        {
            final int base = i * MAX_SGE;
            final int count = sqSgeCount[i];
            for (int k = 0; k < count; k++)
            {
                srcBuffers[k] = sqSgeRegion[base + k].data();
                srcOffsets[k] = sqSgeOffset[base + k];
                srcLengths[k] = sqSgeLength[base + k];
            }
            startOutPayload(count, length);
        }
    }

    private void startOutPayload(final int count, final long length)
    {
        srcCount = count;
        srcIndex = 0;
        srcPosition = 0;
        outRemaining = length;
    }

    private void copyPayloadOut()
    {
        while (outRemaining > 0 && txFill < STAGING_BYTES)
        {
            final int left = srcLengths[srcIndex] - srcPosition;
            if (left == 0)
            {
                srcBuffers[srcIndex] = null;
                srcIndex++;
                srcPosition = 0;
                continue;
            }
            final int n = Math.min(left, STAGING_BYTES - txFill);
            tx.putBytes(txFill, srcBuffers[srcIndex], srcOffsets[srcIndex] + srcPosition, n);
            txFill += n;
            srcPosition += n;
            outRemaining -= n;
        }
        if (outRemaining == 0)
        {
            for (int k = 0; k < MAX_SGE; k++)
            {
                srcBuffers[k] = null;
            }
        }
    }

    private void setInterest(final int op, final boolean on)
    {
        final int ops = on ? interestOps | op : interestOps & ~op;
        if (ops != interestOps && key != null && key.isValid())
        {
            interestOps = ops;
            key.interestOps(ops);
        }
    }

    /** EOF or an error on the socket: the peer is gone. */
    void peerGone()
    {
        goDown(null);
        closeSocket();
    }

    /**
     * Moves the QP to ERROR once: the error status (if any) completes the oldest outstanding request,
     * everything else outstanding is flushed, the disconnect handler runs, and the answers still owed
     * (the NAK) are written before the socket is half-closed.
     */
    void goDown(final WcStatus headStatus)
    {
        if (down)
        {
            return;
        }
        down = true;
        rnrWaiting = false;
        stage = STAGE_DISCARD;
        clearDestinations();
        synchronized (sendLock)
        {
            state = QpState.ERROR;
            long head = sqHead;
            final long tail = sqTail;
            if (headStatus != null && head != tail)
            {
                final int i = (int)head & sqMask;
                sendCq.offer(sqWrId[i], headStatus, sqOpcode[i].completionOpcode(), 0, 0, 0, qpNum, false);
                releaseSges(i);
                head++;
            }
            for (; head != tail; head++)
            {
                final int i = (int)head & sqMask;
                sendCq.offer(sqWrId[i], WcStatus.WR_FLUSH_ERR, sqOpcode[i].completionOpcode(), 0, 0, 0, qpNum, false);
                releaseSges(i);
            }
            sqHead = head;
            sqTx = head;
            sendFlushed = true;
        }
        synchronized (recvLock)
        {
            recvFlushed = true;
            long head = rqHead;
            final long tail = rqTail;
            for (; head != tail; head++)
            {
                recvCq.offer(rqWrId[(int)head & rqMask], WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qpNum, false);
            }
            rqHead = head;
        }
        if (!socketClosed)
        {
            setInterest(SelectionKey.OP_READ, true);
            try
            {
                pumpTx();
            }
            catch (final IOException ex)
            {
                closeSocket();
            }
        }
        final Runnable handler = disconnectHandler;
        if (handler != null)
        {
            nic.schedule(() ->
            {
                try
                {
                    handler.run();
                }
                catch (final Throwable t)
                {
                    LOG.error("disconnect handler of {} threw", this, t);
                }
            });
        }
    }

    /** Closes the socket; the QP needs the NIC no more. */
    void closeSocket()
    {
        if (socketClosed)
        {
            return;
        }
        socketClosed = true;
        if (key != null)
        {
            key.cancel();
        }
        try
        {
            channel.close();
        }
        catch (final IOException ignore)
        {
            // Closing anyway.
        }
        for (int k = 0; k < MAX_SGE; k++)
        {
            srcBuffers[k] = null;
        }
        outRemaining = 0;
        nic.removed(this);
    }

    @Override
    public String toString()
    {
        return "TcpQueuePair{qpNum=" + qpNum + ", state=" + state + ", remote=" + remoteAddress + '}';
    }
}
