package io.reverb.rdma.provider.shm;

import io.reverb.rdma.provider.base.AbstractProtectionDomain;
import java.io.IOException;

/**
 * A protection domain: a number, unique within its context, stamped into the header of every region
 * it allocates. A peer reaching a region through a QP checks that number against the PD of that QP.
 */
final class ShmProtectionDomain extends AbstractProtectionDomain<ShmVerbsContext, ShmMemoryRegion>
{
    private final int id;

    ShmProtectionDomain(final ShmVerbsContext context, final int id)
    {
        super(context);
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
    protected ShmMemoryRegion register(final int length, final int access) throws IOException
    {
        if (length > Integer.MAX_VALUE - ShmMemoryRegion.DATA_OFFSET)
        {
            throw new IllegalArgumentException("length too large for one mapping: " + length);
        }
        return context.createRegion(this, length, access);
    }

    void removed(final ShmMemoryRegion region)
    {
        forget(region);
    }

    @Override
    protected void closed()
    {
        context.removed(this);
    }

    @Override
    public String toString()
    {
        return "ShmProtectionDomain{id=" + id + '}';
    }
}
