package io.reverb.rdma.engine;

import org.agrona.collections.Int2ObjectHashMap;

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
    private int[] queuedIds = new int[8];
    private int[] queuedLengths = new int[8];
    private int queuedHead;
    private int queuedCount;

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
        if (queuedCount == queuedIds.length)
        {
            grow();
        }
        final int q = (queuedHead + queuedCount) % queuedIds.length;
        queuedIds[q] = id;
        queuedLengths[q] = length;
        queuedCount++;
        grantQueued();
        if (queuedCount > 0)
        {
            stats.rendezvousQueued++; // this one waits for a buffer (its own or an earlier one's)
        }
    }

    /** Answers queued RTS in order for as long as buffers are free. */
    void grantQueued()
    {
        while (queuedCount > 0)
        {
            final int q = queuedHead;
            final int id = queuedIds[q];
            final int length = queuedLengths[q];
            if (length > maxInboundMessageSize)
            {
                stats.rendezvousRefused++;
                answers.refuse(id, maxInboundMessageSize);
            }
            else if (!grant(id, length))
            {
                return;
            }
            queuedHead = (queuedHead + 1) % queuedIds.length;
            queuedCount--;
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
        return queuedCount;
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
        queuedCount = 0;
    }

    private void grow()
    {
        final int[] ids = new int[queuedIds.length * 2];
        final int[] lengths = new int[ids.length];
        for (int i = 0; i < queuedCount; i++)
        {
            ids[i] = queuedIds[(queuedHead + i) % queuedIds.length];
            lengths[i] = queuedLengths[(queuedHead + i) % queuedIds.length];
        }
        queuedIds = ids;
        queuedLengths = lengths;
        queuedHead = 0;
    }
}
