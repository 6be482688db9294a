package io.reverb.rdma.engine;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * Control frames waiting for the next batch, kept as one ring of frames already encoded in their wire form
 * ({@link ControlFrameFlyweight}), so that posting a batch copies them as they are. Grows (doubling) when
 * full; frames leave in the order they were queued.
 *
 * <p>Not thread-safe: the connection guards it with its send lock.
 */
final class ControlQueue
{
    private static final int FRAME = ControlFrameFlyweight.LENGTH;

    private final ControlFrameFlyweight frame = new ControlFrameFlyweight();
    private UnsafeBuffer ring;
    private int capacity;
    private int head;
    private int count;

    ControlQueue(final int initialCapacity)
    {
        capacity = initialCapacity;
        ring = new UnsafeBuffer(new byte[capacity * FRAME]);
    }

    /** @return frames queued. */
    int size()
    {
        return count;
    }

    /** Queues one frame. */
    void add(final int type, final int code, final long id, final long address, final int rkey, final int length)
    {
        if (count == capacity)
        {
            grow();
        }
        frame.wrap(ring, ((head + count) % capacity) * FRAME)
            .type(type).code(code).id(id).address(address).rkey(rkey).length(length);
        count++;
    }

    /**
     * Copies the first {@code frames} queued frames to {@code dst} at {@code offset}, one after another,
     * without removing them ({@link #remove(int)} does, once the batch is posted).
     *
     * @return true if one of them is a CLOSE
     */
    boolean copyTo(final UnsafeBuffer dst, final int offset, final int frames)
    {
        boolean close = false;
        for (int i = 0; i < frames; i++)
        {
            final int at = ((head + i) % capacity) * FRAME;
            dst.putBytes(offset + i * FRAME, ring, at, FRAME);
            close |= frame.wrap(ring, at).type() == Wire.CONTROL_CLOSE;
        }
        return close;
    }

    /** @return how many of the first {@code frames} queued frames are of this type. */
    int count(final int type, final int frames)
    {
        int n = 0;
        for (int i = 0; i < frames; i++)
        {
            if (frame.wrap(ring, ((head + i) % capacity) * FRAME).type() == type)
            {
                n++;
            }
        }
        return n;
    }

    /** Removes the first {@code frames} frames. */
    void remove(final int frames)
    {
        head = (head + frames) % capacity;
        count -= frames;
    }

    /** Drops every queued frame. */
    void clear()
    {
        head = 0;
        count = 0;
    }

    private void grow()
    {
        final int newCapacity = capacity * 2;
        final UnsafeBuffer bigger = new UnsafeBuffer(new byte[newCapacity * FRAME]);
        for (int i = 0; i < count; i++)
        {
            bigger.putBytes(i * FRAME, ring, ((head + i) % capacity) * FRAME, FRAME);
        }
        ring = bigger;
        capacity = newCapacity;
        head = 0;
    }
}
