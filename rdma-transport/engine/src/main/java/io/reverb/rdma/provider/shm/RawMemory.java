package io.reverb.rdma.provider.shm;

import org.agrona.UnsafeApi;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The accesses of a ring's hot path to its mapped file, without {@link UnsafeBuffer}'s bounds check on each one. A
 * ring computes every offset it passes here from its own capacity, checked against the file's length when it was
 * mapped ({@link RingLayout}), and a slot or entry index masked by that capacity: no offset comes from a peer. The
 * checks still run where assertions are enabled (the tests). Measured with {@code bin/reverb-bench software}: the
 * bounds checks of the rings and the engine's buffers were about a tenth of a round trip's software
 * (benchmarks/RESULTS.md, "Software per hop").
 *
 * <p>Only valid while the mapping is: the rings' owners keep their own guards (the CQ's access guard, the QP's
 * locks), as they do for the {@link UnsafeBuffer} this wraps.
 */
final class RawMemory
{
    private final long address;
    private final int length;

    /** @param buffer a buffer over off-heap memory (a mapped file). */
    RawMemory(final UnsafeBuffer buffer)
    {
        if (buffer.byteArray() != null)
        {
            throw new IllegalArgumentException("not off-heap memory");
        }
        this.address = buffer.addressOffset();
        this.length = buffer.capacity();
    }

    private long at(final int offset, final int size)
    {
        assert offset >= 0 && offset <= length - size : "offset " + offset + " (+" + size + ") outside 0.." + length;
        return address + offset;
    }

    byte getByte(final int offset)
    {
        return UnsafeApi.getByte(null, at(offset, Byte.BYTES));
    }

    int getInt(final int offset)
    {
        return UnsafeApi.getInt(null, at(offset, Integer.BYTES));
    }

    int getIntVolatile(final int offset)
    {
        return UnsafeApi.getIntVolatile(null, at(offset, Integer.BYTES));
    }

    long getLong(final int offset)
    {
        return UnsafeApi.getLong(null, at(offset, Long.BYTES));
    }

    long getLongVolatile(final int offset)
    {
        return UnsafeApi.getLongVolatile(null, at(offset, Long.BYTES));
    }

    void putInt(final int offset, final int value)
    {
        UnsafeApi.putInt(null, at(offset, Integer.BYTES), value);
    }

    void putLong(final int offset, final long value)
    {
        UnsafeApi.putLong(null, at(offset, Long.BYTES), value);
    }

    void putLongVolatile(final int offset, final long value)
    {
        UnsafeApi.putLongVolatile(null, at(offset, Long.BYTES), value);
    }

    void putLongOrdered(final int offset, final long value)
    {
        UnsafeApi.putLongRelease(null, at(offset, Long.BYTES), value);
    }
}
