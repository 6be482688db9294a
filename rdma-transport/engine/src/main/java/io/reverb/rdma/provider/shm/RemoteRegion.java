package io.reverb.rdma.provider.shm;

import io.reverb.rdma.provider.base.RegionChecks;
import java.nio.MappedByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A peer's registered region as mapped by one of our QPs. The immutable header fields are cached;
 * the registration state is re-read (volatile) before every access because the owner may
 * deregister at any time.
 */
final class RemoteRegion
{
    final MappedByteBuffer mapping;
    final UnsafeBuffer header;
    final UnsafeBuffer data;
    final long baseAddress;
    final int lkey;
    final int rkey;
    final int pdId;
    final int access;
    final int length;
    /** {@link ShmRemoteMapping}s open on this region (the QP's send lock guards both fields). */
    int pins;
    /** Dropped by the QP (deregistered by the peer, or the QP closed) while pinned: the last unpin unmaps. */
    boolean dropped;

    private RemoteRegion(final MappedByteBuffer mapping, final int index)
    {
        this.mapping = mapping;
        this.header = new UnsafeBuffer(mapping, 0, ShmMemoryRegion.DATA_OFFSET);
        this.lkey = header.getInt(ShmMemoryRegion.LKEY_OFFSET);
        this.rkey = header.getInt(ShmMemoryRegion.RKEY_OFFSET);
        this.pdId = header.getInt(ShmMemoryRegion.PD_OFFSET);
        this.access = header.getInt(ShmMemoryRegion.ACCESS_OFFSET);
        this.length = header.getInt(ShmMemoryRegion.LENGTH_OFFSET);
        this.data = new UnsafeBuffer(mapping, ShmMemoryRegion.DATA_OFFSET, length);
        this.baseAddress = RegionChecks.baseAddress(index);
    }

    /**
     * @return the region, or null if the mapping does not hold a registered, well-formed region.
     */
    static RemoteRegion of(final MappedByteBuffer mapping, final int index)
    {
        if (mapping.capacity() < ShmMemoryRegion.DATA_OFFSET)
        {
            return null;
        }
        final UnsafeBuffer header = new UnsafeBuffer(mapping, 0, ShmMemoryRegion.DATA_OFFSET);
        if (header.getIntVolatile(ShmMemoryRegion.STATE_OFFSET) != ShmMemoryRegion.STATE_REGISTERED ||
            header.getInt(ShmMemoryRegion.MAGIC_OFFSET) != ShmMemoryRegion.MAGIC)
        {
            return null;
        }
        final int length = header.getInt(ShmMemoryRegion.LENGTH_OFFSET);
        if (length <= 0 || (long)length + ShmMemoryRegion.DATA_OFFSET > mapping.capacity())
        {
            return null;
        }
        return new RemoteRegion(mapping, index);
    }

    boolean isRegistered()
    {
        return header.getIntVolatile(ShmMemoryRegion.STATE_OFFSET) == ShmMemoryRegion.STATE_REGISTERED;
    }
}
