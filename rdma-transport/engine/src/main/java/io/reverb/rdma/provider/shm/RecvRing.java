package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.ScatterGatherList;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A QP's posted receive queue in shared memory. The owner produces (ibv_post_recv, single producer
 * under the QP's receive lock); the peer's sender consumes. In classic mode consumers claim an entry
 * with a CAS on the head so that the owner can also claim entries when it flushes them after an error,
 * without a receive ever completing twice (inbox mode: see below). The header also carries the QP's
 * state as seen by the peer.
 *
 * <p>In {@link #MODE_INBOX} (the owner's {@code VerbsConfig#shmInlineReceive()}), the receive completions of this QP
 * do not go through its receive CQ's shared ring: for each claimed receive the sender fills the slot of the same
 * index in the inbox (after the entries; the sender counts the receives it consumes instead of claiming them on the
 * head, see {@link #posted}), with the message's bytes in it when the message is at most
 * {@link #INLINE_MAX} bytes and fits every posted receive ({@link #INLINE_FLOOR_OFFSET}), so the sender reads neither
 * the posted receive nor a CQ's tail; the owner's poller reads the slot, copies the bytes into the posted buffer
 * and frees the entry ({@link #CONSUMED_OFFSET}). Larger messages are copied by the sender into the posted buffer
 * as before and their slot only says so ({@link #KIND_PLACED}), so completions stay in message order. An inbox slot
 * cannot be overwritten before it is read: a sender claims index {@code i} only below the tail, and the owner posts
 * index {@code i + capacity} only once its poller consumed index {@code i}. After an error the owner's poller
 * flushes the receives from the sender's final count ({@link #SENDER_FINAL_OFFSET}, written when the sender's QP goes
 * down, which it does when it sees the owner's EOF), or from where it stands once the sender's process is gone.
 *
 * <pre>
 *  0        4          8             64            128     132    136           144           192        256
 *  +--------+----------+-------------+-------------+-------+------+-------------+-------------+----------+
 *  | magic  | capacity | head (CAS)  | tail        | state | mode | inlineFloor | senderFinal | consumed |
 *  +--------+----------+-------------+-------------+-------+------+-------------+-------------+----------+
 *  256: entries, 128 bytes each:
 *  +----------+-----------+-----+-------------------------------------------------+
 *  | wrId (8) | sgeCount  | pad | MAX_SGE x (address 8, length 4, lkey 4)          |
 *  +----------+-----------+-----+-------------------------------------------------+
 *  256 + capacity * 128: inbox slots, 256 bytes each; the header and the data share lines as in Aeron's log
 *  buffer (a message of up to 48 bytes in one cache line, 112 bytes in two):
 *  +----------------------------------+----------+---------+-------------------------+
 *  | info (16 bits) | seq (48 bits)   | byteLen  | imm     | data (INLINE_MAX = 240) |
 *  +----------------------------------+----------+---------+-------------------------+
 *  info: status (bits 0-4), kind (5-6), RECV_RDMA_WITH_IMM (7), WC_WITH_IMM (8); the other bits are 0.
 * </pre>
 */
final class RecvRing
{
    static final int MAGIC = 0x52565132; // "RVQ2": the layout with an inbox
    static final int MAGIC_OFFSET = 0;
    static final int CAPACITY_OFFSET = 4;
    static final int HEAD_OFFSET = 8;
    static final int TAIL_OFFSET = 64;
    static final int STATE_OFFSET = 128;
    /** {@link #MODE_CLASSIC} or {@link #MODE_INBOX}; written once before the QP is described to its peer. */
    static final int MODE_OFFSET = 132;
    /**
     * Inbox mode: a message of at most this many bytes (and at most {@link #INLINE_MAX}) fits every receive posted
     * so far, so it may be sent inline; -1 when a posted receive's SGEs were invalid. It only decreases.
     */
    static final int INLINE_FLOOR_OFFSET = 136;
    /** Inbox mode: 1 + the number of receives the sender consumed, written once when it stops; 0 before. */
    static final int SENDER_FINAL_OFFSET = 144;
    /** Inbox mode: receives the owner's poller has consumed (it alone writes it; the owner's producer reads it). */
    static final int CONSUMED_OFFSET = 192;
    static final int ENTRIES_OFFSET = 256;
    /** 128 rather than 80: an entry with one SGE then sits in a single cache line. */
    static final int ENTRY_LENGTH = 128;
    /** An inbox slot: four cache lines; the reader touches only those the message fills. */
    static final int SLOT_LENGTH = 256;
    /**
     * The header: magic, capacity, where the entries start (files are checked against it); each index holds an
     * entry and, after all entries, an inbox slot.
     */
    static final RingLayout LAYOUT =
        new RingLayout(MAGIC, MAGIC_OFFSET, CAPACITY_OFFSET, ENTRIES_OFFSET, ENTRY_LENGTH + SLOT_LENGTH);

    static final int MODE_CLASSIC = 0;
    static final int MODE_INBOX = 1;

    /** The word written last: the sequence (index + 1, low 48 bits) and the info bits (high 16). */
    static final int SLOT_WORD = 0;
    static final int SLOT_BYTE_LEN = 8;
    static final int SLOT_IMM = 12;
    static final int SLOT_DATA = 16;
    static final long SEQ_MASK = (1L << 48) - 1;
    static final int INFO_STATUS_MASK = 0x1F;
    static final int INFO_KIND_SHIFT = 5;
    static final int INFO_RDMA_WITH_IMM = 1 << 7;
    static final int INFO_WITH_IMM = 1 << 8;
    /** Bits a valid info leaves 0. */
    static final int INFO_UNUSED = ~((1 << 9) - 1) & 0xFFFF;
    /** A cache line: a slot is {@code SLOT_LENGTH / LINE} of them. */
    static final int LINE = 64;
    /** Largest message whose slot fills one cache line. */
    static final int ONE_LINE_MAX = LINE - SLOT_DATA;
    /** Largest message carried inside an inbox slot. */
    static final int INLINE_MAX = SLOT_LENGTH - SLOT_DATA;
    /** Slot kind: the bytes are in the slot; the owner copies them into the posted receive. */
    static final int KIND_INLINE = 1;
    /** Slot kind: the sender placed the bytes (if any) in the posted receive, or the slot reports an error. */
    static final int KIND_PLACED = 2;

    static final int WR_ID = 0;
    static final int SGE_COUNT = 8;
    static final int SGES = 16;
    static final int SGE_LENGTH = 16;

    /** Connected and usable. */
    static final int STATE_OK = 0;
    /** The owner's QP is in ERROR (or gone): peers must not consume its receives. */
    static final int STATE_ERROR = 1;

    private final UnsafeBuffer buffer;
    /** The same memory for the hot path's accesses, without a bounds check on each ({@link RawMemory}). */
    private final RawMemory raw;
    private final int capacity;
    private final int mask;
    private final int inboxOffset;
    /** Owner's poller: the sum of what {@link #slotPublished} read from unpublished slots' other lines (unused). */
    private long otherLinesSeen;
    /** Producer's last view of the head (only grows: a stale value is conservative). */
    private long headCache;
    /** Consumer's last view of the tail (only grows: a stale value is conservative). */
    private long tailCache;
    /** Sender's view of {@link #INLINE_FLOOR_OFFSET}, read after {@link #tailCache} (only decreases: see there). */
    private int floorCache = -1;

    RecvRing(final UnsafeBuffer buffer)
    {
        this.buffer = buffer;
        this.raw = new RawMemory(buffer);
        this.capacity = LAYOUT.capacity(buffer);
        this.mask = capacity - 1;
        this.inboxOffset = ENTRIES_OFFSET + capacity * ENTRY_LENGTH;
    }

    int capacity()
    {
        return capacity;
    }

    UnsafeBuffer buffer()
    {
        return buffer;
    }

    /** Owner, before the QP is described to its peer: makes this an inbox-mode queue. */
    void enableInbox()
    {
        buffer.putInt(INLINE_FLOOR_OFFSET, INLINE_MAX);
        buffer.putIntVolatile(MODE_OFFSET, MODE_INBOX);
    }

    boolean isInbox()
    {
        return buffer.getIntVolatile(MODE_OFFSET) == MODE_INBOX;
    }

    /** Owner, before publishing a receive (so a sender that sees it also sees this): see {@link #INLINE_FLOOR_OFFSET}. */
    void lowerInlineFloor(final int fits)
    {
        if (fits < buffer.getInt(INLINE_FLOOR_OFFSET))
        {
            buffer.putIntVolatile(INLINE_FLOOR_OFFSET, Math.max(-1, fits));
        }
    }

    /** Sender: read after the tail (see {@link #postedBeyond}); a message this long fits every receive below it. */
    int inlineFloor()
    {
        return raw.getIntVolatile(INLINE_FLOOR_OFFSET);
    }

    /** @return the offset in {@link #buffer()} of the inbox slot of receive {@code index}. */
    int slotOffset(final long index)
    {
        return inboxOffset + (int)(index & mask) * SLOT_LENGTH;
    }

    /** @return the offset in {@link #buffer()} of the entry of receive {@code index}. */
    int entryOffset(final long index)
    {
        return ENTRIES_OFFSET + (int)(index & mask) * ENTRY_LENGTH;
    }

    /**
     * Sender: fills the slot's header and publishes it (the data, if inline, was written before). The volatile store
     * orders it before the caller's read of the receive CQ's arming (see {@link CqRing#offer}).
     */
    void publishSlot(final long index, final int byteLen, final int imm, final int info)
    {
        final int offset = slotOffset(index);
        raw.putInt(offset + SLOT_BYTE_LEN, byteLen);
        raw.putInt(offset + SLOT_IMM, imm);
        raw.putLongVolatile(offset + SLOT_WORD, ((long)info << 48) | ((index + 1) & SEQ_MASK));
    }

    /**
     * @param status a status of at most 31.
     * @param rdmaWithImm whether the receive was consumed by an RDMA WRITE with immediate (else by a SEND).
     * @return the info bits of a slot.
     */
    static int info(final int status, final boolean rdmaWithImm, final boolean withImm, final int kind)
    {
        return (status & INFO_STATUS_MASK) | (kind << INFO_KIND_SHIFT) | (rdmaWithImm ? INFO_RDMA_WITH_IMM : 0) |
            (withImm ? INFO_WITH_IMM : 0);
    }

    /**
     * Owner's poller: whether the slot of receive {@code index} was published. While it was not, the slot's other
     * cache lines are read too (and the values dropped): a message of more than {@link #ONE_LINE_MAX} bytes fills
     * them, and its sender writes them before the first line (the data, then the header). A poller that watched the
     * first line alone fetched the others only after seeing it published, one more core-to-core transfer in series on
     * every such message; watching them all, the transfers start together. Lines the sender does not write stay in
     * this core's cache: loads that hit. Measured per hop from seeing the slot to the completion written, BUSY, this
     * project's 2-vCPU VM (benchmarks/results/20261206-0530-hop): about 80 ns less for the floor's 64 B echo (two
     * lines), about 90 ns less for a {@code shm://} 64 B unary call (three lines), for which reading the second line
     * alone changed nothing.
     */
    boolean slotPublished(final long index)
    {
        final int offset = slotOffset(index);
        if ((raw.getLongVolatile(offset + SLOT_WORD) & SEQ_MASK) == ((index + 1) & SEQ_MASK))
        {
            return true;
        }
        // kept in a field, so that the loads are not compiled away
        otherLinesSeen += raw.getLong(offset + LINE) + raw.getLong(offset + 2 * LINE) +
            raw.getLong(offset + 3 * LINE);
        return false;
    }

    /** Owner's poller: the byte length a published slot says (the peer wrote it: unchecked). */
    int slotByteLen(final long index)
    {
        return raw.getInt(slotOffset(index) + SLOT_BYTE_LEN);
    }

    /** Owner's poller: the immediate data of a published slot. */
    int slotImm(final long index)
    {
        return raw.getInt(slotOffset(index) + SLOT_IMM);
    }

    /** Owner's poller: the info bits of a published slot. */
    int slotInfo(final long index)
    {
        return (int)(raw.getLong(slotOffset(index) + SLOT_WORD) >>> 48);
    }

    /** Owner's poller: receive {@code index} is done; its entry and slot may be reused. */
    void consumed(final long index)
    {
        raw.putLongOrdered(CONSUMED_OFFSET, index + 1);
    }

    /** @return the head: receives claimed so far in classic mode (tests: inbox mode leaves it alone). */
    long head()
    {
        return buffer.getLongVolatile(HEAD_OFFSET);
    }

    /** @return the tail: receives posted so far. */
    long tail()
    {
        return buffer.getLongVolatile(TAIL_OFFSET);
    }

    /**
     * Sender, inbox mode: whether receive {@code next} is posted. The sender alone consumes an inbox-mode queue's
     * receives, in order, so it claims one by counting (no write to a shared word, no CAS); the owner flushes only
     * what the sender's {@link #finishSending final count} leaves, or everything once the sender's process is gone.
     */
    boolean posted(final long next)
    {
        if (next >= tailCache)
        {
            tailCache = raw.getLongVolatile(TAIL_OFFSET);
            floorCache = inlineFloor();
        }
        return next < tailCache;
    }

    /**
     * Sender, inbox mode, when its QP goes down (no post in progress): it will publish no slot from {@code next} on.
     */
    void finishSending(final long next)
    {
        buffer.putLongVolatile(SENDER_FINAL_OFFSET, next + 1);
    }

    /** Owner's poller: the count {@link #finishSending} wrote, or -1 while the sender may still publish. */
    long senderFinal()
    {
        return buffer.getLongVolatile(SENDER_FINAL_OFFSET) - 1;
    }

    /**
     * Sender: whether a message of {@code length} bytes may go inline, judged by the floor read with the tail that
     * admitted the receives it will claim (a floor read later can only be lower: conservative).
     */
    boolean fitsInline(final int length)
    {
        return length <= floorCache && length <= INLINE_MAX;
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
    boolean offer(final RecvRequest request, final boolean inbox)
    {
        final RawMemory buffer = raw;
        final long tail = buffer.getLong(TAIL_OFFSET);
        if (tail - headCache >= capacity)
        {
            // In inbox mode an entry is free once the owner's poller has read it, not when a sender claimed it.
            headCache = buffer.getLongVolatile(inbox ? CONSUMED_OFFSET : HEAD_OFFSET);
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
        return claimAt(into, wrIdOut) >= 0;
    }

    /**
     * As {@link #claim}, returning the receive's index.
     *
     * @return the index claimed, or -1 if none is posted.
     */
    long claimAt(final ScatterGatherList into, final long[] wrIdOut)
    {
        final UnsafeBuffer buffer = this.buffer;
        while (true)
        {
            final long head = buffer.getLongVolatile(HEAD_OFFSET);
            if (head >= tailCache)
            {
                tailCache = buffer.getLongVolatile(TAIL_OFFSET);
                floorCache = inlineFloor();
                if (head >= tailCache)
                {
                    return -1;
                }
            }
            final long wrId = readEntry(head, into);
            // The entry is only trusted if nobody claimed it meanwhile: the producer cannot reuse the
            // slot before head passes it, so a successful CAS proves the read was consistent.
            if (buffer.compareAndSetLong(HEAD_OFFSET, head, head + 1))
            {
                wrIdOut[0] = wrId;
                return head;
            }
        }
    }

    /**
     * Reads the entry of receive {@code index} (which the caller claimed, or owns) into {@code into}; a malformed
     * SGE count (the peer's file) reads as no SGEs, and negative lengths as 0.
     *
     * @return its wrId.
     */
    long readEntry(final long index, final ScatterGatherList into)
    {
        final int offset = entryOffset(index);
        int count = raw.getInt(offset + SGE_COUNT);
        if (count < 0 || count > ScatterGatherList.MAX_SGE)
        {
            count = 0;
        }
        into.clearSge();
        for (int i = 0; i < count; i++)
        {
            final int sge = offset + SGES + i * SGE_LENGTH;
            into.addSge(raw.getLong(sge), Math.max(0, raw.getInt(sge + 8)), raw.getInt(sge + 12));
        }
        return raw.getLong(offset + WR_ID);
    }

    /** @return receives posted and not yet claimed (a snapshot). */
    long outstanding()
    {
        return buffer.getLongVolatile(TAIL_OFFSET) - buffer.getLongVolatile(HEAD_OFFSET);
    }
}
