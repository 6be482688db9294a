package io.reverb.rdma.provider.shm;

import io.reverb.rdma.provider.RegionList;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.VerbsContext;
import java.io.IOException;

/**
 * A protection domain: a number, unique within its context, stamped into the header of every region
 * it allocates. A peer reaching a region through a QP checks that number against the PD of that QP.
 */
final class ShmProtectionDomain implements ProtectionDomain
{
    private final ShmVerbsContext context;
    private final int id;
    private final RegionList<ShmMemoryRegion> regions = new RegionList<>();

    ShmProtectionDomain(final ShmVerbsContext context, final int id)
    {
        this.context = context;
        this.id = id;
    }

    int id()
    {
        return id;
    }

    ShmVerbsContext shmContext()
    {
        return context;
    }

    @Override
    public VerbsContext context()
    {
        return context;
    }

    @Override
    public MemoryRegion allocate(final int length, final int access) throws IOException
    {
        RegionList.checkAllocation(length, access);
        if (length > Integer.MAX_VALUE - ShmMemoryRegion.DATA_OFFSET)
        {
            throw new IllegalArgumentException("length too large for one mapping: " + length);
        }
        synchronized (regions)
        {
            regions.ensureOpen();
            final ShmMemoryRegion region = context.createRegion(this, length, access);
            regions.tryAdd(region);
            return region;
        }
    }

    void removed(final ShmMemoryRegion region)
    {
        regions.remove(region);
    }

    @Override
    public void close()
    {
        if (!regions.closeAll())
        {
            return;
        }
        context.removed(this);
    }

    @Override
    public String toString()
    {
        return "ShmProtectionDomain{id=" + id + '}';
    }
}
