package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.MemoryRegion;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The send ring: registered memory producers claim frames in ({@link #claim}), commit by flipping the frame's
 * type positive, and the flusher posts as one contiguous range per batch ({@link #batchLength}).
 *
 * <pre>
 *        head               posted                      tail
 *   ------|==================|===========================|---------
 *          sent, not yet       committed or claimed,       free
 *          known delivered     not yet posted
 * </pre>
 * Positions only grow; a frame never straddles the end of the ring (a PAD frame fills the gap instead), so
 * every frame and every batch is one contiguous range of the registered memory. Frame headers are laid out
 * as {@link DataFrameFlyweight} draws them.
 *
 * <p>Not thread-safe: the connection guards it with its send lock.
 */
final class SendRing
{
    private final MemoryRegion region;
    private final UnsafeBuffer buffer;
    private final ByteBuffer byteBuffer;
    private final int capacity;
    private long tail;
    private long posted;
    private long head;

    SendRing(final MemoryRegion region)
    {
        this.region = region;
        this.buffer = region.buffer();
        this.byteBuffer = region.byteBuffer();
        this.capacity = region.length();
    }

    MemoryRegion region()
    {
        return region;
    }

    UnsafeBuffer buffer()
    {
        return buffer;
    }

    ByteBuffer byteBuffer()
    {
        return byteBuffer;
    }

    int capacity()
    {
        return capacity;
    }

    long head()
    {
        return head;
    }

    long posted()
    {
        return posted;
    }

    long tail()
    {
        return tail;
    }

    /** @return the ring index of a position. */
    int indexOf(final long position)
    {
        return (int)(position % capacity);
    }

    /** @return true if every claimed frame has been posted (or skipped as padding). */
    boolean isFullyPosted()
    {
        return posted == tail;
    }

    /** @return true if there are frames claimed or committed that have not been posted. */
    boolean hasUnposted()
    {
        return posted < tail;
    }

    /** @return bytes between head and tail: claimed or sent and not yet known delivered. */
    long bytesInFlight()
    {
        return tail - head;
    }

    /** Everything up to {@code position} is known delivered: its space can be claimed again. */
    void release(final long position)
    {
        head = position;
    }

    /**
     * Claims {@code frameLength} contiguous bytes, writing a PAD frame over the end of the ring first if they
     * would not fit there.
     *
     * @return the ring index of the claimed frame, or -1 if the ring has no room (back-pressure)
     */
    int claim(final int frameLength)
    {
        int index = indexOf(tail);
        final int toEnd = capacity - index;
        final int padding = toEnd < frameLength ? toEnd : 0;
        if (capacity - (tail - head) < (long)frameLength + padding)
        {
            return -1;
        }
        if (padding > 0)
        {
            writeHeader(index, padding, Wire.FRAME_PAD, -1);
            tail += padding;
            index = 0;
        }
        tail += frameLength;
        return index;
    }

    void writeHeader(final int index, final int length, final int type, final long id)
    {
        buffer.putInt(index + DataFrameFlyweight.LENGTH_OFFSET, length);
        buffer.putInt(index + DataFrameFlyweight.TYPE_OFFSET, type);
        buffer.putLong(index + DataFrameFlyweight.ID_OFFSET, id);
    }

    int frameType(final int index)
    {
        return buffer.getInt(index + DataFrameFlyweight.TYPE_OFFSET);
    }

    void frameType(final int index, final int type)
    {
        buffer.putInt(index + DataFrameFlyweight.TYPE_OFFSET, type);
    }

    int frameLength(final int index)
    {
        return buffer.getInt(index + DataFrameFlyweight.LENGTH_OFFSET);
    }

    void frameLength(final int index, final int length)
    {
        buffer.putInt(index + DataFrameFlyweight.LENGTH_OFFSET, length);
    }

    long frameId(final int index)
    {
        return buffer.getLong(index + DataFrameFlyweight.ID_OFFSET);
    }

    /** @return bytes the frame at this index occupies. */
    int frameSize(final int index)
    {
        return Wire.frameSize(frameType(index), frameLength(index));
    }

    /**
     * Moves {@code posted} past PAD frames (aborted claims, the filler before the ring wraps).
     *
     * @return true if it moved
     */
    boolean skipPadding()
    {
        final long before = posted;
        while (posted < tail)
        {
            final int index = indexOf(posted);
            if (frameType(index) != Wire.FRAME_PAD)
            {
                break;
            }
            posted += frameLength(index);
        }
        return posted != before;
    }

    /**
     * Measures the next batch's data: committed frames from {@code posted} on, one contiguous range (it ends
     * where the ring wraps), at most {@code budget} bytes. It stops before an uncommitted or PAD frame, before
     * an eager frame that would overtake a rendezvous (one outstanding or earlier in the batch), and before an
     * RTS beyond {@code maxPipelined} outstanding rendezvous.
     *
     * @param budget      bytes the peer's receive slot has room for
     * @param outstanding rendezvous announced and not yet written
     * @param maxPipelined rendezvous that may be outstanding at most
     * @return bytes of frames to send, possibly 0
     */
    int batchLength(final int budget, final int outstanding, final int maxPipelined)
    {
        int dataLength = 0;
        int rtsInBatch = 0;
        long p = posted;
        while (p < tail)
        {
            final int index = indexOf(p);
            if (index == 0 && p != posted)
            {
                break;
            }
            final int type = frameType(index);
            if (type <= 0 || type == Wire.FRAME_PAD ||
                (type == Wire.FRAME_DATA && (outstanding > 0 || rtsInBatch > 0)) ||
                (type == Wire.FRAME_RTS && outstanding + rtsInBatch >= maxPipelined))
            {
                break;
            }
            final int size = Wire.frameSize(type, frameLength(index));
            if (dataLength + size > budget)
            {
                break;
            }
            dataLength += size;
            p += size;
            if (type == Wire.FRAME_RTS)
            {
                rtsInBatch++;
            }
        }
        return dataLength;
    }

    /** The batch's {@code dataLength} bytes from {@code posted} were posted. */
    void markPosted(final int dataLength)
    {
        posted += dataLength;
    }
}
