package io.reverb.rpc.internal;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The bytes one connection may hold for compressed messages not yet consumed: the compressed copies waiting to be
 * inflated, and the inflated arrays until the call consumes them (a streaming call's message once it is handed to the
 * request stream, a one-request call's until the call ends). A peer's small frames can claim at most this much of the
 * server's heap per connection, as grpc-java's flow-control window bounds its inbound queue. Thread-safe: reserved on
 * the transport's thread and the inflater, released on whichever thread ends a call.
 */
final class InflationBudget
{
    /**
     * Bytes a connection inflates per {@link #PACING_WINDOW_NANOS} at full speed; beyond them its inflation is paced
     * (a request now and then, even a large one, is not; a flood of compressed requests is).
     */
    static final long FREE_BYTES_PER_WINDOW = 8L << 20;
    static final long PACING_WINDOW_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /**
     * A paced inflation runs this long, then rests as long as it ran: half a core at most, and never a scheduler tick
     * on end, so that the threads it shares the cores with (the pollers, the other connections' callers) get a core
     * within this much time instead of waiting for the kernel to preempt it.
     */
    static final long PACING_SLICE_NANOS = TimeUnit.MICROSECONDS.toNanos(100);

    private final long limit;
    private final long freeBytesPerWindow;
    private final long windowNanos;
    private final long sliceNanos;
    // pacing: the connection's inflater only (one at a time, handed over through the lane's lock)
    private long windowStart;
    private long windowBytes;
    private long sliceStart;
    private long rests;
    private final AtomicLong used = new AtomicLong();
    private final AtomicLong peak = new AtomicLong();

    /**
     * @param limit bytes the connection may hold; positive.
     */
    InflationBudget(final long limit)
    {
        this(limit, FREE_BYTES_PER_WINDOW, PACING_WINDOW_NANOS, PACING_SLICE_NANOS);
    }

    /**
     * @param limit              bytes the connection may hold; positive.
     * @param freeBytesPerWindow bytes inflated per window before pacing starts.
     * @param windowNanos        the window.
     * @param sliceNanos         how long a paced inflation runs before it rests as long.
     */
    InflationBudget(final long limit, final long freeBytesPerWindow, final long windowNanos, final long sliceNanos)
    {
        if (limit <= 0)
        {
            throw new IllegalArgumentException("inflation budget must be positive: " + limit);
        }
        this.limit = limit;
        this.freeBytesPerWindow = freeBytesPerWindow;
        this.windowNanos = windowNanos;
        this.sliceNanos = sliceNanos;
        this.windowStart = System.nanoTime() - windowNanos - 1;
    }

    /** An inflation begins (the connection's inflater thread): its first slice starts now. */
    void inflationStarts()
    {
        sliceStart = System.nanoTime();
    }

    /**
     * Some bytes were inflated (the connection's inflater thread): past the connection's free allowance, an inflation
     * that ran a slice rests as long as it ran.
     *
     * @param bytes bytes just inflated.
     */
    void inflated(final int bytes)
    {
        final long now = System.nanoTime();
        if (now - windowStart > windowNanos)
        {
            windowStart = now;
            windowBytes = 0;
        }
        windowBytes += bytes;
        final long ran = now - sliceStart;
        if (windowBytes > freeBytesPerWindow && ran >= sliceNanos)
        {
            LockSupport.parkNanos(ran);
            rests++;
            sliceStart = System.nanoTime();
        }
    }

    /** @return how often this connection's inflation rested (the inflater's view; for tests). */
    long rests()
    {
        return rests;
    }

    /**
     * @param bytes bytes to hold; not negative.
     * @return true if they fit and are now held, false if they would exceed the limit (nothing held).
     */
    boolean tryReserve(final long bytes)
    {
        while (true)
        {
            final long current = used.get();
            final long next = current + bytes;
            if (next > limit || next < 0)
            {
                return false;
            }
            if (used.compareAndSet(current, next))
            {
                peak.accumulateAndGet(next, Math::max);
                return true;
            }
        }
    }

    /**
     * @param bytes bytes reserved earlier and no longer held.
     */
    void release(final long bytes)
    {
        if (bytes != 0)
        {
            used.addAndGet(-bytes);
        }
    }

    /** @return the limit. */
    long limit()
    {
        return limit;
    }

    /** @return bytes held now. */
    long used()
    {
        return used.get();
    }

    /** @return the most bytes ever held at once. */
    long peak()
    {
        return peak.get();
    }
}
