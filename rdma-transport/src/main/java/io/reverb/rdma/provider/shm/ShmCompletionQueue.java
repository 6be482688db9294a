package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.CompletionChannel;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import java.nio.MappedByteBuffer;
import java.nio.file.Path;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A completion queue in a mapped file ({@link CqRing}); peers map the same file to deliver receive
 * completions. Completions of local QPs are written through this object.
 */
final class ShmCompletionQueue implements CompletionQueue
{
    private final ShmVerbsContext context;
    private final int id;
    private final Path file;
    private final MappedByteBuffer mapping;
    private final CqRing ring;
    private final ShmCompletionChannel channel;
    private volatile boolean closed;

    ShmCompletionQueue(
        final ShmVerbsContext context,
        final int id,
        final Path file,
        final MappedByteBuffer mapping,
        final int capacity,
        final ShmCompletionChannel channel)
    {
        this.context = context;
        this.id = id;
        this.file = file;
        this.mapping = mapping;
        final UnsafeBuffer buffer = new UnsafeBuffer(mapping);
        CqRing.initialise(buffer, capacity);
        this.ring = new CqRing(buffer);
        this.channel = channel;
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
        final long wrId,
        final WcStatus status,
        final WcOpcode opcode,
        final int byteLen,
        final int imm,
        final int flags,
        final int qpNum)
    {
        if (closed)
        {
            return false;
        }
        final int result = ring.offer(wrId, status, opcode, byteLen, imm, flags, qpNum, false, 0);
        if (result == CqRing.OFFERED_RING)
        {
            signal();
        }
        return result != CqRing.OVERFLOWED;
    }

    /** Raises an event on the channel (a doorbell for this CQ arrived). */
    void signal()
    {
        if (channel != null)
        {
            channel.signal();
        }
    }

    @Override
    public int capacity()
    {
        return ring.capacity();
    }

    @Override
    public CompletionChannel channel()
    {
        return channel;
    }

    @Override
    public int poll(final WorkCompletions completions)
    {
        if (closed)
        {
            completions.count(0);
            return 0;
        }
        return ring.poll(completions);
    }

    @Override
    public void requestNotify(final boolean solicitedOnly)
    {
        if (!closed)
        {
            ring.arm(solicitedOnly);
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
        // Not unmapped: a local QP or the event thread may be completing into it right now; the
        // mapping goes with the object. Close QPs before their CQs, as ibverbs requires.
    }

    @Override
    public String toString()
    {
        return "ShmCompletionQueue{id=" + id + ", capacity=" + ring.capacity() + '}';
    }
}
