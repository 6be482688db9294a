package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.RemoteMapping;
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
 *
 * <p><b>Receive pools</b> (built with a {@link RendezvousBudget}) never allocate in the caller's thread, which is
 * the poller: {@link #acquireIdle(int)} only hands out idle buffers; {@link #reserve(int)} books a buffer's bytes
 * against this pool's cap and the engine-wide budget, and {@link #allocateReserved(int)} (the engine's allocator
 * thread) registers it and adds it to the idle buffers. While any connection waits for the engine-wide budget,
 * buffers coming back are freed rather than kept (trim), and so are idle buffers when a reservation fails.
 */
final class BufferPool
{
    /** A pooled buffer, also the {@link RetainedMessage} handed out by {@link Connection#retain()}. */
    static final class Buffer implements RetainedMessage
    {
        private static final byte[] NO_BYTES = new byte[0];

        final BufferPool pool;
        final MemoryRegion region;
        final UnsafeBuffer buffer;
        final int sizeClass;
        private ByteBuffer byteBuffer;

        /** Rendezvous id this buffer currently serves. */
        int id;
        /** Receiver side: when its CTS was queued, for the write timeout. */
        long grantedAtNanos;
        /** Message length it holds. */
        int length;
        /** Sender side: the claimant's message id. */
        long messageId;
        /** Sender side: granted remote address and key, once CTS arrived. */
        long remoteAddress;
        int remoteRkey;
        /** Sender side: what the claimant attached, handed back if the peer refuses the message. */
        Object attachment;
        /** Sender side, between claim and commit: the index of the message's RTS frame in the send ring. */
        int frameIndex;
        boolean inUse;
        boolean retained;

        /**
         * Sender side, a direct write (see {@link RendezvousSender}): no local memory, the message is written into
         * the peer's granted buffer through {@link #mapping}. Not pooled: {@link #pool} and {@link #region} are null.
         */
        final boolean direct;
        /** Direct write: the peer's granted buffer, mapped once its CTS arrived (null before, and once closed). */
        RemoteMapping mapping;
        /**
         * Sender side, a pool buffer announced at its claim ({@link EngineConfig#announceAtClaim(boolean)}): its RTS
         * left before the claimant wrote the message, so its write waits for {@link #committed}.
         */
        boolean early;
        /** Direct write: handed to a claimant. */
        boolean claimed;
        /** Direct write or early announcement: committed by its claimant (its write or notification may be posted). */
        boolean committed;
        /** Direct write or early announcement: given up before its CTS arrived; the CTS is answered with ABORT. */
        boolean abandoned;
        /** Sender side: claimed for a message whose announcement the peer refused (code, limit); 0 otherwise. */
        int refusedCode;
        int refusedLimit;

        Buffer(final BufferPool pool, final MemoryRegion region, final int sizeClass)
        {
            this.pool = pool;
            this.region = region;
            this.buffer = region.buffer();
            this.sizeClass = sizeClass;
            this.direct = false;
        }

        private Buffer()
        {
            this.pool = null;
            this.region = null;
            this.buffer = new UnsafeBuffer(NO_BYTES);
            this.sizeClass = 0;
            this.direct = true;
        }

        /** @return a direct-write rendezvous, without memory until {@link #map(RemoteMapping)}. */
        static Buffer direct()
        {
            return new Buffer();
        }

        /** Direct write: the claimant writes into the peer's granted buffer, mapped. */
        void map(final RemoteMapping granted)
        {
            mapping = granted;
            buffer.wrap(granted.buffer(), 0, granted.length());
            byteBuffer = granted.byteBuffer();
        }

        /** Direct write: closes the mapping (once nothing writes through it any more). @return true if it was open. */
        boolean unmap()
        {
            final RemoteMapping m = mapping;
            if (m == null)
            {
                return false;
            }
            mapping = null;
            byteBuffer = null;
            buffer.wrap(NO_BYTES);
            m.close();
            return true;
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

    /** {@link #reserve(int)}: bytes booked; call {@link #allocateReserved(int)} off the poller. */
    static final int RESERVED = 0;
    /** {@link #reserve(int)}: this pool's cap is taken by buffers in use; a release here frees room. */
    static final int POOL_FULL = 1;
    /** {@link #reserve(int)}: the engine-wide budget is taken; a release anywhere frees room. */
    static final int BUDGET_FULL = 2;
    /** {@link #reserve(int)}: the pool is closed. */
    static final int POOL_CLOSED = 3;

    private final ProtectionDomain pd;
    private final RendezvousBudget budget;
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
    private int allocationsPending;
    /**
     * Receive side: the buffer just registered for the RTS that booked it, not yet handed out. Kept apart from
     * the idle buffers so that no trim frees it before its RTS is granted (two connections could otherwise free
     * each other's fresh buffers in turn).
     */
    private Buffer fresh;

    BufferPool(
        final ProtectionDomain pd,
        final int access,
        final int minClass,
        final int maxClass,
        final long maxBytes,
        final Runnable onRelease)
    {
        this(pd, null, access, minClass, maxClass, maxBytes, onRelease);
    }

    /**
     * @param budget the engine-wide receive budget for a receive pool (which then never allocates in
     *               {@link #acquire}), or null for a send pool.
     */
    @SuppressWarnings("unchecked")
    BufferPool(
        final ProtectionDomain pd,
        final RendezvousBudget budget,
        final int access,
        final int minClass,
        final int maxClass,
        final long maxBytes,
        final Runnable onRelease)
    {
        this.pd = pd;
        this.budget = budget;
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
        if (budget != null)
        {
            budget.register(this);
        }
    }

    /** @return the largest message a buffer can hold. */
    int maxClass()
    {
        return maxClass;
    }

    /** @return the cap on this pool's registered bytes. */
    long maxBytes()
    {
        return maxBytes;
    }

    /** @return the size class that holds {@code length} bytes. */
    int sizeClassFor(final int length)
    {
        return Math.max(minClass, EngineConfig.sizeClassFor(length));
    }

    /**
     * Receive side (poller): an idle buffer of the class for {@code length}, without allocating.
     *
     * @param length message length, at most {@link #maxClass()}.
     * @return the buffer, or null if none is idle.
     */
    synchronized Buffer acquireIdle(final int length)
    {
        if (closed || length > maxClass)
        {
            return null;
        }
        final int index = classIndex(sizeClassFor(length));
        Buffer buffer = fresh;
        if (buffer != null)
        {
            fresh = null;
            if (classIndex(buffer.sizeClass) != index)
            {
                free[classIndex(buffer.sizeClass)].addFirst(buffer); // booked for another length: an idle buffer now
                buffer = null;
            }
        }
        if (buffer == null)
        {
            buffer = free[index].pollFirst();
        }
        if (buffer != null)
        {
            handOut(buffer, length);
        }
        return buffer;
    }

    /**
     * Receive side (poller): books the bytes of a buffer for {@code length} against this pool's cap (freeing
     * idle buffers of other classes if needed) and the engine-wide budget (trimming every pool's idle buffers
     * if needed). Nothing is allocated here.
     *
     * @param length message length, at most {@link #maxClass()}.
     * @return {@link #RESERVED} (then {@link #allocateReserved(int)} must follow), {@link #POOL_FULL},
     * {@link #BUDGET_FULL} or {@link #POOL_CLOSED}.
     */
    int reserve(final int length)
    {
        final int sizeClass = sizeClassFor(length);
        synchronized (this)
        {
            if (closed)
            {
                return POOL_CLOSED;
            }
            if (bytesAllocated + sizeClass > maxBytes)
            {
                evictIdleExcept(classIndex(sizeClass), bytesAllocated + sizeClass - maxBytes);
            }
            if (bytesAllocated + sizeClass > maxBytes)
            {
                return POOL_FULL;
            }
        }
        // Not under this pool's lock: trimming takes every pool's lock (lock order: pool, then budget).
        if (!budget.tryReserve(sizeClass) && (budget.trimIdle() == 0 || !budget.tryReserve(sizeClass)))
        {
            return BUDGET_FULL;
        }
        synchronized (this)
        {
            if (closed)
            {
                budget.release(sizeClass);
                return POOL_CLOSED;
            }
            bytesAllocated += sizeClass;
            allocationsPending++;
        }
        return RESERVED;
    }

    /**
     * Registers a buffer whose bytes {@link #reserve(int)} booked and adds it to the idle buffers. Runs on the
     * engine's allocator thread: registering memory may block (the JVM's direct-memory reservation waits for a
     * GC before it fails), and the poller must not.
     *
     * @param length the length given to {@link #reserve(int)}.
     * @throws IOException or a RuntimeException (OutOfMemoryError is wrapped) if the memory cannot be
     *                     registered; the booking is returned.
     */
    void allocateReserved(final int length) throws IOException
    {
        final int sizeClass = sizeClassFor(length);
        MemoryRegion region = null;
        Throwable failure = null;
        try
        {
            region = pd.allocate(sizeClass, access);
        }
        catch (final IOException | RuntimeException | OutOfMemoryError ex)
        {
            failure = ex;
        }
        boolean closeRegion = false;
        synchronized (this)
        {
            allocationsPending--;
            if (failure != null || closed)
            {
                bytesAllocated -= sizeClass;
                budget.release(sizeClass);
                allocationFailures += failure != null ? 1 : 0;
                closeRegion = region != null;
            }
            else
            {
                if (fresh != null)
                {
                    free[classIndex(fresh.sizeClass)].addFirst(fresh);
                }
                fresh = new Buffer(this, region, sizeClass);
            }
        }
        if (closeRegion)
        {
            region.close();
        }
        if (onRelease != null)
        {
            onRelease.run(); // the waiting RTS (or a closing connection) looks again
        }
        if (failure instanceof IOException)
        {
            throw (IOException)failure;
        }
        if (failure != null)
        {
            throw new IOException("cannot register " + sizeClass + " bytes for a rendezvous: " + failure, failure);
        }
    }

    /** @return reservations whose allocation has not finished. */
    synchronized int allocationsPending()
    {
        return allocationsPending;
    }

    /**
     * Frees every idle buffer (trim): the engine-wide budget needs the bytes elsewhere.
     *
     * @return bytes freed.
     */
    synchronized long trimIdle()
    {
        long freed = 0;
        for (final ArrayDeque<Buffer> list : free)
        {
            Buffer buffer;
            while ((buffer = list.pollFirst()) != null)
            {
                freed += buffer.sizeClass;
                discard(buffer);
            }
        }
        return freed;
    }

    /**
     * @param length message length, at most {@link #maxClass()}.
     * @return a buffer of at least length bytes, or null if the pool is exhausted or closed.
     */
    synchronized Buffer acquire(final int length)
    {
        if (budget != null)
        {
            return acquireIdle(length); // a receive pool books and allocates through reserve(), off the poller
        }
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
        handOut(buffer, length);
        return buffer;
    }

    private void handOut(final Buffer buffer, final int length)
    {
        buffer.inUse = true;
        buffer.retained = false;
        buffer.length = length;
        bytesInUse += buffer.sizeClass;
        buffersInUse++;
    }

    /** Deregisters a buffer's memory and gives its size back to the budget (this pool's monitor held). */
    private void discard(final Buffer buffer)
    {
        assert Thread.holdsLock(this);
        buffer.region.close();
        bytesAllocated -= buffer.sizeClass;
        if (budget != null)
        {
            budget.release(buffer.sizeClass);
        }
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
            buffer.attachment = null;
            bytesInUse -= buffer.sizeClass;
            buffersInUse--;
            if (closed || (budget != null && budget.hasWaiters()))
            {
                discard(buffer); // someone waits for the engine-wide budget: trim rather than keep
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

    /** Frees idle buffers; buffers in use (and allocations under way) are freed when they come back. */
    void close()
    {
        synchronized (this)
        {
            closed = true;
            trimIdle();
            if (fresh != null)
            {
                discard(fresh);
                fresh = null;
            }
        }
        if (budget != null)
        {
            budget.unregister(this);
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
                freed += buffer.sizeClass;
                discard(buffer);
            }
        }
    }

    private int classIndex(final int sizeClass)
    {
        return Integer.numberOfTrailingZeros(sizeClass) - Integer.numberOfTrailingZeros(minClass);
    }
}
