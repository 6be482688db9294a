package io.reverb.rdma.provider.base;

import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.VerbsContext;
import java.io.IOException;

/**
 * What every provider's protection domain does the same way: it checks an allocation's arguments, registers
 * the region while holding its {@link RegionList}'s lock (so that a concurrent {@link #close()} cannot slip in
 * between the open check and the add), forgets regions as they are deregistered, and on close deregisters
 * those still registered before telling the provider. How memory is obtained and registered stays in the
 * provider ({@link #register}).
 *
 * @param <X> the provider's context type
 * @param <R> the provider's memory region type
 */
public abstract class AbstractProtectionDomain<X extends VerbsContext, R extends MemoryRegion> implements ProtectionDomain
{
    protected final X context;
    protected final RegionList<R> regions = new RegionList<>();

    protected AbstractProtectionDomain(final X context)
    {
        this.context = context;
    }

    @Override
    public final VerbsContext context()
    {
        return context;
    }

    @Override
    public final MemoryRegion allocate(final int length, final int access) throws IOException
    {
        RegionList.checkAllocation(length, access);
        synchronized (regions)
        {
            regions.ensureOpen();
            final R region = register(length, access);
            if (!regions.tryAdd(region))
            {
                region.close();
                throw new IOException("protection domain is closed");
            }
            added(region);
            return region;
        }
    }

    /**
     * Obtains and registers the memory of a new region (arguments already checked, PD open, allocation lock held).
     *
     * @param length bytes, positive.
     * @param access {@code Access} flags, known bits only.
     * @return the registered region.
     * @throws IOException if the memory cannot be obtained or registered.
     */
    protected abstract R register(int length, int access) throws IOException;

    /** Called with the allocation lock held after a new region joined the PD (e.g. to index it). */
    protected void added(final R region)
    {
    }

    /** Forgets a region that was deregistered (called by the region's close). */
    protected final void forget(final R region)
    {
        regions.remove(region);
    }

    @Override
    public final void close()
    {
        if (regions.closeAll())
        {
            closed();
        }
    }

    /** Called once by the first {@link #close()}, after every region was deregistered: release the PD itself. */
    protected abstract void closed();
}
