package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.RegionList;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.VerbsContext;
import java.io.IOException;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A protection domain: owns its regions; the NIC thread lets a QP reach only regions of the QP's PD.
 */
final class TcpProtectionDomain implements ProtectionDomain
{
    private final TcpVerbsContext context;
    private final RegionList<TcpMemoryRegion> regions = new RegionList<>();

    TcpProtectionDomain(final TcpVerbsContext context)
    {
        this.context = context;
    }

    TcpVerbsContext tcpContext()
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
        synchronized (regions)
        {
            regions.ensureOpen();
            final TcpMemoryRegion region;
            try
            {
                region = new TcpMemoryRegion(this, context.nextRegionIndex(),
                    ThreadLocalRandom.current().nextInt(), access, length);
            }
            catch (final OutOfMemoryError ex)
            {
                throw new IOException("cannot allocate " + length + " bytes of direct memory " +
                    "(raise -XX:MaxDirectMemorySize)", ex);
            }
            regions.tryAdd(region);
            context.registered(region);
            return region;
        }
    }

    void removed(final TcpMemoryRegion region)
    {
        regions.remove(region);
        context.deregistered(region);
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
        return "TcpProtectionDomain{regions=" + regions.size() + '}';
    }
}
