package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.SVCRegMr;
import io.reverb.rdma.provider.AbstractProtectionDomain;
import io.reverb.rdma.verbs.MemoryRegion;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * ibv_pd through DiSNi. Registered memory is a fresh direct buffer (zero-filled by the JVM) registered
 * with {@code ibv_reg_mr}; its virtual address is the region's {@link MemoryRegion#address()}.
 */
final class DisniProtectionDomain extends AbstractProtectionDomain<DisniVerbsContext, DisniMemoryRegion>
{
    private final IbvPd pd;

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
        forget(region);
    }

    @Override
    protected void closed()
    {
        DisniVerbsContext.quietly(pd::deallocPd);
        context.untrack(this);
    }
}
