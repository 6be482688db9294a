package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
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
final class TcpMemoryRegion implements MemoryRegion
{
    private final TcpProtectionDomain pd;
    private final int index;
    private final int lkey;
    private final int rkey;
    private final int access;
    private final int length;
    private final ByteBuffer byteBuffer;
    private final UnsafeBuffer buffer;
    private volatile boolean registered = true;

    TcpMemoryRegion(final TcpProtectionDomain pd, final int index, final int tag, final int access, final int length)
    {
        this.pd = pd;
        this.index = index;
        this.lkey = (index << 8) | (tag & 0x7F);
        this.rkey = (index << 8) | 0x80 | (tag & 0x7F);
        this.access = access;
        this.length = length;
        this.byteBuffer = ByteBuffer.allocateDirect(length);
        this.buffer = new UnsafeBuffer(byteBuffer);
    }

    static int indexOfAddress(final long address)
    {
        return (int)(address >>> 32);
    }

    static int indexOfKey(final int key)
    {
        return key >>> 8;
    }

    int index()
    {
        return index;
    }

    TcpProtectionDomain tcpPd()
    {
        return pd;
    }

    /** @return the memory, for the NIC thread's copies. */
    UnsafeBuffer data()
    {
        return buffer;
    }

    /**
     * @return the offset of {@code [address, address + bytes)} in this region, or -1 if it does not fit.
     */
    long offsetOf(final long address, final long bytes)
    {
        final long offset = address - address();
        return offset < 0 || bytes < 0 || offset + bytes > length ? -1 : offset;
    }

    @Override
    public ProtectionDomain pd()
    {
        return pd;
    }

    @Override
    public long address()
    {
        return (long)index << 32;
    }

    @Override
    public int length()
    {
        return length;
    }

    @Override
    public int lkey()
    {
        return lkey;
    }

    @Override
    public int rkey()
    {
        return rkey;
    }

    @Override
    public int access()
    {
        return access;
    }

    @Override
    public ByteBuffer byteBuffer()
    {
        return byteBuffer.duplicate().clear();
    }

    @Override
    public UnsafeBuffer buffer()
    {
        return buffer;
    }

    @Override
    public boolean isRegistered()
    {
        return registered;
    }

    @Override
    public void close()
    {
        if (!registered)
        {
            return;
        }
        registered = false;
        pd.removed(this);
    }

    @Override
    public String toString()
    {
        return "TcpMemoryRegion{index=" + index + ", length=" + length + ", access=" + access + '}';
    }
}
