package io.reverb.rdma.provider.shm;

import org.agrona.BitUtil;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The header that both of shm's mapped rings ({@link CqRing}, {@link RecvRing}) start with: a magic number
 * written last when the ring is set up, and the capacity (a power of two) in entries of a fixed length that
 * start at a fixed offset. A peer's file is checked against it before it is used.
 */
final class RingLayout
{
    private final int magic;
    private final int magicOffset;
    private final int capacityOffset;
    private final int entriesOffset;
    private final int entryLength;

    RingLayout(final int magic, final int magicOffset, final int capacityOffset, final int entriesOffset, final int entryLength)
    {
        this.magic = magic;
        this.magicOffset = magicOffset;
        this.capacityOffset = capacityOffset;
        this.entriesOffset = entriesOffset;
        this.entryLength = entryLength;
    }

    /** @return bytes needed for a ring of {@code capacity} (a power of two) entries. */
    int fileLength(final int capacity)
    {
        final long length = entriesOffset + (long)capacity * entryLength;
        if (length > Integer.MAX_VALUE)
        {
            throw new IllegalArgumentException("ring of " + capacity + " entries is larger than 2 GiB");
        }
        return (int)length;
    }

    /** Writes the header of a fresh (zeroed) ring; the magic last. */
    void initialise(final UnsafeBuffer buffer, final int capacity)
    {
        buffer.putInt(capacityOffset, capacity);
        buffer.putIntVolatile(magicOffset, magic);
    }

    /**
     * @param buffer a mapped file, possibly written by a peer.
     * @return true if it holds a set-up ring whose capacity is a positive power of two whose entries fit in it.
     */
    boolean isValid(final UnsafeBuffer buffer)
    {
        if (buffer.capacity() < entriesOffset || buffer.getIntVolatile(magicOffset) != magic)
        {
            return false;
        }
        final int capacity = buffer.getInt(capacityOffset);
        return capacity > 0 && BitUtil.isPowerOfTwo(capacity) &&
            buffer.capacity() >= entriesOffset + (long)capacity * entryLength;
    }

    /** @return the capacity written by {@link #initialise}. */
    int capacity(final UnsafeBuffer buffer)
    {
        return buffer.getInt(capacityOffset);
    }
}
