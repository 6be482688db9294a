package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.CompletionChannel;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A completion channel. Events come from two places: producers in this JVM that disarm one of the
 * channel's CQs signal it directly; producers in other processes ring the doorbell over their
 * connection's Unix domain socket, and the context's event thread signals the channel on their
 * behalf. The waiter parks; a signal or {@link #wakeup()} unparks it.
 */
final class ShmCompletionChannel implements CompletionChannel
{
    private final ShmVerbsContext context;
    private final AtomicInteger pendingEvents = new AtomicInteger();
    private volatile boolean wakeupRequested;
    private volatile Thread waiter;
    private volatile boolean closed;

    ShmCompletionChannel(final ShmVerbsContext context)
    {
        this.context = context;
    }

    /** Records one CQ event and wakes the waiter. Any thread. */
    void signal()
    {
        pendingEvents.incrementAndGet();
        final Thread thread = waiter;
        if (thread != null)
        {
            LockSupport.unpark(thread);
        }
    }

    @Override
    public int await(final long timeoutNanos) throws IOException
    {
        final long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        final Thread self = Thread.currentThread();
        waiter = self;
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
        final Thread thread = waiter;
        if (thread != null)
        {
            LockSupport.unpark(thread);
        }
    }

    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        final Thread thread = waiter;
        if (thread != null)
        {
            LockSupport.unpark(thread);
        }
        context.removed(this);
    }

    @Override
    public String toString()
    {
        return "ShmCompletionChannel{pending=" + pendingEvents.get() + '}';
    }
}
