package io.reverb.rpc.internal;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The bytes one connection may hold for compressed messages not yet consumed: the compressed copies waiting to be
 * inflated, and the inflated arrays until the call consumes them (a streaming call's message once it is handed to the
 * request stream, a one-request call's until the call ends). A peer's small frames can claim at most this much of the
 * server's heap per connection, as grpc-java's flow-control window bounds its inbound queue. Thread-safe: reserved on
 * the transport's thread and the inflater, released on whichever thread ends a call.
 */
final class InflationBudget
{
    private final long limit;
    private final AtomicLong used = new AtomicLong();
    private final AtomicLong peak = new AtomicLong();

    /**
     * @param limit bytes the connection may hold; positive.
     */
    InflationBudget(final long limit)
    {
        if (limit <= 0)
        {
            throw new IllegalArgumentException("inflation budget must be positive: " + limit);
        }
        this.limit = limit;
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
