package io.reverb.rdma.provider.base;

import io.reverb.rdma.verbs.CompletionChannel;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The completion channel of the software providers ({@code shm}, {@code tcp}): an armed CQ that
 * receives a completion calls {@link #signal()}, which counts one event and wakes the waiter.
 * {@link #await(long)}'s loop (closed, pending events, a requested wake-up, the deadline) is written here once;
 * by default the waiter parks. A subclass that blocks elsewhere (tcp: in a selector that also watches sockets)
 * overrides the four blocking hooks; subclasses say what closing unregisters.
 */
public abstract class ParkingCompletionChannel implements CompletionChannel
{
    private final AtomicInteger pendingEvents = new AtomicInteger();
    private volatile boolean wakeupRequested;
    private volatile Thread waiter;
    private volatile boolean closed;

    /** Records one CQ event and wakes the waiter. Any thread. */
    public void signal()
    {
        pendingEvents.incrementAndGet();
        wakeWaiter();
    }

    @Override
    public int await(final long timeoutNanos) throws IOException
    {
        final boolean untimed = timeoutNanos == NO_TIMEOUT;
        final long deadline = untimed ? 0 : System.nanoTime() + Math.max(0, timeoutNanos);
        beginWait();
        try
        {
            while (true)
            {
                if (closed)
                {
                    throw new IOException("completion channel is closed");
                }
                final int events = pendingEvents.getAndSet(0);
                if (events > 0)
                {
                    return events;
                }
                if (wakeupRequested)
                {
                    wakeupRequested = false;
                    return 0;
                }
                final long remaining = untimed ? NO_TIMEOUT : deadline - System.nanoTime();
                if (remaining <= 0)
                {
                    return 0;
                }
                final int ready = block(remaining);
                if (ready > 0)
                {
                    return ready;
                }
            }
        }
        finally
        {
            endWait();
        }
    }

    @Override
    public void wakeup()
    {
        wakeupRequested = true;
        wakeWaiter();
    }

    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        wakeWaiter();
        onClose();
    }

    /** Records one CQ event found by the waiter itself while it blocks (no wake-up needed). Waiter thread. */
    protected final void addEvent()
    {
        pendingEvents.incrementAndGet();
    }

    /** @return events counted and not yet taken by a waiter */
    protected final int pendingEvents()
    {
        return pendingEvents.get();
    }

    /**
     * The waiter is about to read the flags: publish that it waits (a volatile write), so that {@link #wakeWaiter()}
     * after a flag was set either is seen by the loop or wakes the waiter.
     */
    protected void beginWait()
    {
        waiter = Thread.currentThread();
    }

    /**
     * Blocks at most {@code remainingNanos}; spurious returns are fine, the loop re-checks everything.
     *
     * @param remainingNanos time left until the deadline (positive), or {@link #NO_TIMEOUT}: no time limit.
     * @return events the blocking itself found (returned to the caller), or 0.
     * @throws IOException if the channel's own means of blocking was closed.
     */
    protected int block(final long remainingNanos) throws IOException
    {
        if (remainingNanos == NO_TIMEOUT)
        {
            LockSupport.park(this);
        }
        else
        {
            LockSupport.parkNanos(this, remainingNanos);
        }
        return 0;
    }

    /**
     * @param remainingNanos what {@link #block(long)} was given.
     * @return the timeout of a {@code Selector.select(long)} for it: whole milliseconds rounded up (at least 1), or 0
     *         (no time limit) for {@link #NO_TIMEOUT}.
     */
    protected static long selectTimeoutMillis(final long remainingNanos)
    {
        if (remainingNanos == NO_TIMEOUT)
        {
            return 0;
        }
        return Math.max(1, TimeUnit.NANOSECONDS.toMillis(Math.min(remainingNanos, NO_TIMEOUT - 999_999) + 999_999));
    }

    /** The waiter left {@link #await(long)}. */
    protected void endWait()
    {
        waiter = null;
    }

    /** Wakes the waiter if there is one. Any thread. */
    protected void wakeWaiter()
    {
        final Thread thread = waiter;
        if (thread != null)
        {
            LockSupport.unpark(thread);
        }
    }

    /** Called once by the first {@link #close()}, after the waiter was woken: unregister from the context. */
    protected abstract void onClose();

    @Override
    public String toString()
    {
        return getClass().getSimpleName() + "{pending=" + pendingEvents.get() + '}';
    }
}
