package io.reverb.rdma.provider.disni;

import io.reverb.rdma.verbs.CompletionChannel;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The SPI's completion channel for DiSNi: a Java-level gate that the event pumps of its native CQs signal.
 *
 * <p>Why not one {@code IbvCompChannel} shared by several CQs, as in C? DiSNi 2.1's {@code getCqEvent}
 * drops the CQ that {@code ibv_get_cq_event} returns, so with a shared channel we could not tell which
 * CQ to {@code ibv_ack_cq_events}, and acknowledging the wrong one makes {@code ibv_destroy_cq} wait
 * forever. Its native poll also cannot be interrupted, so {@link #wakeup()} could not cut a wait short.
 * So every native CQ has its own {@code IbvCompChannel} and a small daemon thread that waits there, acknowledges
 * each event on its CQ at once, and signals this gate. To keep those few, the CQs created with this channel share
 * its native CQs ({@link DisniSharedCompletionQueue}): one per direction ({@link DisniCqShare}), and another, twice
 * as large (up to {@value #MAX_SHARE_ENTRIES} entries), when one is full. A poller's thread, native CQ and fd count
 * then grows with the logarithm of its connections' CQ entries, not with its connections. The cost is a thread
 * hand-off on the event path only; busy polling is untouched.
 */
final class DisniCompletionChannel implements CompletionChannel
{
    /** Entries of a poller's first native CQ in each direction; each further one is twice as large. */
    static final int FIRST_SHARE_ENTRIES = 1024;
    /** The largest native CQ a share asks for (smaller than any RDMA NIC's {@code max_cqe} we know of but rxe's). */
    static final int MAX_SHARE_ENTRIES = 65536;

    private final ReentrantLock lock = new ReentrantLock();
    /** Guarded by itself: the native CQs the CQs of this channel share. */
    private final List<DisniCqShare> shares = new ArrayList<>();
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

    /**
     * The native CQ of one direction that {@code cq} shares: one with room for its capacity, or a new one.
     *
     * @param context the context of {@code cq}.
     * @param cq      the shared CQ, bound to this channel.
     * @param send    the direction.
     * @return the share, with {@code cq}'s capacity reserved.
     * @throws IOException if the device refuses a new native CQ, or this channel is closed.
     */
    DisniCqShare shareFor(final DisniVerbsContext context, final DisniSharedCompletionQueue cq, final boolean send)
        throws IOException
    {
        synchronized (shares)
        {
            if (closed)
            {
                throw new IOException("completion channel is closed");
            }
            int sameDirection = 0;
            for (final DisniCqShare share : shares)
            {
                if (share.isSend() == send)
                {
                    if (share.reserve(cq, cq.capacity()))
                    {
                        return share;
                    }
                    sameDirection++;
                }
            }
            int entries = Math.max(cq.capacity(), shareEntries(sameDirection));
            while (true)
            {
                try
                {
                    final DisniCqShare share = DisniCqShare.create(context, this, send, entries);
                    shares.add(share);
                    share.reserve(cq, cq.capacity());
                    return share;
                }
                catch (final IOException ex)
                {
                    // A device with a smaller max_cqe: ask for less, down to what this CQ needs.
                    if (entries <= cq.capacity())
                    {
                        throw ex;
                    }
                    entries = Math.max(cq.capacity(), entries / 2);
                }
            }
        }
    }

    /**
     * @param existing native CQs of that direction already full.
     * @return the entries of the next one.
     */
    static int shareEntries(final int existing)
    {
        return (int)Math.min(MAX_SHARE_ENTRIES, (long)FIRST_SHARE_ENTRIES << Math.min(existing, 16));
    }

    /** @return native CQs shared through this channel (for tests and diagnostics). */
    List<DisniCqShare> shares()
    {
        synchronized (shares)
        {
            return new ArrayList<>(shares);
        }
    }

    /**
     * Waits until every native CQ of this channel is destroyed (a pump in its native wait destroys its CQ when it
     * returns). For closing a whole context, not for a poller.
     *
     * @param timeoutMillis maximum wait per native CQ.
     */
    void awaitSharesDestroyed(final long timeoutMillis)
    {
        for (final DisniCqShare share : shares())
        {
            share.awaitDestroyed(timeoutMillis);
        }
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

    /**
     * Destroys the native CQs of this channel (closed first). By the context, after its QPs are gone: a native CQ
     * that a QP still uses cannot be destroyed.
     */
    void closeShares()
    {
        close();
        synchronized (shares)
        {
            for (final DisniCqShare share : shares)
            {
                share.close();
            }
        }
    }

    @Override
    public String toString()
    {
        return "DisniCompletionChannel{closed=" + closed + '}';
    }
}
