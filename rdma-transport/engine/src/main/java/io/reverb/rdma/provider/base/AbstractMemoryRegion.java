package io.reverb.rdma.provider.base;

import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * What every provider's memory region holds the same way: PD, keys, access, length, the memory view and
 * the registered flag; {@code byteBuffer()} and deregistration stay in the provider.
 *
 * @param <P> the provider's protection domain type
 */
public abstract class AbstractMemoryRegion<P extends ProtectionDomain> implements MemoryRegion
{
    protected final P pd;
    protected final long address;
    protected final int lkey;
    protected final int rkey;
    protected final int access;
    protected final int length;
    protected final UnsafeBuffer buffer;
    private volatile boolean registered = true;

    protected AbstractMemoryRegion(
        final P pd,
        final long address,
        final int lkey,
        final int rkey,
        final int access,
        final int length,
        final UnsafeBuffer buffer)
    {
        this.pd = pd;
        this.address = address;
        this.lkey = lkey;
        this.rkey = rkey;
        this.access = access;
        this.length = length;
        this.buffer = buffer;
    }

    /**
     * Marks the region deregistered.
     *
     * @return true the first time, false if it already was (the caller then does nothing more)
     */
    protected final synchronized boolean markDeregistered()
    {
        if (!registered)
        {
            return false;
        }
        registered = false;
        return true;
    }

    @Override
    public final ProtectionDomain pd()
    {
        return pd;
    }

    @Override
    public final long address()
    {
        return address;
    }

    @Override
    public final int length()
    {
        return length;
    }

    @Override
    public final int lkey()
    {
        return lkey;
    }

    @Override
    public final int rkey()
    {
        return rkey;
    }

    @Override
    public final int access()
    {
        return access;
    }

    @Override
    public final UnsafeBuffer buffer()
    {
        return buffer;
    }

    @Override
    public final boolean isRegistered()
    {
        return registered;
    }
}
