package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.base.AbstractMemoryRegion;
import io.reverb.rdma.provider.base.RegionChecks;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Registered memory: a direct buffer allocated by the PD. Addresses are {@code index << 32 | offset}
 * and keys {@code index << 8 | tag}; indexes are never reused within a context, so a stale key or
 * address cannot reach a newer region. The NIC thread finds a region from an address or key through
 * {@link TcpVerbsContext#region(int)} and checks key, PD, access and bounds itself.
 *
 * <p>The memory is freed by the garbage collector once the region is deregistered and no queued work
 * request refers to it any more, so the NIC thread can never touch freed memory.
 */
final class TcpMemoryRegion extends AbstractMemoryRegion<TcpProtectionDomain>
{
    private final int index;
    private final ByteBuffer byteBuffer;

    TcpMemoryRegion(final TcpProtectionDomain pd, final int index, final int tag, final int access, final int length)
    {
        this(pd, index, tag, access, ByteBuffer.allocateDirect(length));
    }

    private TcpMemoryRegion(
        final TcpProtectionDomain pd, final int index, final int tag, final int access, final ByteBuffer byteBuffer)
    {
        super(pd, RegionChecks.baseAddress(index), RegionChecks.localKey(index, tag), RegionChecks.remoteKey(index, tag),
            access, byteBuffer.capacity(), new UnsafeBuffer(byteBuffer));
        this.index = index;
        this.byteBuffer = byteBuffer;
    }

    int index()
    {
        return index;
    }

    @Override
    public ByteBuffer byteBuffer()
    {
        return byteBuffer.duplicate().clear();
    }

    @Override
    public void close()
    {
        if (markDeregistered())
        {
            pd.removed(this);
        }
    }

    @Override
    public String toString()
    {
        return "TcpMemoryRegion{index=" + index + ", length=" + length + ", access=" + access + '}';
    }
}
