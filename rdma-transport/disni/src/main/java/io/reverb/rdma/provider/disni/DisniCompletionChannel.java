package io.reverb.rdma.provider.disni;

import io.reverb.rdma.verbs.CompletionChannel;
import java.io.IOException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The SPI's completion channel for DiSNi: a Java-level gate fed by one event pump per CQ.
 *
 * <p>Why not one {@code IbvCompChannel} shared by several CQs, as in C? DiSNi 2.1's {@code getCqEvent}
 * drops the CQ that {@code ibv_get_cq_event} returns, so with a shared channel we could not tell which
 * CQ to {@code ibv_ack_cq_events}, and acknowledging the wrong one makes {@code ibv_destroy_cq} wait
 * forever. Its native poll also cannot be interrupted, so {@link #wakeup()} could not cut a wait short.
 * So every CQ bound to this channel gets its own {@code IbvCompChannel} and a small daemon thread
 * ({@link DisniCompletionQueue}) that waits there, acknowledges each event on the right CQ at once, and
 * signals this gate. The cost is a thread hand-off on the event path only; busy polling is untouched.
 */
final class DisniCompletionChannel implements CompletionChannel
{
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition signalled = lock.newCondition();
    private int pendingEvents;
    private boolean wakeupRequested;
    private volatile boolean closed;

    /**
     * Called by a CQ's pump after it acknowledged {@code events} events.
     *
     * @param events number of CQ events.
     */
    void signal(final int events)
    {
        lock.lock();
        try
        {
            pendingEvents += events;
            signalled.signalAll();
        }
        finally
        {
            lock.unlock();
        }
    }

    @Override
    public int await(final long timeoutNanos) throws IOException
    {
        long remaining = timeoutNanos;
        lock.lock();
        try
        {
            while (true)
            {
                if (closed)
                {
                    throw new IOException("completion channel is closed");
                }
                if (pendingEvents > 0)
                {
                    final int events = pendingEvents;
                    pendingEvents = 0;
                    return events;
                }
                if (wakeupRequested)
                {
                    wakeupRequested = false;
                    return 0;
                }
                if (remaining <= 0)
                {
                    return 0;
                }
                remaining = signalled.awaitNanos(remaining);
            }
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            return 0;
        }
        finally
        {
            lock.unlock();
        }
    }

    @Override
    public void wakeup()
    {
        lock.lock();
        try
        {
            wakeupRequested = true;
            signalled.signalAll();
        }
        finally
        {
            lock.unlock();
        }
    }

    boolean isClosed()
    {
        return closed;
    }

    @Override
    public void close()
    {
        lock.lock();
        try
        {
            closed = true;
            signalled.signalAll();
        }
        finally
        {
            lock.unlock();
        }
    }

    @Override
    public String toString()
    {
        return "DisniCompletionChannel{closed=" + closed + '}';
    }
}
