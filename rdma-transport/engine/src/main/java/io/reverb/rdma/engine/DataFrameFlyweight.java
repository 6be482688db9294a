package io.reverb.rdma.engine;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * The header of a frame in the send ring and in a batch: DATA (followed by its payload), RTS (no payload:
 * length is the rendezvous message's, id its rendezvous id) or PAD (never sent: length is its whole size).
 * A claimed frame not yet committed carries its type negated, so the flusher stops there.
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |                     length (payload bytes)                    |  0
 *  +---------------------------------------------------------------+
 *  |                     type (DATA, RTS, PAD)                     |  4
 *  +---------------------------------------------------------------+
 *  |                     message id (64 bits)                      |  8
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |         payload, padded so the frame ends on 16 bytes ...     |  16
 * </pre>
 */
final class DataFrameFlyweight
{
    static final int LENGTH_OFFSET = 0;
    static final int TYPE_OFFSET = 4;
    static final int ID_OFFSET = 8;
    static final int HEADER_LENGTH = 16;

    private UnsafeBuffer buffer;
    private int offset;

    DataFrameFlyweight wrap(final UnsafeBuffer buffer, final int offset)
    {
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    /** Writes a whole header. */
    DataFrameFlyweight header(final int length, final int type, final long id)
    {
        buffer.putInt(offset + LENGTH_OFFSET, length);
        buffer.putInt(offset + TYPE_OFFSET, type);
        buffer.putLong(offset + ID_OFFSET, id);
        return this;
    }

    int length()
    {
        return buffer.getInt(offset + LENGTH_OFFSET);
    }

    DataFrameFlyweight length(final int length)
    {
        buffer.putInt(offset + LENGTH_OFFSET, length);
        return this;
    }

    int type()
    {
        return buffer.getInt(offset + TYPE_OFFSET);
    }

    DataFrameFlyweight type(final int type)
    {
        buffer.putInt(offset + TYPE_OFFSET, type);
        return this;
    }

    long id()
    {
        return buffer.getLong(offset + ID_OFFSET);
    }

    /** @return the offset of the payload in the wrapped buffer. */
    int payloadOffset()
    {
        return offset + HEADER_LENGTH;
    }

    /** @return bytes this frame occupies in the ring and in a batch, from its type and length. */
    int frameSize()
    {
        return Wire.frameSize(type(), length());
    }
}
