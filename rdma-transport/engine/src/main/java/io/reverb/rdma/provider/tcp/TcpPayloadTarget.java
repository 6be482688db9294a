package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.base.RegionChecks;
import io.reverb.rdma.verbs.ProtectionDomain;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Where the payload of the inbound frame being parsed goes: up to {@code MAX_SGE} spans of registered memory
 * (a posted receive's SGEs, one region of an RDMA WRITE, or the SGEs of this side's READ), resolved and
 * checked before any byte is placed, then filled as the payload arrives in the staging buffer. NIC thread only.
 */
final class TcpPayloadTarget
{
    private static final int MAX_SGE = TcpSendQueue.MAX_SGE;

    private final TcpMemoryRegion[] regions = new TcpMemoryRegion[MAX_SGE];
    private final UnsafeBuffer[] buffers = new UnsafeBuffer[MAX_SGE];
    private final TcpRegionViews views = new TcpRegionViews(MAX_SGE);
    private int spanStart;
    private final int[] offsets = new int[MAX_SGE];
    private final int[] lengths = new int[MAX_SGE];
    private int count;
    private int index;
    private int position;
    private long remaining;

    /** No destination (a zero-length WRITE, or after a failure); drops references to registered memory. */
    void clear()
    {
        for (int k = 0; k < MAX_SGE; k++)
        {
            regions[k] = null;
            buffers[k] = null;
        }
        count = 0;
    }

    /** Forgets the cached views too (the socket closed), so that deregistered regions can be collected. */
    void forget()
    {
        clear();
        views.clear();
    }

    /** One span: the region an RDMA WRITE targets. */
    void toRegion(final TcpMemoryRegion region, final int offset, final int length)
    {
        regions[0] = region;
        buffers[0] = region.buffer();
        offsets[0] = offset;
        lengths[0] = length;
        count = 1;
    }

    /** The SGEs of this side's RDMA READ {@code i}, resolved when it was posted. */
    void toReadSges(final TcpSendQueue sq, final int i)
    {
        final int base = i * MAX_SGE;
        count = sq.sgeCount[i];
        for (int k = 0; k < count; k++)
        {
            regions[k] = sq.sgeRegion[base + k];
            buffers[k] = regions[k].buffer();
            offsets[k] = sq.sgeOffset[base + k];
            lengths[k] = sq.sgeLength[base + k];
        }
    }

    /** @return the total length of posted receive {@code i}'s SGEs. */
    static long receiveLength(final TcpRecvQueue rq, final int i)
    {
        final int base = i * MAX_SGE;
        long total = 0;
        for (int k = 0; k < rq.sgeCount[i]; k++)
        {
            total += rq.sgeLength[base + k];
        }
        return total;
    }

    /**
     * The SGEs of posted receive {@code i}, checked against {@code pd} (key, registration, LOCAL_WRITE, bounds).
     *
     * @return false if one fails the checks (nothing is targeted then)
     */
    boolean toReceive(final TcpRecvQueue rq, final int i, final TcpVerbsContext context, final ProtectionDomain pd)
    {
        final int base = i * MAX_SGE;
        final int sges = rq.sgeCount[i];
        for (int k = 0; k < sges; k++)
        {
            final long address = rq.sgeAddress[base + k];
            final int length = rq.sgeLength[base + k];
            final TcpMemoryRegion region = context.region(RegionChecks.indexOfAddress(address));
            final long offset = RegionChecks.localOffset(region, pd, rq.sgeLkey[base + k], address, length, true);
            if (offset == RegionChecks.DENIED)
            {
                clear();
                return false;
            }
            regions[k] = region;
            buffers[k] = region.buffer();
            offsets[k] = (int)offset;
            lengths[k] = length;
        }
        count = sges;
        return true;
    }

    /** A payload of {@code length} bytes follows. */
    void start(final long length)
    {
        remaining = length;
        index = 0;
        position = 0;
    }

    /** @return payload bytes still to come. */
    long remaining()
    {
        return remaining;
    }

    /**
     * A view of the rest of the current span (at most what is still to come), for the socket to read into directly;
     * hand it back to {@link #advance(ByteBuffer)} after the read.
     */
    ByteBuffer nextSpan()
    {
        while (index < count && lengths[index] == position)
        {
            index++;
            position = 0;
        }
        if (index >= count)
        {
            return null;
        }
        final int length = (int)Math.min(lengths[index] - position, remaining);
        spanStart = offsets[index] + position;
        return views.view(index, regions[index], spanStart, length);
    }

    /** Counts what a read placed into the view {@link #nextSpan()} gave. */
    void advance(final ByteBuffer span)
    {
        final int n = span.position() - spanStart;
        position += n;
        remaining -= n;
    }

    /**
     * Copies what the staging buffer holds of the payload into the spans, advancing its position.
     *
     * @return false if the payload is longer than the spans (cannot happen: lengths were checked first)
     */
    boolean place(final ByteBuffer rxBuffer, final UnsafeBuffer rx)
    {
        int at = rxBuffer.position();
        int available = rxBuffer.limit() - at;
        while (available > 0 && remaining > 0)
        {
            if (index >= count)
            {
                rxBuffer.position(at);
                return false;
            }
            final int room = lengths[index] - position;
            if (room == 0)
            {
                index++;
                position = 0;
                continue;
            }
            final int n = (int)Math.min(Math.min(available, room), remaining);
            buffers[index].putBytes(offsets[index] + position, rx, at, n);
            position += n;
            at += n;
            available -= n;
            remaining -= n;
        }
        rxBuffer.position(at);
        return true;
    }
}
