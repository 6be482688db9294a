package io.reverb.rdma.provider.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectableChannel;
import org.junit.jupiter.api.Test;

/**
 * The tcp transmitter's staging buffer (64 KiB) with requests of several SGEs, each under the size from which a
 * payload is written from registered memory instead of copied, but larger than it in all: an engine message split
 * where its send ring wraps is one. Such requests were staged as if their payload took no room; on a full staging
 * buffer the copy ran past its end and the NIC thread died, taking every connection of its NIC down (seen on
 * Soft-RoCE's host pair, server-streaming over tcp://). Counted: every byte reaches the link, in order.
 */
class TcpTransmitterStagingTest
{
    private static final int FIRST = 4080;
    private static final int SECOND = 100;

    @Test
    void shouldStageSmallSgesOfALargeRequestWithinTheStagingBuffer() throws IOException
    {
        final int requests = 40; // 40 x 4,180 bytes copied: more than the staging buffer holds at once
        final TcpSendQueue sq = new TcpSendQueue(64);
        final TcpMemoryRegion region = new TcpMemoryRegion(null, 1, 0, 0, FIRST + SECOND);
        final ByteBuffer memory = region.byteBuffer();
        for (int b = 0; b < FIRST + SECOND; b++)
        {
            memory.put(b, (byte)b);
        }
        for (int r = 0; r < requests; r++)
        {
            final int i = (int)sq.tail & sq.mask;
            sq.wrId[i] = r;
            sq.opcode[i] = WrOpcode.SEND;
            sq.length[i] = FIRST + SECOND;
            sq.sgeCount[i] = 2;
            sq.sgeRegion[i * TcpSendQueue.MAX_SGE] = region;
            sq.sgeOffset[i * TcpSendQueue.MAX_SGE] = 0;
            sq.sgeLength[i * TcpSendQueue.MAX_SGE] = FIRST;
            sq.sgeRegion[i * TcpSendQueue.MAX_SGE + 1] = region;
            sq.sgeOffset[i * TcpSendQueue.MAX_SGE + 1] = FIRST;
            sq.sgeLength[i * TcpSendQueue.MAX_SGE + 1] = SECOND;
            sq.tail = sq.tail + 1;
        }
        final TcpTransmitter transmitter = new TcpTransmitter(sq, new TcpAnswerQueue(64));
        final RecordingLink link = new RecordingLink();
        int rounds = 0;
        while (!transmitter.write(link, false, false) || sq.tx != sq.tail)
        {
            assertThat(++rounds).as("the link takes everything: a few writes").isLessThan(100);
        }

        final ByteBuffer wire = link.bytes.flip();
        assertThat(wire.remaining()).isEqualTo(requests * (TcpFrame.HEADER_LENGTH + FIRST + SECOND));
        for (int r = 0; r < requests; r++)
        {
            wire.position(wire.position() + TcpFrame.HEADER_LENGTH);
            for (int b = 0; b < FIRST + SECOND; b++)
            {
                if (wire.get() != (byte)b)
                {
                    throw new AssertionError("request " + r + ": byte " + b + " differs");
                }
            }
        }
    }

    /** A link that takes every byte into one buffer. */
    private static final class RecordingLink implements TcpLink
    {
        final ByteBuffer bytes = ByteBuffer.allocate(1 << 20);

        @Override
        public SelectableChannel selectable()
        {
            return null;
        }

        @Override
        public long read(final ByteBuffer[] dsts, final int offset, final int length)
        {
            return 0;
        }

        @Override
        public int read(final ByteBuffer dst)
        {
            return 0;
        }

        @Override
        public long write(final ByteBuffer[] srcs, final int offset, final int length)
        {
            long n = 0;
            for (int k = offset; k < offset + length; k++)
            {
                n += srcs[k].remaining();
                bytes.put(srcs[k]);
            }
            return n;
        }

        @Override
        public boolean flush()
        {
            return true;
        }

        @Override
        public boolean hasBufferedInput()
        {
            return false;
        }

        @Override
        public void shutdownOutput()
        {
        }

        @Override
        public void close()
        {
        }
    }
}
