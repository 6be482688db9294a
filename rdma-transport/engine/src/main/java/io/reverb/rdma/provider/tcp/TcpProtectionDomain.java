package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.base.AbstractProtectionDomain;
import java.io.IOException;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A protection domain: owns its regions; the NIC thread lets a QP reach only regions of the QP's PD.
 */
final class TcpProtectionDomain extends AbstractProtectionDomain<TcpVerbsContext, TcpMemoryRegion>
{
    TcpProtectionDomain(final TcpVerbsContext context)
    {
        super(context);
    }

    TcpVerbsContext tcpContext()
    {
        return context;
    }

    @Override
    protected TcpMemoryRegion register(final int length, final int access) throws IOException
    {
        try
        {
            return new TcpMemoryRegion(this, context.nextRegionIndex(), ThreadLocalRandom.current().nextInt(), access, length);
        }
        catch (final OutOfMemoryError ex)
        {
            throw new IOException("cannot allocate " + length + " bytes of direct memory " +
                "(raise -XX:MaxDirectMemorySize)", ex);
        }
    }

    @Override
    protected void added(final TcpMemoryRegion region)
    {
        context.registered(region);
    }

    void removed(final TcpMemoryRegion region)
    {
        forget(region);
        context.deregistered(region);
    }

    @Override
    protected void closed()
    {
        context.removed(this);
    }

    @Override
    public String toString()
    {
        return "TcpProtectionDomain{regions=" + regions.size() + '}';
    }
}
