package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.SVCRegMr;
import io.reverb.rdma.provider.base.AbstractProtectionDomain;
import io.reverb.rdma.verbs.MemoryRegion;
import java.io.IOException;
import org.agrona.collections.Int2ObjectHashMap;
import java.nio.ByteBuffer;

/**
 * ibv_pd through DiSNi. Registered memory is a fresh direct buffer (zero-filled by the JVM) registered
 * with {@code ibv_reg_mr}; its virtual address is the region's {@link MemoryRegion#address()}.
 */
final class DisniProtectionDomain extends AbstractProtectionDomain<DisniVerbsContext, DisniMemoryRegion>
{
    private final IbvPd pd;
    private final Object byLkeyLock = new Object();
    private volatile Int2ObjectHashMap<DisniMemoryRegion> byLkey = new Int2ObjectHashMap<>();
    /** Guarded by this: QPs created on this PD and not destroyed yet. */
    private int queuePairs;
    /** Guarded by this: {@link #close()} was called. */
    private boolean closeRequested;
    /** Guarded by this: {@code ibv_dealloc_pd} was called. */
    private boolean deallocated;

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
        synchronized (byLkeyLock)
        {
            final Int2ObjectHashMap<DisniMemoryRegion> next = new Int2ObjectHashMap<>(byLkey);
            next.remove(region.lkey(), region);
            byLkey = next;
        }
        forget(region);
    }

    @Override
    protected void added(final DisniMemoryRegion region)
    {
        synchronized (byLkeyLock)
        {
            // Copy on write: regions come and go rarely (rendezvous buffers are pooled), posts read on every send.
            final Int2ObjectHashMap<DisniMemoryRegion> next = new Int2ObjectHashMap<>(byLkey);
            next.put(region.lkey(), region);
            byLkey = next;
        }
    }

    /**
     * What the HCA checks for a gathered SGE, checked here for sends that go inline (an inline send's data is copied at
     * post time, and the HCA checks no key for it): the lkey is a live region of this PD that holds the range.
     *
     * @param lkey    the SGE's key.
     * @param address its address.
     * @param length  its length.
     * @return true if the SGE is valid.
     */
    boolean holds(final int lkey, final long address, final int length)
    {
        final DisniMemoryRegion region = byLkey.get(lkey);
        return region != null && region.isRegistered() && address >= region.address() &&
            address + length <= region.address() + region.length();
    }

    /**
     * Releases the PD, or, while a QP still uses it, marks it to be released when its last QP is destroyed:
     * {@code ibv_dealloc_pd} refuses (EBUSY) a PD with a QP, and DiSNi marks its PD closed before asking, so a refused
     * call cannot be repeated. That happens when a context closes while a handshake still holds a QP it has not
     * handed over (the engine closing during an accept): the PD is closed under that QP, which goes a moment later.
     */
    @Override
    protected void closed()
    {
        synchronized (this)
        {
            closeRequested = true;
            if (queuePairs > 0)
            {
                return;
            }
        }
        dealloc();
    }

    /** A QP was created on this PD. */
    synchronized void queuePairCreated()
    {
        queuePairs++;
    }

    /** A QP created on this PD was destroyed: if the PD was closed meanwhile and this was its last QP, it goes now. */
    void queuePairDestroyed()
    {
        synchronized (this)
        {
            queuePairs--;
            if (!closeRequested || queuePairs > 0)
            {
                return;
            }
        }
        dealloc();
    }

    private void dealloc()
    {
        synchronized (this)
        {
            if (deallocated)
            {
                return;
            }
            deallocated = true;
        }
        DisniVerbsContext.quietly(pd::deallocPd);
        context.untrack(this);
    }

    /** @return whether this PD was closed and {@code ibv_dealloc_pd} was asked to release it (for tests). */
    synchronized boolean deallocated()
    {
        return deallocated;
    }
}
