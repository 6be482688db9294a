package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A completion queue laid out in shared memory: a multi-producer, single-consumer ring of fixed-size
 * entries. Producers are the owner's QPs (send completions, flushes) and peers in any process
 * (receive completions), so they claim a slot with a compare-and-set on the tail counter, fill it and
 * publish it by writing the slot's sequence last (release). The single consumer (the owner's poller)
 * waits for the sequence it expects, reads the entry and advances the head.
 *
 * <pre>
 *  0                   64                 128                192        196         200
 *  +-------------------+------------------+------------------+----------+-----------+----------+
 *  | magic             | tail (claims)    | head (consumed)  | armed    | capacity  | overflow |
 *  +-------------------+------------------+------------------+----------+-----------+----------+
 *  256: entries, 32 bytes each:
 *  +----------+----------+----------+----------+----------+--------+--------+-------+
 *  | seq (8)  | wrId (8) | byteLen  | imm      | qpNum    | status | opcode | flags |
 *  +----------+----------+----------+----------+----------+--------+--------+-------+
 * </pre>
 *
 * An entry is valid when {@code seq == position + 1}; stale entries of the previous lap carry an
 * older sequence, so entries never need zeroing. {@code armed} is 0 (not armed), 1 (any completion)
 * or 2 (solicited only); the producer that disarms it with a CAS rings the doorbell.
 */
final class CqRing
{
    static final int MAGIC = 0x52565143; // "RVQC"
    static final int MAGIC_OFFSET = 0;
    static final int TAIL_OFFSET = 64;
    static final int HEAD_OFFSET = 128;
    static final int ARMED_OFFSET = 192;
    static final int CAPACITY_OFFSET = 196;
    static final int OVERFLOW_OFFSET = 200;
    static final int ENTRIES_OFFSET = 256;
    static final int ENTRY_LENGTH = 32;
    /** The header: magic, capacity, where the entries start (files are checked against it). */
    static final RingLayout LAYOUT = new RingLayout(MAGIC, MAGIC_OFFSET, CAPACITY_OFFSET, ENTRIES_OFFSET, ENTRY_LENGTH);

    static final int SEQ = 0;
    static final int WR_ID = 8;
    static final int BYTE_LEN = 16;
    static final int IMM = 20;
    static final int QP_NUM = 24;
    static final int STATUS = 28;
    static final int OPCODE = 29;
    static final int FLAGS = 30;

    static final int NOT_ARMED = 0;
    static final int ARMED_ANY = 1;
    static final int ARMED_SOLICITED = 2;

    /** Result of {@link #offer}: published, doorbell not needed. */
    static final int OFFERED = 0;
    /** Result of {@link #offer}: published and this producer disarmed the CQ, so it must ring the doorbell. */
    static final int OFFERED_RING = 1;
    /** Result of {@link #offer}: the ring stayed full; the completion was dropped and the overflow flag set. */
    static final int OVERFLOWED = -1;

    /**
     * How long a producer in another process waits for a full CQ to drain before declaring overflow
     * (its consumer is the peer's poller). A producer in the consumer's own process does not wait:
     * it may be the consumer itself, and ibverbs reports an overflowing CQ at once too.
     */
    static final long REMOTE_FULL_WAIT_NANOS = 1_000_000_000L;

    private final UnsafeBuffer buffer;
    /** The same memory for {@link #poll}'s accesses, without a bounds check on each ({@link RawMemory}). */
    private final RawMemory raw;
    private final int capacity;
    private final int mask;
    /**
     * This producer's last view of the consumer's head. The head only grows, so a stale value is
     * conservative; re-reading it only when the ring looks full keeps the producer off the consumer's
     * cache line. Racy updates from several local producers store some past head: still conservative.
     */
    private long headCache;

    CqRing(final UnsafeBuffer buffer)
    {
        this.buffer = buffer;
        this.raw = new RawMemory(buffer);
        this.capacity = LAYOUT.capacity(buffer);
        this.mask = capacity - 1;
    }

    int capacity()
    {
        return capacity;
    }

    /**
     * Publishes one completion. Allocation-free; safe from any thread of any process.
     *
     * @param solicited whether the completion was caused by a solicited SEND/WRITE_WITH_IMM.
     * @param fullWaitNanos how long to wait for a full ring to drain (0: overflow at once).
     * @return {@link #OFFERED}, {@link #OFFERED_RING} or {@link #OVERFLOWED}.
     */
    int offer(
        final long wrId, final WcStatus status, final WcOpcode opcode, final int byteLen, final int imm, final int flags,
        final int qpNum, final boolean solicited, final long fullWaitNanos)
    {
        final UnsafeBuffer buffer = this.buffer;
        long deadline = 0;
        long tail;
        while (true)
        {
            tail = buffer.getLongVolatile(TAIL_OFFSET);
            if (tail - headCache >= capacity)
            {
                headCache = buffer.getLongVolatile(HEAD_OFFSET);
            }
            if (tail - headCache >= capacity)
            {
                // Full: a CQ too small for its QPs. Give the poller a moment, then report overflow
                // (ibverbs raises IBV_EVENT_CQ_ERR; the caller moves its QP to ERROR).
                final long now = System.nanoTime();
                if (deadline == 0)
                {
                    deadline = now + fullWaitNanos;
                }
                if (now - deadline >= 0)
                {
                    buffer.putIntVolatile(OVERFLOW_OFFSET, 1);
                    return OVERFLOWED;
                }
                Thread.yield();
                continue;
            }
            if (buffer.compareAndSetLong(TAIL_OFFSET, tail, tail + 1))
            {
                break;
            }
        }

        final int offset = ENTRIES_OFFSET + (int)(tail & mask) * ENTRY_LENGTH;
        buffer.putLong(offset + WR_ID, wrId);
        buffer.putInt(offset + BYTE_LEN, byteLen);
        buffer.putInt(offset + IMM, imm);
        buffer.putInt(offset + QP_NUM, qpNum);
        buffer.putByte(offset + STATUS, (byte)status.value());
        buffer.putByte(offset + OPCODE, (byte)opcode.value());
        buffer.putByte(offset + FLAGS, (byte)flags);
        buffer.putLongVolatile(offset + SEQ, tail + 1);

        return disarm(solicited, status) ? OFFERED_RING : OFFERED;
    }

    /**
     * After a completion was published with a volatile store (here, or in an inbox slot the owner's poller reads
     * when it polls this CQ): disarms the CQ if the completion raises its event.
     *
     * @return true if this producer disarmed it and must ring the doorbell.
     */
    boolean disarm(final boolean solicited, final WcStatus status)
    {
        // Volatile publish before, volatile read of armed here; the consumer arms with a volatile
        // write and then re-polls: one of the two always sees the other, so no event is lost.
        // As in ibverbs, a solicited-only CQ also raises an event for a completion in error.
        final int armed = buffer.getIntVolatile(ARMED_OFFSET);
        return armed != NOT_ARMED && (armed == ARMED_ANY || solicited || status != WcStatus.SUCCESS) &&
            buffer.compareAndSetInt(ARMED_OFFSET, armed, NOT_ARMED);
    }

    /** @return completions ever claimed in this ring (tests: an inline receive writes none). */
    long tail()
    {
        return buffer.getLongVolatile(TAIL_OFFSET);
    }

    /**
     * Moves up to {@code completions.capacity()} entries into the flyweight (single consumer).
     *
     * @return number moved.
     */
    int poll(final WorkCompletions completions)
    {
        final int count = poll(completions, 0);
        completions.count(count);
        return count;
    }

    /**
     * Moves up to {@code completions.capacity() - from} entries into the flyweight from index {@code from} (single
     * consumer); the caller sets the count.
     *
     * @return number moved.
     */
    int poll(final WorkCompletions completions, final int from)
    {
        final RawMemory buffer = raw;
        final int max = completions.capacity() - from;
        long head = buffer.getLong(HEAD_OFFSET);
        int count = 0;
        while (count < max)
        {
            final int offset = ENTRIES_OFFSET + (int)(head & mask) * ENTRY_LENGTH;
            if (buffer.getLongVolatile(offset + SEQ) != head + 1)
            {
                break;
            }
            completions.set(
                from + count,
                buffer.getLong(offset + WR_ID),
                WcStatus.fromValue(buffer.getByte(offset + STATUS) & 0xFF),
                WcOpcode.fromValue(buffer.getByte(offset + OPCODE) & 0xFF),
                buffer.getInt(offset + BYTE_LEN),
                buffer.getInt(offset + IMM),
                buffer.getByte(offset + FLAGS) & 0xFF,
                buffer.getInt(offset + QP_NUM));
            head++;
            count++;
        }
        if (count > 0)
        {
            buffer.putLongOrdered(HEAD_OFFSET, head);
        }
        return count;
    }

    /** Arms the CQ (ibv_req_notify_cq). */
    void arm(final boolean solicitedOnly)
    {
        buffer.putIntVolatile(ARMED_OFFSET, solicitedOnly ? ARMED_SOLICITED : ARMED_ANY);
    }

    /** @return whether the CQ is armed (any or solicited only) */
    boolean isArmed()
    {
        return buffer.getIntVolatile(ARMED_OFFSET) != NOT_ARMED;
    }

    boolean hasOverflowed()
    {
        return buffer.getIntVolatile(OVERFLOW_OFFSET) != 0;
    }
}
