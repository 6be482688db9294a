package io.reverb.rdma.provider;

import io.reverb.rdma.verbs.CompletionChannel;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The completion channel of the software providers ({@code shm}, {@code tcp}): an armed CQ that
 * receives a completion calls {@link #signal()}, which counts one event and unparks the waiter.
 * Subclasses only say where events come from and what closing unregisters.
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
        unparkWaiter();
    }

    @Override
    public int await(final long timeoutNanos) throws IOException
    {
        final long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        waiter = Thread.currentThread();
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
                final long remaining = deadline - System.nanoTime();
                if (remaining <= 0)
                {
                    return 0;
                }
                // Spurious returns are fine: the loop re-checks everything.
                LockSupport.parkNanos(this, remaining);
            }
        }
        finally
        {
            waiter = null;
        }
    }

    @Override
    public void wakeup()
    {
        wakeupRequested = true;
        unparkWaiter();
    }

    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        unparkWaiter();
        onClose();
    }

    /** Called once by the first {@link #close()}, after the waiter was woken: unregister from the context. */
    protected abstract void onClose();

    private void unparkWaiter()
    {
        final Thread thread = waiter;
        if (thread != null)
        {
            LockSupport.unpark(thread);
        }
    }

    @Override
    public String toString()
    {
        return getClass().getSimpleName() + "{pending=" + pendingEvents.get() + '}';
    }
}
