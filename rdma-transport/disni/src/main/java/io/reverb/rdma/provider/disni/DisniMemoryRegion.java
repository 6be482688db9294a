package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvMr;
import io.reverb.rdma.provider.base.AbstractMemoryRegion;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * ibv_mr over a direct buffer. Deregistering does not free the buffer: views handed out earlier stay
 * valid memory (freeing it under a live view could crash the JVM); the garbage collector frees it.
 */
final class DisniMemoryRegion extends AbstractMemoryRegion<DisniProtectionDomain>
{
    private final IbvMr mr;
    private final ByteBuffer byteBuffer;

    DisniMemoryRegion(final DisniProtectionDomain pd, final IbvMr mr, final ByteBuffer buffer, final int access)
    {
        // ibv_reg_mr registered exactly the buffer, so mr.addr is the buffer's virtual address.
        super(pd, mr.getAddr(), mr.getLkey(), mr.getRkey(), access, buffer.capacity(), new UnsafeBuffer(buffer));
        this.mr = mr;
        this.byteBuffer = buffer;
    }

    @Override
    public ByteBuffer byteBuffer()
    {
        return byteBuffer.duplicate().clear();
    }

    @Override
    public void close()
    {
        if (!markDeregistered())
        {
            return;
        }
        DisniVerbsContext.quietly(() -> mr.deregMr().execute().free());
        pd.released(this);
    }

    @Override
    public String toString()
    {
        return "DisniMemoryRegion{address=0x" + Long.toHexString(address) + ", length=" + length + ", lkey=" + lkey +
            ", rkey=" + rkey + '}';
    }
}
