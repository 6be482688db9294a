package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.CompletionChannel;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A completion channel: an armed CQ that receives a completion (on the NIC thread, or on a thread
 * posting to a QP in ERROR) counts one event here and unparks the waiter.
 */
final class TcpCompletionChannel implements CompletionChannel
{
    private final TcpVerbsContext context;
    private final AtomicInteger pendingEvents = new AtomicInteger();
    private volatile boolean wakeupRequested;
    private volatile Thread waiter;
    private volatile boolean closed;

    TcpCompletionChannel(final TcpVerbsContext context)
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
        return "TcpCompletionChannel{pending=" + pendingEvents.get() + '}';
    }
}
