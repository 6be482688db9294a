package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.VerbsContext;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A protection domain: owns its regions; the NIC thread lets a QP reach only regions of the QP's PD.
 */
final class TcpProtectionDomain implements ProtectionDomain
{
    private final TcpVerbsContext context;
    private final List<TcpMemoryRegion> regions = new ArrayList<>();
    private boolean closed;

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
        if (length <= 0)
        {
            throw new IllegalArgumentException("length must be > 0: " + length);
        }
        if ((access & ~Access.ALL) != 0)
        {
            throw new IllegalArgumentException("unknown access flags: " + access);
        }
        synchronized (this)
        {
            if (closed)
            {
                throw new IOException("protection domain is closed");
            }
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
            regions.add(region);
            context.registered(region);
            return region;
        }
    }

    void removed(final TcpMemoryRegion region)
    {
        synchronized (this)
        {
            regions.remove(region);
        }
        context.deregistered(region);
    }

    @Override
    public void close()
    {
        final List<TcpMemoryRegion> open;
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            open = new ArrayList<>(regions);
        }
        for (final TcpMemoryRegion region : open)
        {
            region.close();
        }
        context.removed(this);
    }

    @Override
    public String toString()
    {
        return "TcpProtectionDomain{regions=" + regions.size() + '}';
    }
}
