package io.reverb.rdma.provider.shm;

import io.reverb.rdma.provider.base.AbstractCompletionQueue;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import java.nio.MappedByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A completion queue in a mapped file ({@link CqRing}); peers map the same file to deliver receive
 * completions. Completions of local QPs are written through this object.
 *
 * <p>Closing unmaps the file at once (a closed connection must not hold mappings and tmpfs pages until a
 * GC: {@code vm.max_map_count} would cap the connections of a server). No thread can touch the mapping
 * afterwards: every access ({@link #offer}, {@link #poll}, {@link #requestNotify}) enters a guard that
 * {@link #close()} waits to drain after marking the CQ closed, and an access that enters after that
 * sees it closed and does nothing.
 *
 * <p>A CQ that is no QP's receive CQ (a send CQ: over shm a SEND completes at post, so it holds only signaled and
 * failed work) gets completions from this JVM only, all through {@link #offer}, which counts them: {@link #poll} does
 * not enter the guard (two atomic instructions) while nothing was offered since its last poll emptied the ring.
 *
 * <p>Receive completions of QPs in inbox mode ({@link RecvRing}) are not in the ring: {@link #poll} reads them from
 * those QPs' inboxes after the ring's entries. Such a QP's receive queue mapping stays readable until this CQ's
 * poller has flushed its last receive after the QP closed (the poller then unmaps it), or until this CQ closes.
 */
final class ShmCompletionQueue extends AbstractCompletionQueue<ShmVerbsContext, ShmCompletionChannel>
{
    private final int id;
    private final Path file;
    private final MappedByteBuffer mapping;
    private final CqRing ring;
    private volatile boolean closed;
    /** Accesses in progress; see the class comment. */
    private final AtomicInteger users = new AtomicInteger();
    /**
     * Whether the event of the current arming was raised, by the channel's waiter noticing the doorbell socket or by
     * the event thread reading the doorbell: whichever comes first raises it, the other does not.
     */
    private final AtomicBoolean raised = new AtomicBoolean();
    private static final ShmQueuePair[] NO_QPS = new ShmQueuePair[0];
    /** QPs in inbox mode whose receive CQ this is (copy on write, under this). */
    private volatile ShmQueuePair[] inboxes = NO_QPS;
    /** The inbox {@link #poll} starts with, so that no QP's inbox starves the others' (poller only). */
    private int nextInbox;
    /** Doorbells the event thread read for this CQ (written by the event thread only). */
    private volatile long doorbellsRead;
    /** Some QP receives into this CQ: a peer writes completions into its ring, and inboxes may attach. */
    private volatile boolean receives;
    /** Completions {@link #offer}ed here, counted after each is in the ring. */
    private final AtomicLong offers = new AtomicLong();
    /** {@link #offers} as read before a poll that left the ring empty: none is waiting while they are equal. */
    private volatile long offersPolled;

    ShmCompletionQueue(
        final ShmVerbsContext context,
        final int id,
        final Path file,
        final MappedByteBuffer mapping,
        final int capacity,
        final ShmCompletionChannel channel)
    {
        super(context, capacity, channel);
        this.id = id;
        this.file = file;
        this.mapping = mapping;
        final UnsafeBuffer buffer = new UnsafeBuffer(mapping);
        CqRing.LAYOUT.initialise(buffer, capacity);
        this.ring = new CqRing(buffer);
    }

    int id()
    {
        return id;
    }

    Path file()
    {
        return file;
    }

    ShmVerbsContext shmContext()
    {
        return context;
    }

    /**
     * Publishes a completion produced in this JVM, signalling the channel if the CQ was armed.
     *
     * @return false if the CQ overflowed (the completion is lost; the caller's QP must go to ERROR).
     */
    boolean offer(
        final long wrId, final WcStatus status, final WcOpcode opcode, final int byteLen, final int imm, final int flags,
        final int qpNum)
    {
        if (!enter())
        {
            return false;
        }
        final int result;
        try
        {
            result = ring.offer(wrId, status, opcode, byteLen, imm, flags, qpNum, false, 0);
        }
        finally
        {
            users.decrementAndGet();
        }
        offers.incrementAndGet(); // after the entry is in the ring: a poll that reads this count finds the entry
        if (result == CqRing.OFFERED_RING)
        {
            signal();
        }
        return result != CqRing.OVERFLOWED;
    }

    /** @return the channel this CQ raises events on, or null */
    ShmCompletionChannel shmChannel()
    {
        return channel;
    }

    /** The channel's waiter saw this CQ's doorbell socket ready (waiter thread, inside its select). */
    void noticedByWaiter()
    {
        if (raised.compareAndSet(false, true))
        {
            channel.doorbellNoticed();
        }
    }

    /**
     * The event thread read a doorbell for this CQ. Where the channel's waiter watches the doorbell sockets, it may
     * have raised this arming's event already; then it is not raised again (an extra event would end the waiter's
     * next wait at once, for nothing). A doorbell read while the CQ is armed again belongs to an earlier arming (its
     * owner re-armed after the completion that rang, and re-polls after arming). An event raised for an arming by an
     * earlier arming's doorbell is harmless: it wakes the waiter, which polls, re-arms and re-polls.
     */
    void doorbell()
    {
        doorbellsRead++; // single writer
        if (channel != null && channel.watchesDoorbells() && enter())
        {
            final boolean armed;
            try
            {
                armed = ring.isArmed();
            }
            finally
            {
                users.decrementAndGet();
            }
            if (armed || !raised.compareAndSet(false, true))
            {
                return;
            }
        }
        signal();
    }

    /** @return doorbells the event thread read for this CQ */
    long doorbellsRead()
    {
        return doorbellsRead;
    }

    /** Raises an event on the channel (a completion of this JVM found the CQ armed). */
    void signal()
    {
        if (channel != null)
        {
            channel.signal();
        }
    }

    /** @return true if the mapping may be touched until {@code users.decrementAndGet()}. */
    private boolean enter()
    {
        users.incrementAndGet();
        if (closed)
        {
            users.decrementAndGet();
            return false;
        }
        return true;
    }

    /** A QP receives into this CQ (see the class comment): from now on every poll looks at the ring. */
    void receivesCompletions()
    {
        receives = true;
    }

    @Override
    public int poll(final WorkCompletions completions)
    {
        final boolean localOnly = !receives;
        final long offered = localOnly ? offers.get() : 0;
        if (localOnly && offered == offersPolled)
        {
            completions.count(0); // every completion offered so far was polled: the ring is empty
            return 0;
        }
        if (!enter())
        {
            completions.count(0);
            return 0;
        }
        try
        {
            int count = ring.poll(completions, 0);
            if (localOnly && count < completions.capacity())
            {
                offersPolled = offered; // the ring is empty of everything offered before `offered` was read
            }
            final ShmQueuePair[] qps = inboxes;
            final int n = qps.length;
            if (n > 0)
            {
                final int max = completions.capacity();
                int start = nextInbox;
                if (start >= n)
                {
                    start = 0;
                }
                for (int i = 0; i < n && count < max; i++)
                {
                    final int index = start + i < n ? start + i : start + i - n;
                    count += qps[index].pollInbox(completions, count);
                }
                nextInbox = start + 1;
            }
            completions.count(count);
            return count;
        }
        finally
        {
            users.decrementAndGet();
        }
    }

    /** A QP in inbox mode was connected: its receive completions are polled here from now on. */
    synchronized boolean attachInbox(final ShmQueuePair qp)
    {
        if (closed)
        {
            return false;
        }
        final ShmQueuePair[] old = inboxes;
        final ShmQueuePair[] grown = Arrays.copyOf(old, old.length + 1);
        grown[old.length] = qp;
        inboxes = grown;
        return true;
    }

    /** The poller found a closed QP's inbox finished (poller thread, inside {@link #poll}). */
    synchronized void detachInbox(final ShmQueuePair qp)
    {
        final ShmQueuePair[] old = inboxes;
        int at = -1;
        for (int i = 0; i < old.length; i++)
        {
            if (old[i] == qp)
            {
                at = i;
            }
        }
        if (at < 0)
        {
            return;
        }
        final ShmQueuePair[] shrunk = new ShmQueuePair[old.length - 1];
        System.arraycopy(old, 0, shrunk, 0, at);
        System.arraycopy(old, at + 1, shrunk, at, old.length - at - 1);
        inboxes = shrunk;
    }

    /** @return completions ever written to this CQ's shared ring (tests). */
    long ringTail()
    {
        return ring.tail();
    }

    @Override
    public void requestNotify(final boolean solicitedOnly)
    {
        if (enter())
        {
            try
            {
                raised.set(false); // a new arming, whose event is still to be raised
                ring.arm(solicitedOnly);
            }
            finally
            {
                users.decrementAndGet();
            }
        }
    }

    @Override
    public void close()
    {
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            closed = true;
        }
        context.removed(this);
        ShmFiles.deleteQuietly(file);
        context.fileRemoved(file);
        // Accesses that entered before `closed` was set finish first (they are short: no waiting inside).
        while (users.get() != 0)
        {
            Thread.onSpinWait();
        }
        ShmFiles.unmap(mapping);
        final ShmQueuePair[] qps;
        synchronized (this)
        {
            qps = inboxes;
            inboxes = NO_QPS;
        }
        for (final ShmQueuePair qp : qps)
        {
            qp.inboxDetached();
        }
    }

    @Override
    public String toString()
    {
        return "ShmCompletionQueue{id=" + id + ", capacity=" + ring.capacity() + '}';
    }
}
