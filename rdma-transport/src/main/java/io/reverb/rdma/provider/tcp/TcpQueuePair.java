package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.AbstractQueuePair;
import io.reverb.rdma.provider.RegionChecks;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.QpState;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
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
    private final TcpLink link;

    private final Object sendLock = new Object();
    private final Object recvLock = new Object();
    private volatile boolean closed;

    private final TcpSendQueue sq;
    private final TcpRecvQueue rq;
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
    private final TcpAnswerQueue answers;

    // Outbound staging and the payload being copied into it.
    private final TcpTransmitter transmitter;

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
    private long inRecvWrId;
    private int remoteOffset;
    private final TcpPayloadTarget target = new TcpPayloadTarget();
    private volatile boolean rnrWaiting;
    private long rnrDeadline;

    TcpQueuePair(
        final TcpVerbsContext context,
        final int qpNum,
        final QueuePairAttributes attributes,
        final TcpLink link,
        final TcpHandshake peer,
        final String remoteAddress)
    {
        super(qpNum, attributes, remoteAddress, QpState.RTS);
        this.context = context;
        this.nic = context.nic();
        remotePrivateData(peer.privateDataBuffer());
        this.peerRnrRetryNanos = peer.rnrRetryNanos;
        this.link = link;

        this.sq = new TcpSendQueue(attributes.maxSendWr());
        this.rq = new TcpRecvQueue(attributes.maxRecvWr());
        this.answers = new TcpAnswerQueue(peer.maxSendWr);
        this.transmitter = new TcpTransmitter(sq, answers);
    }

    // ------------------------------------------------------------------------------------------------
    // Posting (any thread)
    // ------------------------------------------------------------------------------------------------

    @Override
    public int postSend(final SendRequest request)
    {
        synchronized (sendLock)
        {
            final int checked = checkSend(request, closed);
            if (checked != PostResult.OK)
            {
                return checked;
            }
            final WrOpcode opcode = request.opcode();
            final long total = request.totalLength();
            if (sendFlushed)
            {
                // goDown() flushed the queue under sendLock; what is posted later is flushed here, in order.
                return sendCq.offer(request.wrId(), WcStatus.WR_FLUSH_ERR, opcode.completionOpcode(), 0, 0, 0,
                    qpNum, false) ? PostResult.OK : PostResult.QUEUE_FULL;
            }
            if (!sq.add(request, (int)total, context, pd))
            {
                return PostResult.QUEUE_FULL;
            }
        }
        nic.wake();
        return PostResult.OK;
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
            if (recvFlushed)
            {
                return recvCq.offer(request.wrId(), WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qpNum, false) ?
                    PostResult.OK : PostResult.QUEUE_FULL;
            }
            if (!rq.add(request))
            {
                return PostResult.QUEUE_FULL;
            }
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
        key = link.selectable().register(selector, interestOps, this);
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
            if (!down && sq.head == sq.tx && sq.tx != sq.tail && sq.localError[(int)sq.tx & sq.mask])
            {
                goDown(WcStatus.LOC_PROT_ERR);
            }
            if (rnrWaiting)
            {
                if (rq.head != rq.tail)
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
            if (!rnrWaiting && !socketClosed && link.hasBufferedInput())
            {
                onReadable();
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
        if (rnrWaiting ? rq.tail != rq.head : link.hasBufferedInput())
        {
            return true;
        }
        if (writeBlocked)
        {
            return false;
        }
        if (!answers.isEmpty() || transmitter.hasPending())
        {
            return true;
        }
        final long tx = sq.tx;
        return !down && tx != sq.tail && (!sq.localError[(int)tx & sq.mask] || sq.head == tx);
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
        final int n = link.read(rxBuffer);
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
                    if (target.remaining() > 0)
                    {
                        if (!target.place(rxBuffer, rx))
                        {
                            // Cannot happen: lengths were checked against the destination before the payload.
                            protocolError("payload longer than its destination");
                        }
                        if (target.remaining() > 0)
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
                final int i = (int)rq.head & rq.mask;
                inRecvWrId = rq.wrId[i];
                rq.head = rq.head + 1;
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
                target.clear();
                if (inLength > 0)
                {
                    final TcpMemoryRegion region = resolveRemote(Access.REMOTE_WRITE);
                    if (region == null)
                    {
                        fail(WcStatus.REM_ACCESS_ERR);
                        return true;
                    }
                    target.toRegion(region, remoteOffset, inLength);
                }
                if (inType == TcpFrame.WRITE_IMM)
                {
                    // Claimed before any data is placed: an RNR failure leaves the target memory untouched.
                    final int taken = takeReceive();
                    if (taken != TAKEN)
                    {
                        return taken == FAILED;
                    }
                    inRecvWrId = rq.wrId[(int)rq.head & rq.mask];
                    rq.head = rq.head + 1;
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
                    final long head = sq.head;
                    if (head == sq.tx || sq.opcode[(int)head & sq.mask] == WrOpcode.RDMA_READ)
                    {
                        protocolError("ACK without a matching request");
                        return true;
                    }
                    completeHead(WcStatus.SUCCESS, sq.length[(int)head & sq.mask]);
                }
                stage = STAGE_HEADER;
                return true;
            }
            case TcpFrame.NAK:
            {
                if (sq.head == sq.tx)
                {
                    protocolError("NAK without a matching request");
                    return true;
                }
                goDown(WcStatus.fromValue(inImm));
                return true;
            }
            case TcpFrame.READ_RESPONSE:
            {
                final long head = sq.head;
                final int i = (int)head & sq.mask;
                if (head == sq.tx || sq.opcode[i] != WrOpcode.RDMA_READ || sq.length[i] != inLength)
                {
                    protocolError("READ_RESPONSE without a matching READ");
                    return true;
                }
                target.toReadSges(sq, i);
                startPayload();
                return true;
            }
            default:
                protocolError("unknown frame type " + inType);
                return true;
        }
    }

    /** @return TAKEN if a receive is at rq.head, WAIT while the RNR time runs, FAILED once it ran out. */
    private int takeReceive()
    {
        if (rq.head != rq.tail)
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
        if (inLength > TcpPayloadTarget.receiveLength(rq, i))
        {
            completeReceive(inRecvWrId, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, 0);
            fail(WcStatus.REM_INV_REQ_ERR);
            return false;
        }
        if (!target.toReceive(rq, i, context, pd))
        {
            completeReceive(inRecvWrId, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0);
            fail(WcStatus.REM_OP_ERR);
            return false;
        }
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
        target.start(inLength);
        stage = STAGE_PAYLOAD;
    }

    private void finishFrame()
    {
        stage = STAGE_HEADER;
        target.clear();
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
        final long head = sq.head;
        final int i = (int)head & sq.mask;
        final boolean signaled = (sq.flags[i] & SendRequest.FLAG_SIGNALED) != 0;
        final boolean offered = !signaled && status == WcStatus.SUCCESS ||
            sendCq.offer(sq.wrId[i], status, sq.opcode[i].completionOpcode(), byteLen, 0, 0, qpNum, false);
        sq.releaseSges(i);
        sq.head = head + 1;
        if (!offered)
        {
            goDown(null);
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
        if (!answers.mergeAck())
        {
            respond(TcpFrame.ACK, 1, null, 0);
        }
    }

    private void respond(final int type, final int value, final TcpMemoryRegion region, final int offset)
    {
        if (down)
        {
            return;
        }
        if (!answers.add(type, value, region, offset))
        {
            protocolError("more requests unanswered than the peer's send queue holds");
        }
    }

    /** Moves staged frames to the socket, staging more as it drains, until it would block. */
    private void pumpTx() throws IOException
    {
        if (outputShut || socketClosed)
        {
            return;
        }
        if (!transmitter.write(link, down) || !link.flush())
        {
            writeBlocked = true;
            setInterest(SelectionKey.OP_WRITE, true);
            return;
        }
        setInterest(SelectionKey.OP_WRITE, false);
        if (down && answers.isEmpty() && transmitter.payloadDone())
        {
            // Everything owed is written (the NAK last): tell the peer with EOF, keep reading to its EOF.
            outputShut = true;
            link.shutdownOutput();
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
        target.clear();
        synchronized (sendLock)
        {
            state = QpState.ERROR;
            long head = sq.head;
            final long tail = sq.tail;
            if (headStatus != null && head != tail)
            {
                final int i = (int)head & sq.mask;
                sendCq.offer(sq.wrId[i], headStatus, sq.opcode[i].completionOpcode(), 0, 0, 0, qpNum, false);
                sq.releaseSges(i);
                head++;
            }
            for (; head != tail; head++)
            {
                final int i = (int)head & sq.mask;
                sendCq.offer(sq.wrId[i], WcStatus.WR_FLUSH_ERR, sq.opcode[i].completionOpcode(), 0, 0, 0, qpNum, false);
                sq.releaseSges(i);
            }
            sq.head = head;
            sq.tx = head;
            sendFlushed = true;
        }
        synchronized (recvLock)
        {
            recvFlushed = true;
            long head = rq.head;
            final long tail = rq.tail;
            for (; head != tail; head++)
            {
                recvCq.offer(rq.wrId[(int)head & rq.mask], WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qpNum, false);
            }
            rq.head = head;
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
            link.close();
        }
        catch (final IOException ignore)
        {
            // Closing anyway.
        }
        transmitter.clear();
        nic.removed(this);
    }

    @Override
    public String toString()
    {
        return "TcpQueuePair{qpNum=" + qpNum + ", state=" + state + ", remote=" + remoteAddress + '}';
    }
}
