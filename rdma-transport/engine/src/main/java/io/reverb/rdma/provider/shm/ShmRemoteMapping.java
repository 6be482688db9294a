package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.RemoteMapping;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A checked range of a peer's region, viewed through the QP's own mapping of that region, which stays mapped
 * (pinned) until {@link #close()}. See {@link ShmQueuePair#mapRemote(long, int, int)}.
 */
final class ShmRemoteMapping implements RemoteMapping
{
    private final ShmQueuePair qp;
    private final RemoteRegion region;
    private final ByteBuffer byteBuffer;
    private final UnsafeBuffer buffer;
    private boolean closed;

    ShmRemoteMapping(final ShmQueuePair qp, final RemoteRegion region, final int offset, final int length)
    {
        this.qp = qp;
        this.region = region;
        this.byteBuffer = region.mapping.slice(ShmMemoryRegion.DATA_OFFSET + offset, length);
        this.buffer = new UnsafeBuffer(byteBuffer);
    }

    @Override
    public ByteBuffer byteBuffer()
    {
        return byteBuffer;
    }

    @Override
    public UnsafeBuffer buffer()
    {
        return buffer;
    }

    @Override
    public int length()
    {
        return byteBuffer.capacity();
    }

    @Override
    public void close()
    {
        if (!closed)
        {
            closed = true;
            qp.unpin(region);
        }
    }

    @Override
    public String toString()
    {
        return "ShmRemoteMapping{region=" + (region.baseAddress >>> 32) + ", length=" + byteBuffer.capacity() +
            (closed ? ", closed" : "") + '}';
    }
}
