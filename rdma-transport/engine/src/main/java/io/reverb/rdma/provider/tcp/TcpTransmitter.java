package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The outbound half of a tcp QP's NIC work: stages frames ({@link TcpFrame}) — first the answers owed to the peer
 * ({@link TcpAnswerQueue}), then this side's requests from the send queue ({@link TcpSendQueue}, at {@code tx}) —
 * and writes them to the link with one gathering write.
 *
 * <p>Headers and small payloads (below {@link #GATHER_MIN_BYTES}) are copied into a staging buffer, so that many
 * small frames leave in one system call; a larger payload is not copied at all: the write gathers it straight from
 * the registered memory it was posted from (or, for a READ_RESPONSE, the region it reads). A lone ACK at the end of
 * the answers can ride on the next request instead ({@link TcpFrame}'s {@code acks}); whether it may wait for one is
 * the QP's decision ({@link TcpAckHold}). Called by whoever holds the QP's wire lock.
 */
final class TcpTransmitter
{
    static final int STAGING_BYTES = 64 * 1024;
    /** Payloads from this size on are written from registered memory rather than copied. */
    static final int GATHER_MIN_BYTES = 4096;
    private static final int MAX_SGE = TcpSendQueue.MAX_SGE;
    private static final int MAX_IOV = 64;

    private final TcpSendQueue sq;
    private final TcpAnswerQueue answers;
    private final ByteBuffer txBuffer = ByteBuffer.allocateDirect(STAGING_BYTES);
    private final UnsafeBuffer tx = new UnsafeBuffer(txBuffer);
    private int txFill;
    private int segmentStart;

    // The gather list: slices of the staging buffer and views of registered memory, written in order.
    private final ByteBuffer[] iov = new ByteBuffer[MAX_IOV];
    private final ByteBuffer[] stagingSlices = new ByteBuffer[MAX_IOV];
    private final TcpRegionViews views = new TcpRegionViews(MAX_IOV);
    private int iovCount;
    private int iovIndex;
    /** Bytes handed to the link so far (only differences between two reads mean anything). */
    private long written;

    TcpTransmitter(final TcpSendQueue sq, final TcpAnswerQueue answers)
    {
        this.sq = sq;
        this.answers = answers;
        for (int k = 0; k < MAX_IOV; k++)
        {
            stagingSlices[k] = txBuffer.duplicate();
        }
    }

    /**
     * Writes staged frames to the link, staging more as it drains.
     *
     * @param down whether the QP is down: then only answers (the NAK last) are staged, no new request
     * @param holdAck whether a lone ACK at the end of the answers may wait to ride on a later request
     * @return true if everything staged is written, false if the link would block
     */
    boolean write(final TcpLink link, final boolean down, final boolean holdAck) throws IOException
    {
        while (true)
        {
            if (iovIndex == iovCount)
            {
                releaseViews();
                txFill = 0;
                segmentStart = 0;
                iovCount = 0;
                iovIndex = 0;
                stage(down, holdAck);
                closeSegment();
                if (iovCount == 0)
                {
                    return true;
                }
            }
            written += link.write(iov, iovIndex, iovCount - iovIndex);
            while (iovIndex < iovCount && !iov[iovIndex].hasRemaining())
            {
                iovIndex++;
            }
            if (iovIndex < iovCount)
            {
                return false;
            }
        }
    }

    /** @return bytes handed to the link so far; the difference between two calls is what was written between them */
    long written()
    {
        return written;
    }

    /** @return true if bytes are staged but not written. */
    boolean hasPending()
    {
        return iovIndex != iovCount;
    }

    /** The socket is closed: drop references to registered memory. */
    void clear()
    {
        iovIndex = 0;
        iovCount = 0;
        releaseViews();
        views.clear();
    }

    private void releaseViews()
    {
        for (int k = 0; k < iovCount; k++)
        {
            iov[k] = null;
        }
    }

    /** Stages answers owed, then new requests, while the staging buffer and the gather list have room. */
    private void stage(final boolean down, final boolean holdAck)
    {
        while (iovCount <= MAX_IOV - 2 * MAX_SGE - 2 && STAGING_BYTES - txFill >= TcpFrame.HEADER_LENGTH)
        {
            final long next = sq.tx;
            final int i = (int)next & sq.mask;
            final boolean requestReady = !down && next != sq.tail && !sq.localError[i];
            int acks = 0;
            if (answers.head != answers.tail)
            {
                if (down || answers.tail - answers.head > 1 || answers.type[(int)answers.head & answers.mask] != TcpFrame.ACK)
                {
                    if (!stageAnswer())
                    {
                        return;
                    }
                    continue;
                }
                // A lone ACK: it rides on the next request, waits for one, or goes alone.
                final int j = (int)answers.head & answers.mask;
                if (requestReady && answers.value[j] <= TcpFrame.MAX_PIGGYBACK_ACKS)
                {
                    acks = answers.value[j];
                }
                else if (requestReady || !holdAck)
                {
                    stageAnswer();
                    continue;
                }
            }
            if (!requestReady || !stageRequest(i, acks))
            {
                return;
            }
            if (acks > 0)
            {
                answers.head++;
            }
            sq.tx = next + 1;
        }
    }

    /** @return false if the staging buffer has no room for it now */
    private boolean stageAnswer()
    {
        final int j = (int)answers.head & answers.mask;
        final int type = answers.type[j];
        switch (type)
        {
            case TcpFrame.ACK:
                TcpFrame.write(tx, txFill, TcpFrame.ACK, 0, 0, answers.value[j], 0, 0, 0);
                txFill += TcpFrame.HEADER_LENGTH;
                break;
            case TcpFrame.NAK:
                TcpFrame.write(tx, txFill, TcpFrame.NAK, 0, 0, 0, answers.value[j], 0, 0);
                txFill += TcpFrame.HEADER_LENGTH;
                break;
            default:
            {
                final int length = answers.value[j];
                if (!roomFor(length))
                {
                    return false;
                }
                TcpFrame.write(tx, txFill, TcpFrame.READ_RESPONSE, 0, 0, length, 0, 0, 0);
                txFill += TcpFrame.HEADER_LENGTH;
                if (length > 0)
                {
                    addPayload(answers.region[j], answers.offset[j], length);
                }
                answers.region[j] = null;
                break;
            }
        }
        answers.head++;
        return true;
    }

    /** @return false if the staging buffer has no room for it now */
    private boolean stageRequest(final int i, final int acks)
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
        final int length = sq.length[i];
        final boolean hasPayload = type != TcpFrame.READ_REQUEST && length > 0;
        if (!roomForCopied(hasPayload ? copiedBytes(i) : 0))
        {
            return false;
        }
        final int flags = (sq.flags[i] & SendRequest.FLAG_SOLICITED) != 0 ? TcpFrame.FLAG_SOLICITED : 0;
        TcpFrame.write(tx, txFill, type, flags, acks, length, sq.imm[i], sq.rkey[i], sq.remoteAddress[i]);
        txFill += TcpFrame.HEADER_LENGTH;
        if (hasPayload)
        {
            final int base = i * MAX_SGE;
            final int count = sq.sgeCount[i];
            for (int k = 0; k < count; k++)
            {
                addPayload(sq.sgeRegion[base + k], sq.sgeOffset[base + k], sq.sgeLength[base + k]);
            }
        }
        return true;
    }

    /** @return true if a header and a payload of {@code length} bytes fit now (a gathered payload takes no room) */
    private boolean roomFor(final int length)
    {
        return roomForCopied(length >= GATHER_MIN_BYTES ? 0 : length);
    }

    /** @return true if a header and {@code copied} bytes copied into the staging buffer fit now */
    private boolean roomForCopied(final int copied)
    {
        return STAGING_BYTES - txFill >= TcpFrame.HEADER_LENGTH + copied;
    }

    /**
     * @return the bytes of request {@code i}'s payload that {@link #addPayload} copies into the staging buffer: each
     *         SGE under {@link #GATHER_MIN_BYTES} is copied, whatever the request's total (a request of several small
     *         SGEs may be larger than that in all, e.g. an engine message split where its send ring wraps)
     */
    private int copiedBytes(final int i)
    {
        final int base = i * MAX_SGE;
        final int count = sq.sgeCount[i];
        int copied = 0;
        for (int k = 0; k < count; k++)
        {
            final int sgeBytes = sq.sgeLength[base + k];
            if (sgeBytes < GATHER_MIN_BYTES)
            {
                copied += sgeBytes;
            }
        }
        return copied;
    }

    private void addPayload(final TcpMemoryRegion region, final int offset, final int length)
    {
        if (length == 0)
        {
            return;
        }
        if (length < GATHER_MIN_BYTES)
        {
            tx.putBytes(txFill, region.buffer(), offset, length);
            txFill += length;
            return;
        }
        closeSegment();
        iov[iovCount] = views.view(iovCount, region, offset, length);
        iovCount++;
    }

    /** Ends the staging bytes since the last gathered payload as one entry of the gather list. */
    private void closeSegment()
    {
        if (txFill > segmentStart)
        {
            final ByteBuffer slice = stagingSlices[iovCount];
            slice.limit(txFill).position(segmentStart);
            iov[iovCount] = slice;
            iovCount++;
            segmentStart = txFill;
        }
    }
}
