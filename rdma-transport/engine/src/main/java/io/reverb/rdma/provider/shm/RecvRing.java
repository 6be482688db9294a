package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.ScatterGatherList;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A QP's posted receive queue in shared memory. The owner produces (ibv_post_recv, single producer
 * under the QP's receive lock); the peer's sender consumes. Consumers claim an entry with a CAS on
 * the head so that the owner can also claim entries when it flushes them after an error, without
 * a receive ever completing twice. The header also carries the QP's state as seen by the peer.
 *
 * <pre>
 *  0        4          8             64            128         132
 *  +--------+----------+-------------+-------------+-----------+----------+
 *  | magic  | capacity | head (CAS)  | tail        | state     |          |
 *  +--------+----------+-------------+-------------+-----------+----------+
 *  192: entries, 128 bytes each:
 *  +----------+-----------+-----+-------------------------------------------------+
 *  | wrId (8) | sgeCount  | pad | MAX_SGE x (address 8, length 4, lkey 4)          |
 *  +----------+-----------+-----+-------------------------------------------------+
 * </pre>
 */
final class RecvRing
{
    static final int MAGIC = 0x52565152; // "RVQR"
    static final int MAGIC_OFFSET = 0;
    static final int CAPACITY_OFFSET = 4;
    static final int HEAD_OFFSET = 8;
    static final int TAIL_OFFSET = 64;
    static final int STATE_OFFSET = 128;
    static final int ENTRIES_OFFSET = 192;
    /** 128 rather than 80: an entry with one SGE then sits in a single cache line. */
    static final int ENTRY_LENGTH = 128;
    /** The header: magic, capacity, where the entries start (files are checked against it). */
    static final RingLayout LAYOUT = new RingLayout(MAGIC, MAGIC_OFFSET, CAPACITY_OFFSET, ENTRIES_OFFSET, ENTRY_LENGTH);

    static final int WR_ID = 0;
    static final int SGE_COUNT = 8;
    static final int SGES = 16;
    static final int SGE_LENGTH = 16;

    /** Connected and usable. */
    static final int STATE_OK = 0;
    /** The owner's QP is in ERROR (or gone): peers must not consume its receives. */
    static final int STATE_ERROR = 1;

    private final UnsafeBuffer buffer;
    private final int capacity;
    private final int mask;
    /** Producer's last view of the head (only grows: a stale value is conservative). */
    private long headCache;
    /** Consumer's last view of the tail (only grows: a stale value is conservative). */
    private long tailCache;

    RecvRing(final UnsafeBuffer buffer)
    {
        this.buffer = buffer;
        this.capacity = LAYOUT.capacity(buffer);
        this.mask = capacity - 1;
    }

    int state()
    {
        return buffer.getIntVolatile(STATE_OFFSET);
    }

    void state(final int state)
    {
        buffer.putIntVolatile(STATE_OFFSET, state);
    }

    /**
     * Producer side (owner only).
     *
     * @return false if the queue is full.
     */
    boolean offer(final RecvRequest request)
    {
        final UnsafeBuffer buffer = this.buffer;
        final long tail = buffer.getLong(TAIL_OFFSET);
        if (tail - headCache >= capacity)
        {
            headCache = buffer.getLongVolatile(HEAD_OFFSET);
            if (tail - headCache >= capacity)
            {
                return false;
            }
        }
        final int offset = ENTRIES_OFFSET + (int)(tail & mask) * ENTRY_LENGTH;
        final int count = request.sgeCount();
        buffer.putLong(offset + WR_ID, request.wrId());
        buffer.putInt(offset + SGE_COUNT, count);
        for (int i = 0; i < count; i++)
        {
            final int sge = offset + SGES + i * SGE_LENGTH;
            buffer.putLong(sge, request.sgeAddress(i));
            buffer.putInt(sge + 8, request.sgeLength(i));
            buffer.putInt(sge + 12, request.sgeLkey(i));
        }
        buffer.putLongOrdered(TAIL_OFFSET, tail + 1);
        return true;
    }

    /**
     * Claims the oldest posted receive and copies it into {@code into} (any consumer).
     *
     * @param into scratch list receiving the SGEs.
     * @return the receive's wrId in {@code wrIdOut[0]}; true if one was claimed, false if none is posted.
     */
    boolean claim(final ScatterGatherList into, final long[] wrIdOut)
    {
        final UnsafeBuffer buffer = this.buffer;
        while (true)
        {
            final long head = buffer.getLongVolatile(HEAD_OFFSET);
            if (head >= tailCache)
            {
                tailCache = buffer.getLongVolatile(TAIL_OFFSET);
                if (head >= tailCache)
                {
                    return false;
                }
            }
            final int offset = ENTRIES_OFFSET + (int)(head & mask) * ENTRY_LENGTH;
            final long wrId = buffer.getLong(offset + WR_ID);
            int count = buffer.getInt(offset + SGE_COUNT);
            if (count < 0 || count > ScatterGatherList.MAX_SGE)
            {
                count = 0;
            }
            into.clearSge();
            for (int i = 0; i < count; i++)
            {
                final int sge = offset + SGES + i * SGE_LENGTH;
                into.addSge(buffer.getLong(sge), Math.max(0, buffer.getInt(sge + 8)), buffer.getInt(sge + 12));
            }
            // The entry is only trusted if nobody claimed it meanwhile: the producer cannot reuse the
            // slot before head passes it, so a successful CAS proves the read was consistent.
            if (buffer.compareAndSetLong(HEAD_OFFSET, head, head + 1))
            {
                wrIdOut[0] = wrId;
                return true;
            }
        }
    }

    /** @return receives posted and not yet claimed (a snapshot). */
    long outstanding()
    {
        return buffer.getLongVolatile(TAIL_OFFSET) - buffer.getLongVolatile(HEAD_OFFSET);
    }
}
