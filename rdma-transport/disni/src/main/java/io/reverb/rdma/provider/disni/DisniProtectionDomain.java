package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.SVCRegMr;
import io.reverb.rdma.provider.base.AbstractProtectionDomain;
import io.reverb.rdma.verbs.MemoryRegion;
import java.io.IOException;
import org.agrona.collections.Int2ObjectHashMap;
import java.nio.ByteBuffer;

/**
 * ibv_pd through DiSNi. Registered memory is a fresh direct buffer (zero-filled by the JVM) registered
 * with {@code ibv_reg_mr}; its virtual address is the region's {@link MemoryRegion#address()}.
 */
final class DisniProtectionDomain extends AbstractProtectionDomain<DisniVerbsContext, DisniMemoryRegion>
{
    private final IbvPd pd;
    private final Object byLkeyLock = new Object();
    private volatile Int2ObjectHashMap<DisniMemoryRegion> byLkey = new Int2ObjectHashMap<>();

    DisniProtectionDomain(final DisniVerbsContext context, final IbvPd pd) throws IOException
    {
        super(context);
        if (pd == null)
        {
            throw new IOException("ibv_alloc_pd failed");
        }
        this.pd = pd;
    }

    IbvPd ibvPd()
    {
        return pd;
    }

    @Override
    protected DisniMemoryRegion register(final int length, final int access) throws IOException
    {
        final ByteBuffer buffer;
        try
        {
            buffer = ByteBuffer.allocateDirect(length);
        }
        catch (final OutOfMemoryError ex)
        {
            throw new IOException("cannot allocate " + length + " bytes of direct memory (-XX:MaxDirectMemorySize)", ex);
        }
        final SVCRegMr call = pd.regMr(buffer, WorkRequestTranslator.toDisniAccess(access));
        final IbvMr mr;
        try
        {
            call.execute();
            mr = call.getMr();
        }
        catch (final IOException ex)
        {
            throw new IOException("ibv_reg_mr of " + length + " bytes failed: " + ex.getMessage().trim() +
                " (is the locked-memory limit, ulimit -l, large enough?)", ex);
        }
        finally
        {
            call.free();
        }
        if (mr == null)
        {
            throw new IOException("ibv_reg_mr of " + length + " bytes returned no region");
        }
        return new DisniMemoryRegion(this, mr, buffer, access);
    }

    void released(final DisniMemoryRegion region)
    {
        synchronized (byLkeyLock)
        {
            final Int2ObjectHashMap<DisniMemoryRegion> next = new Int2ObjectHashMap<>(byLkey);
            next.remove(region.lkey(), region);
            byLkey = next;
        }
        forget(region);
    }

    @Override
    protected void added(final DisniMemoryRegion region)
    {
        synchronized (byLkeyLock)
        {
            // Copy on write: regions come and go rarely (rendezvous buffers are pooled), posts read on every send.
            final Int2ObjectHashMap<DisniMemoryRegion> next = new Int2ObjectHashMap<>(byLkey);
            next.put(region.lkey(), region);
            byLkey = next;
        }
    }

    /**
     * What the HCA checks for a gathered SGE, checked here for sends that go inline (an inline send's data is copied at
     * post time, and the HCA checks no key for it): the lkey is a live region of this PD that holds the range.
     *
     * @param lkey    the SGE's key.
     * @param address its address.
     * @param length  its length.
     * @return true if the SGE is valid.
     */
    boolean holds(final int lkey, final long address, final int length)
    {
        final DisniMemoryRegion region = byLkey.get(lkey);
        return region != null && region.isRegistered() && address >= region.address() &&
            address + length <= region.address() + region.length();
    }

    @Override
    protected void closed()
    {
        DisniVerbsContext.quietly(pd::deallocPd);
        context.untrack(this);
    }
}
