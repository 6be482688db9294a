package io.reverb.rpc.wire;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the header every frame starts with, in the style of Aeron's {@code HeaderFlyweight}:
 * wrap a buffer at an offset, then get and set fields in place. Little-endian.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +---------------------------------------------------------------+
 * |                     Frame length (int32)                      |
 * +---------------+---------------+-------------------------------+
 * |    Version    |     Type      |            Flags              |
 * +---------------+---------------+-------------------------------+
 * |                       Stream id (int32)                       |
 * +---------------------------------------------------------------+
 * |                  Type-specific body ...                      ...
 * </pre>
 *
 * The frame length counts the header; one transport message may hold several frames back to back.
 * Stream id 0 is the connection itself (PING, GOAWAY).
 */
public final class FrameHeaderFlyweight
{
    /** Protocol version written and accepted. */
    public static final int CURRENT_VERSION = 1;
    /** Offset of the frame length. */
    public static final int FRAME_LENGTH_OFFSET = 0;
    /** Offset of the version. */
    public static final int VERSION_OFFSET = 4;
    /** Offset of the type. */
    public static final int TYPE_OFFSET = 5;
    /** Offset of the flags. */
    public static final int FLAGS_OFFSET = 6;
    /** Offset of the stream id. */
    public static final int STREAM_ID_OFFSET = 8;
    /** Header length. */
    public static final int HEADER_LENGTH = 12;

    private ByteBuffer buffer;
    private int offset;

    /**
     * @param buffer the buffer; its byte order is set to little-endian.
     * @param offset where the frame starts.
     * @return this.
     */
    public FrameHeaderFlyweight wrap(final ByteBuffer buffer, final int offset)
    {
        this.buffer = buffer.order(ByteOrder.LITTLE_ENDIAN);
        this.offset = offset;
        return this;
    }

    /**
     * @return the wrapped buffer.
     */
    public ByteBuffer buffer()
    {
        return buffer;
    }

    /**
     * @return where the frame starts.
     */
    public int offset()
    {
        return offset;
    }

    /**
     * @return frame length including the header.
     */
    public int frameLength()
    {
        return buffer.getInt(offset + FRAME_LENGTH_OFFSET);
    }

    /**
     * @param length frame length including the header.
     * @return this.
     */
    public FrameHeaderFlyweight frameLength(final int length)
    {
        buffer.putInt(offset + FRAME_LENGTH_OFFSET, length);
        return this;
    }

    /**
     * @return protocol version.
     */
    public int version()
    {
        return buffer.get(offset + VERSION_OFFSET) & 0xFF;
    }

    /**
     * @param version protocol version.
     * @return this.
     */
    public FrameHeaderFlyweight version(final int version)
    {
        buffer.put(offset + VERSION_OFFSET, (byte)version);
        return this;
    }

    /**
     * @return the type's wire value.
     */
    public int type()
    {
        return buffer.get(offset + TYPE_OFFSET) & 0xFF;
    }

    /**
     * @param type the type.
     * @return this.
     */
    public FrameHeaderFlyweight type(final FrameType type)
    {
        buffer.put(offset + TYPE_OFFSET, (byte)type.value());
        return this;
    }

    /**
     * @return flag bits.
     */
    public int flags()
    {
        return buffer.getShort(offset + FLAGS_OFFSET) & 0xFFFF;
    }

    /**
     * @param flags flag bits.
     * @return this.
     */
    public FrameHeaderFlyweight flags(final int flags)
    {
        buffer.putShort(offset + FLAGS_OFFSET, (short)flags);
        return this;
    }

    /**
     * @return the stream id.
     */
    public int streamId()
    {
        return buffer.getInt(offset + STREAM_ID_OFFSET);
    }

    /**
     * @param streamId the stream id.
     * @return this.
     */
    public FrameHeaderFlyweight streamId(final int streamId)
    {
        buffer.putInt(offset + STREAM_ID_OFFSET, streamId);
        return this;
    }

    /**
     * Writes a whole header.
     *
     * @param frameLength frame length including header.
     * @param type        type.
     * @param flags       flags.
     * @param streamId    stream id.
     * @return this.
     */
    public FrameHeaderFlyweight header(final int frameLength, final FrameType type, final int flags, final int streamId)
    {
        return frameLength(frameLength).version(CURRENT_VERSION).type(type).flags(flags).streamId(streamId);
    }
}
