package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvMr;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * ibv_mr over a direct buffer. Deregistering does not free the buffer: views handed out earlier stay
 * valid memory (freeing it under a live view could crash the JVM); the garbage collector frees it.
 */
final class DisniMemoryRegion implements MemoryRegion
{
    private final DisniProtectionDomain pd;
    private final IbvMr mr;
    private final ByteBuffer buffer;
    private final UnsafeBuffer view;
    private final long address;
    private final int length;
    private final int lkey;
    private final int rkey;
    private final int access;
    private volatile boolean registered = true;

    DisniMemoryRegion(final DisniProtectionDomain pd, final IbvMr mr, final ByteBuffer buffer, final int access)
    {
        this.pd = pd;
        this.mr = mr;
        this.buffer = buffer;
        this.view = new UnsafeBuffer(buffer);
        // ibv_reg_mr registered exactly the buffer, so mr.addr is the buffer's virtual address.
        this.address = mr.getAddr();
        this.length = buffer.capacity();
        this.lkey = mr.getLkey();
        this.rkey = mr.getRkey();
        this.access = access;
    }

    @Override
    public ProtectionDomain pd()
    {
        return pd;
    }

    @Override
    public long address()
    {
        return address;
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
        return buffer.duplicate().clear();
    }

    @Override
    public UnsafeBuffer buffer()
    {
        return view;
    }

    @Override
    public boolean isRegistered()
    {
        return registered;
    }

    @Override
    public void close()
    {
        synchronized (this)
        {
            if (!registered)
            {
                return;
            }
            registered = false;
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
