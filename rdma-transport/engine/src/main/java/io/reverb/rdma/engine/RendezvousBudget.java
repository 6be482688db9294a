package io.reverb.rdma.engine;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The engine-wide budget of registered rendezvous <em>receive</em> memory (issue 13, item 3): what peers can make
 * this process register, summed over every connection. Each connection's receive {@link BufferPool} reserves a
 * buffer's bytes here before the buffer is allocated and gives them back when the buffer is freed, so the sum
 * never exceeds {@link EngineConfig#rendezvousMemoryBytes()} however many peers announce how much.
 *
 * <p>A connection whose RTS found the budget exhausted {@link #await waits} here; every release wakes every
 * waiting connection (whichever connection freed the bytes), so no RTS is left waiting without a wake-up. While
 * someone waits, receive pools free buffers as they come back instead of keeping them idle ({@link #hasWaiters()}),
 * and a failed reservation first {@link #trimIdle trims} the idle buffers of every pool.
 *
 * <p>Thread-safe: reserved and released by pollers, the allocator thread and closing connections.
 */
final class RendezvousBudget
{
    private final long maxBytes;
    /** Wake-ups of the connections waiting (each connection's {@code requestAttention}). */
    private final Set<Runnable> waiters = new LinkedHashSet<>();
    private final CopyOnWriteArrayList<BufferPool> pools = new CopyOnWriteArrayList<>();
    private long reserved;
    private long peak;
    private volatile boolean hasWaiters;

    RendezvousBudget(final long maxBytes)
    {
        this.maxBytes = maxBytes;
    }

    /** @return the budget in bytes. */
    long maxBytes()
    {
        return maxBytes;
    }

    /** @return bytes reserved (allocated, or being allocated) by every receive pool. */
    synchronized long reservedBytes()
    {
        return reserved;
    }

    /** @return the most bytes ever reserved at once. */
    synchronized long peakBytes()
    {
        return peak;
    }

    /** @return connections waiting for bytes. */
    synchronized int waiting()
    {
        return waiters.size();
    }

    boolean hasWaiters()
    {
        return hasWaiters;
    }

    void register(final BufferPool pool)
    {
        pools.add(pool);
    }

    void unregister(final BufferPool pool)
    {
        pools.remove(pool);
    }

    /**
     * @param bytes a buffer's size class.
     * @return true if reserved; false if that would exceed the budget (nothing reserved).
     */
    synchronized boolean tryReserve(final long bytes)
    {
        if (reserved + bytes > maxBytes)
        {
            return false;
        }
        reserved += bytes;
        peak = Math.max(peak, reserved);
        return true;
    }

    /**
     * Frees idle buffers of every receive pool (trim), so that memory kept for reuse by quiet connections
     * serves the connection that needs it.
     *
     * @return bytes freed.
     */
    long trimIdle()
    {
        long freed = 0;
        for (final BufferPool pool : pools)
        {
            freed += pool.trimIdle();
        }
        return freed;
    }

    /**
     * A connection's RTS waits for bytes: it is woken by the next release.
     *
     * @param wakeUp the connection's wake-up (the same object each time).
     */
    synchronized void await(final Runnable wakeUp)
    {
        waiters.add(wakeUp);
        hasWaiters = true;
    }

    /** The connection is gone (or no longer waits). */
    synchronized void cancel(final Runnable wakeUp)
    {
        waiters.remove(wakeUp);
        hasWaiters = !waiters.isEmpty();
    }

    /** Bytes freed: every waiting connection is woken to try again. */
    void release(final long bytes)
    {
        final List<Runnable> wake;
        synchronized (this)
        {
            reserved -= bytes;
            if (waiters.isEmpty())
            {
                return;
            }
            wake = new ArrayList<>(waiters);
            waiters.clear();
            hasWaiters = false;
        }
        for (final Runnable wakeUp : wake)
        {
            wakeUp.run();
        }
    }
}
