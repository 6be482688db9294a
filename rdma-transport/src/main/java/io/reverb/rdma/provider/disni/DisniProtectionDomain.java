package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.SVCRegMr;
import io.reverb.rdma.provider.RegionList;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.VerbsContext;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * ibv_pd through DiSNi. Registered memory is a fresh direct buffer (zero-filled by the JVM) registered
 * with {@code ibv_reg_mr}; its virtual address is the region's {@link MemoryRegion#address()}.
 */
final class DisniProtectionDomain implements ProtectionDomain
{
    private final DisniVerbsContext context;
    private final IbvPd pd;
    private final RegionList<DisniMemoryRegion> regions = new RegionList<>();

    DisniProtectionDomain(final DisniVerbsContext context, final IbvPd pd) throws IOException
    {
        if (pd == null)
        {
            throw new IOException("ibv_alloc_pd failed");
        }
        this.context = context;
        this.pd = pd;
    }

    IbvPd ibvPd()
    {
        return pd;
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
        regions.ensureOpen();
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
        final DisniMemoryRegion region = new DisniMemoryRegion(this, mr, buffer, access);
        if (!regions.tryAdd(region))
        {
            region.close();
            throw new IOException("protection domain is closed");
        }
        return region;
    }

    void released(final DisniMemoryRegion region)
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
        DisniVerbsContext.quietly(pd::deallocPd);
        context.untrack(this);
    }
}
