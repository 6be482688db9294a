package io.reverb.rdma.engine;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * The header every SEND starts with: how many credits it returns, how long its control section is, and
 * its sequence number. Little-endian.
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |              credits returned (receives re-posted)            |  0
 *  +---------------------------------------------------------------+
 *  |                 control section length in bytes               |  4
 *  +---------------------------------------------------------------+
 *  |                    batch sequence number (64 bits)            |  8
 *  |                                                               |
 *  +---------------------------------------------------------------+
 * </pre>
 * Created once per connection side and re-wrapped for each batch; never allocates.
 */
final class BatchHeaderFlyweight
{
    static final int CREDITS_OFFSET = 0;
    static final int CONTROL_LENGTH_OFFSET = 4;
    static final int SEQUENCE_OFFSET = 8;
    static final int LENGTH = 16;

    private UnsafeBuffer buffer;
    private int offset;

    BatchHeaderFlyweight wrap(final UnsafeBuffer buffer, final int offset)
    {
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    int credits()
    {
        return buffer.getInt(offset + CREDITS_OFFSET);
    }

    BatchHeaderFlyweight credits(final int credits)
    {
        buffer.putInt(offset + CREDITS_OFFSET, credits);
        return this;
    }

    int controlLength()
    {
        return buffer.getInt(offset + CONTROL_LENGTH_OFFSET);
    }

    BatchHeaderFlyweight controlLength(final int length)
    {
        buffer.putInt(offset + CONTROL_LENGTH_OFFSET, length);
        return this;
    }

    long sequence()
    {
        return buffer.getLong(offset + SEQUENCE_OFFSET);
    }

    BatchHeaderFlyweight sequence(final long sequence)
    {
        buffer.putLong(offset + SEQUENCE_OFFSET, sequence);
        return this;
    }
}
