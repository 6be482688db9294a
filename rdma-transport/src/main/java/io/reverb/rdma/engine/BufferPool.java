package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A bounded pool of registered rendezvous buffers in power-of-two size classes, owned by one
 * connection and one direction. Buffers are registered in the connection's own protection domain,
 * so the peer can only ever reach memory granted to this connection.
 *
 * <p>Buffers are allocated on first need and kept for reuse; when a class is empty and the byte
 * cap is reached, idle buffers of other classes are freed to make room, and if that is not enough
 * {@link #acquire(int)} returns null: the caller queues (receiver) or back-pressures (sender)
 * instead of allocating without bound. Thread-safe (the rendezvous path is not the per-message hot path).
 */
final class BufferPool
{
    /** A pooled buffer, also the {@link RetainedMessage} handed out by {@link Connection#retain()}. */
    static final class Buffer implements RetainedMessage
    {
        final BufferPool pool;
        final MemoryRegion region;
        final UnsafeBuffer buffer;
        final int sizeClass;
        private ByteBuffer byteBuffer;

        /** Rendezvous id this buffer currently serves. */
        int id;
        /** Message length it holds. */
        int length;
        /** Sender side: the claimant's message id. */
        long messageId;
        /** Sender side: granted remote address and key, once CTS arrived. */
        long remoteAddress;
        int remoteRkey;
        boolean inUse;
        boolean retained;

        Buffer(final BufferPool pool, final MemoryRegion region, final int sizeClass)
        {
            this.pool = pool;
            this.region = region;
            this.buffer = region.buffer();
            this.sizeClass = sizeClass;
        }

        ByteBuffer byteBuffer()
        {
            if (byteBuffer == null)
            {
                byteBuffer = region.byteBuffer().duplicate();
            }
            return byteBuffer;
        }

        @Override
        public DirectBuffer buffer()
        {
            return buffer;
        }

        @Override
        public int offset()
        {
            return 0;
        }

        @Override
        public int length()
        {
            return length;
        }

        @Override
        public void release()
        {
            pool.releaseRetained(this);
        }
    }

    private final ProtectionDomain pd;
    private final int access;
    private final int minClass;
    private final int maxClass;
    private final long maxBytes;
    private final ArrayDeque<Buffer>[] free;
    private final Runnable onRelease;
    private long bytesAllocated;
    private long bytesInUse;
    private int buffersInUse;
    private boolean closed;
    private long allocationFailures;

    @SuppressWarnings("unchecked")
    BufferPool(
        final ProtectionDomain pd,
        final int access,
        final int minClass,
        final int maxClass,
        final long maxBytes,
        final Runnable onRelease)
    {
        this.pd = pd;
        this.access = access;
        this.minClass = minClass;
        this.maxClass = maxClass;
        this.maxBytes = maxBytes;
        this.onRelease = onRelease;
        final int classes = Integer.numberOfTrailingZeros(maxClass) - Integer.numberOfTrailingZeros(minClass) + 1;
        free = new ArrayDeque[Math.max(1, classes)];
        for (int i = 0; i < free.length; i++)
        {
            free[i] = new ArrayDeque<>();
        }
    }

    /** @return the largest message a buffer can hold. */
    int maxClass()
    {
        return maxClass;
    }

    /**
     * @param length message length, at most {@link #maxClass()}.
     * @return a buffer of at least length bytes, or null if the pool is exhausted or closed.
     */
    synchronized Buffer acquire(final int length)
    {
        if (closed || length > maxClass)
        {
            return null;
        }
        final int sizeClass = Math.max(minClass, EngineConfig.sizeClassFor(length));
        final int index = classIndex(sizeClass);
        Buffer buffer = free[index].pollFirst();
        if (buffer == null)
        {
            if (bytesAllocated + sizeClass > maxBytes)
            {
                evictIdleExcept(index, bytesAllocated + sizeClass - maxBytes);
            }
            if (bytesAllocated + sizeClass > maxBytes)
            {
                return null;
            }
            try
            {
                buffer = new Buffer(this, pd.allocate(sizeClass, access), sizeClass);
                bytesAllocated += sizeClass;
            }
            catch (final IOException | RuntimeException ex)
            {
                allocationFailures++;
                return null;
            }
        }
        buffer.inUse = true;
        buffer.retained = false;
        buffer.length = length;
        bytesInUse += sizeClass;
        buffersInUse++;
        return buffer;
    }

    /** Returns a buffer (engine side). */
    void release(final Buffer buffer)
    {
        synchronized (this)
        {
            if (!buffer.inUse)
            {
                return;
            }
            buffer.inUse = false;
            buffer.retained = false;
            bytesInUse -= buffer.sizeClass;
            buffersInUse--;
            if (closed)
            {
                buffer.region.close();
                bytesAllocated -= buffer.sizeClass;
            }
            else
            {
                free[classIndex(buffer.sizeClass)].addFirst(buffer);
            }
        }
        if (onRelease != null)
        {
            onRelease.run();
        }
    }

    private void releaseRetained(final Buffer buffer)
    {
        synchronized (this)
        {
            if (!buffer.retained)
            {
                return;
            }
        }
        release(buffer);
    }

    /** @return buffers handed out and not yet returned. */
    synchronized int buffersInUse()
    {
        return buffersInUse;
    }

    /** @return bytes of the buffers handed out. */
    synchronized long bytesInUse()
    {
        return bytesInUse;
    }

    /** @return registered bytes, in use or idle. */
    synchronized long bytesAllocated()
    {
        return bytesAllocated;
    }

    /** @return failed registrations (counted as exhaustion). */
    synchronized long allocationFailures()
    {
        return allocationFailures;
    }

    /** Frees idle buffers; buffers in use are freed when released. */
    synchronized void close()
    {
        closed = true;
        for (final ArrayDeque<Buffer> list : free)
        {
            Buffer buffer;
            while ((buffer = list.pollFirst()) != null)
            {
                buffer.region.close();
                bytesAllocated -= buffer.sizeClass;
            }
        }
    }

    private void evictIdleExcept(final int keepIndex, final long needed)
    {
        long freed = 0;
        for (int i = free.length - 1; i >= 0 && freed < needed; i--)
        {
            if (i == keepIndex)
            {
                continue;
            }
            Buffer buffer;
            while (freed < needed && (buffer = free[i].pollLast()) != null)
            {
                buffer.region.close();
                bytesAllocated -= buffer.sizeClass;
                freed += buffer.sizeClass;
            }
        }
    }

    private int classIndex(final int sizeClass)
    {
        return Integer.numberOfTrailingZeros(sizeClass) - Integer.numberOfTrailingZeros(minClass);
    }
}
