package io.reverb.rdma.provider.shm;

import io.reverb.rdma.provider.base.AbstractCompletionQueue;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import java.nio.MappedByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
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
     * The channel's waiter was woken by this CQ's doorbell socket since the CQ was last armed: the event thread's
     * reading of that doorbell is then old news ({@link #doorbell()}).
     */
    private volatile boolean noticed;
    /** Doorbells the event thread read for this CQ (written by the event thread only). */
    private volatile long doorbellsRead;

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
        noticed = true;
    }

    /**
     * The event thread read a doorbell for this CQ. Where the channel's waiter watches the doorbell sockets, it may
     * have been woken by this very doorbell already; then the event is not raised again (an extra event would end
     * the waiter's next wait at once, for nothing). It is old news if the CQ is armed again (its owner re-armed it
     * after the completion that rang, and re-polls after arming) or if the waiter was woken by the socket since the
     * last arming (it polls, and re-arms and re-polls, before it waits again). Otherwise it is raised as before.
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
            if (armed)
            {
                return;
            }
            if (noticed)
            {
                noticed = false;
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

    @Override
    public int poll(final WorkCompletions completions)
    {
        if (!enter())
        {
            completions.count(0);
            return 0;
        }
        try
        {
            return ring.poll(completions);
        }
        finally
        {
            users.decrementAndGet();
        }
    }

    @Override
    public void requestNotify(final boolean solicitedOnly)
    {
        if (enter())
        {
            try
            {
                noticed = false; // a new arming: a notice of the previous one's doorbell says nothing about this one
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
    }

    @Override
    public String toString()
    {
        return "ShmCompletionQueue{id=" + id + ", capacity=" + ring.capacity() + '}';
    }
}
