package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.base.RegionChecks;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The inbound side of a {@link TcpQueuePair}: parses the frames the peer sends out of a staging buffer (a large
 * payload is read from the socket straight into its destination), checks rkey, bounds, access and PD before touching
 * memory, places SEND data into the next posted receive, answers READs, holds a SEND that finds no receive for the
 * peer's RNR time, and hands the ACKs, NAKs and READ data that answer this side's requests to the queue pair.
 *
 * <p>Used only by its queue pair, by whichever thread holds the QP's wire lock (the NIC thread, the poller of the
 * QP's receive CQ, a posting thread); every answer,
 * completion and error goes through the queue pair, which owns the send queue, the answers owed and the socket.
 */
final class TcpInbound
{
    /** Reads of the socket at most when the peer is gone, to deliver what it sent before ({@link #deliverLeftovers}). */
    private static final int LEFTOVER_READS = 64;

    private static final int STAGING_BYTES = 64 * 1024;
    /** Payload bytes still to come from which the socket is read straight into the destination memory. */
    static final int DIRECT_READ_MIN_BYTES = 4096;

    private static final int STAGE_HEADER = 0;
    private static final int STAGE_DISPATCH = 1;
    private static final int STAGE_PAYLOAD = 2;
    private static final int STAGE_DISCARD = 3;

    private static final int TAKEN = 0;
    private static final int WAIT = 1;
    private static final int FAILED = 2;

    private final TcpQueuePair qp;
    private final TcpVerbsContext context;
    private final TcpProtectionDomain pd;
    private final TcpLink link;
    private final TcpSendQueue sq;
    private final TcpRecvQueue rq;
    private final long peerRnrRetryNanos;

    // Inbound staging and the frame being parsed out of it.
    private final ByteBuffer rxBuffer = ByteBuffer.allocateDirect(STAGING_BYTES);
    private final UnsafeBuffer rx = new UnsafeBuffer(rxBuffer);
    private int stage = STAGE_HEADER;
    private int inType;
    private int inFlags;
    private int inAcks;
    private int inLength;
    private int inImm;
    private int inRkey;
    private long inAddress;
    private long inRecvWrId;
    private int remoteOffset;
    private final TcpPayloadTarget target = new TcpPayloadTarget();
    private final ByteBuffer[] directReads = new ByteBuffer[2];
    private boolean inputEnded;

    // A SEND (or WRITE_WITH_IMM) waiting for a receive to be posted.
    private volatile boolean rnrWaiting;
    private long rnrDeadline;

    TcpInbound(
        final TcpQueuePair qp,
        final TcpVerbsContext context,
        final TcpProtectionDomain pd,
        final TcpLink link,
        final TcpSendQueue sq,
        final TcpRecvQueue rq,
        final long peerRnrRetryNanos)
    {
        this.qp = qp;
        this.context = context;
        this.pd = pd;
        this.link = link;
        this.sq = sq;
        this.rq = rq;
        this.peerRnrRetryNanos = peerRnrRetryNanos;
        directReads[1] = rxBuffer;
    }

    /** @return true while a frame waits for a receive to be posted (reading from the socket is stopped). */
    boolean rnrWaiting()
    {
        return rnrWaiting;
    }

    /**
     * Resumes an RNR wait once a receive was posted, or fails it once its time ran out.
     *
     * @return nanoseconds until the wait runs out, or Long.MAX_VALUE if none is running any more
     */
    long serviceRnr(final long now) throws IOException
    {
        if (!rnrWaiting)
        {
            return Long.MAX_VALUE;
        }
        if (rq.head != rq.tail)
        {
            resumeInbound();
        }
        else if (now - rnrDeadline >= 0)
        {
            rnrWaiting = false;
            qp.fail(WcStatus.RNR_RETRY_EXC_ERR);
            resumeInbound();
        }
        else
        {
            return rnrDeadline - now;
        }
        return Long.MAX_VALUE;
    }

    /** The QP went down: nothing more is parsed (input is read and dropped until the peer's EOF). */
    void stop()
    {
        rnrWaiting = false;
        stage = STAGE_DISCARD;
        target.clear();
    }

    /** The peer broke the protocol: the frame being parsed is left, and nothing after it is parsed. */
    void discard()
    {
        stage = STAGE_DISCARD;
    }

    /** The socket is closed: drops the references to destination memory. */
    void forget()
    {
        target.forget();
    }

    /**
     * Reads what the socket holds and parses it.
     *
     * @return true if anything was read (or the stream ended)
     */
    boolean onReadable() throws IOException
    {
        final int n = link.read(rxBuffer);
        if (n < 0)
        {
            qp.peerGone();
            return true;
        }
        if (n > 0)
        {
            rxBuffer.flip();
            parse();
            rxBuffer.compact();
            if (inputEnded)
            {
                qp.peerGone();
            }
            return true;
        }
        return false;
    }

    /**
     * The peer is gone (wire lock held): parses what the socket still holds into the receives posted, until it holds
     * nothing, ends, fails, or waits for a receive (a receiver not ready gets nothing more: the peer is not there to
     * retry). Bounded ({@link #LEFTOVER_READS} reads), since a socket that failed only on this side may still be
     * receiving.
     */
    void deliverLeftovers()
    {
        try
        {
            for (int i = 0; i < LEFTOVER_READS && qp.drainingLeftovers() && !qp.isDown() && !rnrWaiting; i++)
            {
                if (!onReadable())
                {
                    return;
                }
            }
        }
        catch (final IOException ex)
        {
            // the end of what can be read: going down follows
        }
    }

    private void resumeInbound() throws IOException
    {
        rnrWaiting = false;
        qp.updateReadInterest();
        rxBuffer.flip();
        parse();
        rxBuffer.compact();
        if (inputEnded)
        {
            qp.peerGone();
        }
    }

    private void parse() throws IOException
    {
        while (true)
        {
            if (qp.isDown())
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
                    inAcks = TcpFrame.acks(rx, at);
                    inLength = TcpFrame.length(rx, at);
                    inImm = TcpFrame.imm(rx, at);
                    inRkey = TcpFrame.rkey(rx, at);
                    inAddress = TcpFrame.address(rx, at);
                    rxBuffer.position(at + TcpFrame.HEADER_LENGTH);
                    stage = STAGE_DISPATCH;
                    if (inAcks > 0)
                    {
                        // ACKs riding on a request answer this side's oldest requests before the request is acted on.
                        if (inType >= TcpFrame.SEND && inType <= TcpFrame.READ_REQUEST)
                        {
                            onAcks(inAcks);
                        }
                        else
                        {
                            qp.protocolError("ACKs carried by a frame of type " + inType);
                        }
                    }
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
                            qp.protocolError("payload longer than its destination");
                            break;
                        }
                        if (target.remaining() > 0 && (target.remaining() < DIRECT_READ_MIN_BYTES || !readDirect()))
                        {
                            return;
                        }
                        if (target.remaining() > 0)
                        {
                            break;
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
            qp.protocolError("negative length");
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
                        qp.fail(WcStatus.REM_ACCESS_ERR);
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
                        qp.fail(WcStatus.REM_ACCESS_ERR);
                        return true;
                    }
                }
                // Answered in turn; the data is copied out of the region when the answer is staged.
                qp.respond(TcpFrame.READ_RESPONSE, inLength, region, remoteOffset);
                stage = STAGE_HEADER;
                return true;
            }
            case TcpFrame.ACK:
            {
                stage = STAGE_HEADER;
                onAcks(inLength);
                return true;
            }
            case TcpFrame.NAK:
            {
                if (sq.head == sq.tx)
                {
                    qp.protocolError("NAK without a matching request");
                    return true;
                }
                qp.goDown(WcStatus.fromValue(inImm));
                return true;
            }
            case TcpFrame.READ_RESPONSE:
            {
                final long head = sq.head;
                final int i = (int)head & sq.mask;
                if (head == sq.tx || sq.opcode[i] != WrOpcode.RDMA_READ || sq.length[i] != inLength)
                {
                    qp.protocolError("READ_RESPONSE without a matching READ");
                    return true;
                }
                target.toReadSges(sq, i);
                startPayload();
                return true;
            }
            default:
                qp.protocolError("unknown frame type " + inType);
                return true;
        }
    }

    /** Completes the oldest {@code count} outstanding requests, each of which must be one an ACK answers. */
    private void onAcks(final int count)
    {
        for (int n = 0; n < count && !qp.isDown(); n++)
        {
            final long head = sq.head;
            if (head == sq.tx || sq.opcode[(int)head & sq.mask] == WrOpcode.RDMA_READ)
            {
                qp.protocolError("ACK without a matching request");
                return;
            }
            qp.completeHead(WcStatus.SUCCESS, sq.length[(int)head & sq.mask]);
        }
    }

    /**
     * The staging buffer is drained and much of the payload is still to come: reads it from the socket straight
     * into its destination (and what follows it into the empty staging buffer), without a copy.
     *
     * @return true if bytes were read (parse on), false if none is available now or the stream ended
     */
    private boolean readDirect() throws IOException
    {
        if (rxBuffer.hasRemaining())
        {
            return false;
        }
        directReads[0] = target.nextSpan();
        if (directReads[0] == null)
        {
            // Cannot happen (lengths were checked first); place() reports it.
            return false;
        }
        rxBuffer.clear();
        final long n = link.read(directReads, 0, 2);
        final ByteBuffer span = directReads[0];
        directReads[0] = null;
        if (n > 0)
        {
            target.advance(span);
        }
        rxBuffer.flip();
        if (n < 0)
        {
            inputEnded = true;
        }
        return n > 0;
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
                qp.fail(WcStatus.RNR_RETRY_EXC_ERR);
                return FAILED;
            }
            rnrWaiting = true;
            rnrDeadline = System.nanoTime() + peerRnrRetryNanos;
            // Stop reading: frames behind this one must wait for it, as on an RC connection.
            qp.updateReadInterest();
            // A receive posted between the check above and the flag being visible is seen by doWork().
        }
        return WAIT;
    }

    /** Resolves receive {@code i}'s SGEs as the payload's destination; on failure completes it and fails. */
    private boolean resolveReceive(final int i)
    {
        if (inLength > TcpPayloadTarget.receiveLength(rq, i))
        {
            qp.completeReceive(inRecvWrId, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, 0);
            qp.fail(WcStatus.REM_INV_REQ_ERR);
            return false;
        }
        if (!target.toReceive(rq, i, context, pd))
        {
            qp.completeReceive(inRecvWrId, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0);
            qp.fail(WcStatus.REM_OP_ERR);
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
            case TcpFrame.SEND_IMM:
            case TcpFrame.WRITE_IMM:
                // a receive completes (with the immediate, if any), then the ACK
                final boolean withImm = inType != TcpFrame.SEND;
                qp.completeReceive(inRecvWrId, WcStatus.SUCCESS,
                    inType == TcpFrame.WRITE_IMM ? WcOpcode.RECV_RDMA_WITH_IMM : WcOpcode.RECV, inLength,
                    withImm ? inImm : 0, withImm ? WorkCompletions.WC_WITH_IMM : 0, solicited);
                qp.respondAck();
                break;
            case TcpFrame.WRITE:
                qp.respondAck();
                break;
            case TcpFrame.READ_RESPONSE:
                qp.completeHead(WcStatus.SUCCESS, inLength);
                break;
            default:
                break;
        }
    }
}
