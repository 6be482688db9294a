package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.SVCRegMr;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.VerbsContext;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * ibv_pd through DiSNi. Registered memory is a fresh direct buffer (zero-filled by the JVM) registered
 * with {@code ibv_reg_mr}; its virtual address is the region's {@link MemoryRegion#address()}.
 */
final class DisniProtectionDomain implements ProtectionDomain
{
    private final DisniVerbsContext context;
    private final IbvPd pd;
    private final Set<DisniMemoryRegion> regions = new LinkedHashSet<>();
    private boolean closed;

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
        if (length <= 0)
        {
            throw new IllegalArgumentException("length must be > 0: " + length);
        }
        if ((access & ~Access.ALL) != 0)
        {
            throw new IllegalArgumentException("unknown access bits: " + access);
        }
        synchronized (regions)
        {
            if (closed)
            {
                throw new IOException("protection domain is closed");
            }
        }
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
        synchronized (regions)
        {
            if (closed)
            {
                region.close();
                throw new IOException("protection domain is closed");
            }
            regions.add(region);
        }
        return region;
    }

    void released(final DisniMemoryRegion region)
    {
        synchronized (regions)
        {
            regions.remove(region);
        }
    }

    @Override
    public void close()
    {
        final List<DisniMemoryRegion> toClose;
        synchronized (regions)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            toClose = new ArrayList<>(regions);
            regions.clear();
        }
        for (final DisniMemoryRegion region : toClose)
        {
            region.close();
        }
        DisniVerbsContext.quietly(pd::deallocPd);
        context.untrack(this);
    }
}
