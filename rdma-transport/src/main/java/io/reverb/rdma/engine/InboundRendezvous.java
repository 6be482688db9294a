package io.reverb.rdma.engine;

import org.agrona.collections.Int2ObjectHashMap;
import org.agrona.collections.LongArrayQueue;

/**
 * The receiver's side of rendezvous: RTS frames are answered strictly in arrival order, with CTS (a buffer
 * granted from the receive pool) or REFUSE (larger than this side accepts). While the pool is exhausted,
 * RTS queue up here, and a queued one holds later ones back; they are granted as buffers come back.
 *
 * <p>Poller thread only.
 */
final class InboundRendezvous
{
    /** Where the answers go: the connection queues them as control frames for its next batch. */
    interface Answers
    {
        void clearToSend(int id, long address, int rkey, int length);

        void refuse(int id, int limit);
    }

    private final BufferPool pool;
    private final int maxInboundMessageSize;
    private final ConnectionStats stats;
    private final Answers answers;
    private final Int2ObjectHashMap<BufferPool.Buffer> granted = new Int2ObjectHashMap<>();
    /** RTS waiting for a buffer, in arrival order: id in the high 32 bits, length in the low 32. */
    private final LongArrayQueue queued = new LongArrayQueue(8, Long.MIN_VALUE);

    InboundRendezvous(
        final BufferPool pool, final int maxInboundMessageSize, final ConnectionStats stats, final Answers answers)
    {
        this.pool = pool;
        this.maxInboundMessageSize = maxInboundMessageSize;
        this.stats = stats;
        this.answers = answers;
    }

    /** An RTS arrived: answer it now if nothing is queued before it and a buffer is free, else queue it. */
    void onRequestToSend(final int id, final int length)
    {
        // A length is never 0 here (RTS announce messages over the eager limit): never the queue's null value.
        queued.offerLong(((long)id << 32) | (length & 0xFFFF_FFFFL));
        grantQueued();
        if (!queued.isEmpty())
        {
            stats.rendezvousQueued++; // this one waits for a buffer (its own or an earlier one's)
        }
    }

    /** Answers queued RTS in order for as long as buffers are free. */
    void grantQueued()
    {
        while (!queued.isEmpty())
        {
            final long next = queued.peekLong();
            final int id = (int)(next >>> 32);
            final int length = (int)next;
            if (length > maxInboundMessageSize)
            {
                stats.rendezvousRefused++;
                answers.refuse(id, maxInboundMessageSize);
            }
            else if (!grant(id, length))
            {
                return;
            }
            queued.pollLong();
        }
    }

    private boolean grant(final int id, final int length)
    {
        final BufferPool.Buffer buffer = pool.acquire(length);
        if (buffer == null)
        {
            return false;
        }
        buffer.id = id;
        buffer.length = length;
        granted.put(id, buffer);
        answers.clearToSend(id, buffer.region.address(), buffer.region.rkey(), buffer.sizeClass);
        return true;
    }

    /** @return the buffer the data of rendezvous {@code id} was written into, or null if none was granted. */
    BufferPool.Buffer take(final int id)
    {
        return granted.remove(id);
    }

    /** Returns a delivered buffer that the handler did not retain. */
    void release(final BufferPool.Buffer buffer)
    {
        pool.release(buffer);
    }

    /** @return RTS waiting for a buffer. */
    int queued()
    {
        return queued.size();
    }

    /** @return buffers granted whose data has not arrived. */
    int granted()
    {
        return granted.size();
    }

    boolean isEmpty()
    {
        return granted.isEmpty();
    }

    /** Teardown: returns every granted buffer and forgets queued RTS. */
    void releaseAll()
    {
        granted.values().forEach(pool::release);
        granted.clear();
        queued.clear();
    }
}
