package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The outbound half of a tcp QP's NIC work: fills a staging buffer with frames ({@link TcpFrame}) — first the
 * rest of the payload in progress, then the answers owed to the peer ({@link TcpAnswerQueue}), then this
 * side's requests from the send queue ({@link TcpSendQueue}, at {@code tx}) — copying payloads out of
 * registered memory, and writes it to the socket. NIC thread only.
 */
final class TcpTransmitter
{
    static final int STAGING_BYTES = 64 * 1024;
    private static final int MAX_SGE = TcpSendQueue.MAX_SGE;

    private final TcpSendQueue sq;
    private final TcpAnswerQueue answers;
    private final ByteBuffer txBuffer = ByteBuffer.allocateDirect(STAGING_BYTES);
    private final UnsafeBuffer tx = new UnsafeBuffer(txBuffer);
    private final ByteBuffer[] txBuffers = {txBuffer};
    private int txFill;
    private int txSent;
    private final UnsafeBuffer[] srcBuffers = new UnsafeBuffer[MAX_SGE];
    private final int[] srcOffsets = new int[MAX_SGE];
    private final int[] srcLengths = new int[MAX_SGE];
    private int srcCount;
    private int srcIndex;
    private int srcPosition;
    private long outRemaining;

    TcpTransmitter(final TcpSendQueue sq, final TcpAnswerQueue answers)
    {
        this.sq = sq;
        this.answers = answers;
    }

    /**
     * Writes staged frames to the socket, staging more as it drains.
     *
     * @param down whether the QP is down: then only answers (the NAK last) are staged, no new request
     * @return true if everything is written, false if the socket would block
     */
    boolean write(final TcpLink link, final boolean down) throws IOException
    {
        while (true)
        {
            if (txSent == txFill)
            {
                txSent = 0;
                txFill = 0;
                stage(down);
                if (txFill == 0)
                {
                    return true;
                }
            }
            txBuffer.limit(txFill).position(txSent);
            txSent += (int)link.write(txBuffers, 0, 1);
            if (txSent < txFill)
            {
                return false;
            }
        }
    }

    /** @return true if bytes are staged but not written, or a payload is only partly staged. */
    boolean hasPending()
    {
        return outRemaining > 0 || txSent != txFill;
    }

    /** @return true if no payload is in progress. */
    boolean payloadDone()
    {
        return outRemaining == 0;
    }

    /** The socket is closed: drop references to registered memory. */
    void clear()
    {
        for (int k = 0; k < MAX_SGE; k++)
        {
            srcBuffers[k] = null;
        }
        outRemaining = 0;
    }

    /** Fills the staging buffer: the payload in progress, then answers owed, then new requests. */
    private void stage(final boolean down)
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
            if (answers.head != answers.tail)
            {
                stageAnswer();
                continue;
            }
            final long next = sq.tx;
            if (down || next == sq.tail)
            {
                return;
            }
            final int i = (int)next & sq.mask;
            if (sq.localError[i])
            {
                return;
            }
            stageRequest(i);
            sq.tx = next + 1;
        }
    }

    private void stageAnswer()
    {
        final int j = (int)answers.head & answers.mask;
        final int type = answers.type[j];
        switch (type)
        {
            case TcpFrame.ACK:
                TcpFrame.write(tx, txFill, TcpFrame.ACK, 0, answers.value[j], 0, 0, 0);
                break;
            case TcpFrame.NAK:
                TcpFrame.write(tx, txFill, TcpFrame.NAK, 0, 0, answers.value[j], 0, 0);
                break;
            default:
                TcpFrame.write(tx, txFill, TcpFrame.READ_RESPONSE, 0, answers.value[j], 0, 0, 0);
                if (answers.value[j] > 0)
                {
                    srcBuffers[0] = answers.region[j].buffer();
                    srcOffsets[0] = answers.offset[j];
                    srcLengths[0] = answers.value[j];
                    startOutPayload(1, answers.value[j]);
                }
                answers.region[j] = null;
                break;
        }
        txFill += TcpFrame.HEADER_LENGTH;
        answers.head++;
    }

    private void stageRequest(final int i)
    {
        final WrOpcode opcode = sq.opcode[i];
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
        final int flags = (sq.flags[i] & SendRequest.FLAG_SOLICITED) != 0 ? TcpFrame.FLAG_SOLICITED : 0;
        final int length = sq.length[i];
        TcpFrame.write(tx, txFill, type, flags, length, sq.imm[i], sq.rkey[i], sq.remoteAddress[i]);
        txFill += TcpFrame.HEADER_LENGTH;
        if (type != TcpFrame.READ_REQUEST && length > 0)
        {
            final int base = i * MAX_SGE;
            final int count = sq.sgeCount[i];
            for (int k = 0; k < count; k++)
            {
                srcBuffers[k] = sq.sgeRegion[base + k].buffer();
                srcOffsets[k] = sq.sgeOffset[base + k];
                srcLengths[k] = sq.sgeLength[base + k];
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
}
