package io.reverb.rdma.provider.tcp;

import java.nio.ByteBuffer;

/**
 * ByteBuffer views of registered memory, one slot per entry of a gather or scatter list, so that a socket can read
 * or write registered memory directly. A slot keeps its view while it is used for the same region (the send ring,
 * the same rendezvous buffer): in steady state nothing is allocated. A slot may keep a deregistered region's memory
 * reachable until the slot is used for another region or the QP's socket closes. Used under the QP's wire lock.
 */
final class TcpRegionViews
{
    private final TcpMemoryRegion[] regions;
    private final ByteBuffer[] views;

    TcpRegionViews(final int slots)
    {
        regions = new TcpMemoryRegion[slots];
        views = new ByteBuffer[slots];
    }

    /** @return slot {@code slot}'s view of {@code length} bytes of {@code region} at {@code offset} */
    ByteBuffer view(final int slot, final TcpMemoryRegion region, final int offset, final int length)
    {
        ByteBuffer view = views[slot];
        if (regions[slot] != region)
        {
            view = region.byteBuffer();
            views[slot] = view;
            regions[slot] = region;
        }
        view.limit(offset + length).position(offset);
        return view;
    }

    /** Forgets every region (the socket closed), so that deregistered ones can be collected. */
    void clear()
    {
        for (int k = 0; k < regions.length; k++)
        {
            regions[k] = null;
            views[k] = null;
        }
    }
}
