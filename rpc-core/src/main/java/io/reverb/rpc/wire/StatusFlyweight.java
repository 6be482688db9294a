package io.reverb.rpc.wire;

import io.reverb.rpc.Metadata;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over a STATUS frame's body, the part after the {@link FrameHeaderFlyweight header}; the one place that
 * knows the layout, used by the server that writes it and the client that reads it. Little-endian.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +---------------------------------------------------------------+
 * |                      Status code (int32)                      |
 * +---------------------------------------------------------------+
 * |               Description length (int32, -1 = none)           |
 * +---------------------------------------------------------------+
 * |  Description (UTF-8)                                        ...
 * +---------------------------------------------------------------+
 * |  Metadata block: trailers (see {@link FrameCodec})          ...
 * </pre>
 */
public final class StatusFlyweight
{
    /** Offset of the status code in the body. */
    public static final int CODE_OFFSET = 0;
    /** Offset of the description's length. */
    public static final int DESCRIPTION_LENGTH_OFFSET = 4;
    /** Offset of the description. */
    public static final int DESCRIPTION_OFFSET = 8;

    private final String[] text = new String[1];
    private ByteBuffer buffer;
    private int offset;

    /**
     * @param description UTF-8 description ({@link FrameCodec#utf8}), or null.
     * @param trailers    trailers, or null.
     * @return the frame's length, header included.
     */
    public static int frameLength(final byte[] description, final Metadata trailers)
    {
        return FrameHeaderFlyweight.HEADER_LENGTH + DESCRIPTION_LENGTH_OFFSET + FrameCodec.stringLength(description) +
            FrameCodec.metadataLength(trailers);
    }

    /**
     * @param buffer the buffer; its byte order is set to little-endian.
     * @param offset where the body starts (after the header).
     * @return this.
     */
    public StatusFlyweight wrap(final ByteBuffer buffer, final int offset)
    {
        this.buffer = buffer.order(ByteOrder.LITTLE_ENDIAN);
        this.offset = offset;
        return this;
    }

    /**
     * Checks a received body before its code is read.
     *
     * @param end end of the frame.
     * @return this.
     * @throws ProtocolException if it is truncated.
     */
    public StatusFlyweight validate(final int end) throws ProtocolException
    {
        FrameCodec.check(end - offset >= DESCRIPTION_LENGTH_OFFSET, "STATUS truncated");
        return this;
    }

    /** @return the status code's value. */
    public int code()
    {
        return buffer.getInt(offset + CODE_OFFSET);
    }

    /**
     * @param code the status code's value.
     * @return this.
     */
    public StatusFlyweight code(final int code)
    {
        buffer.putInt(offset + CODE_OFFSET, code);
        return this;
    }

    /**
     * Writes the description and the trailers after the code.
     *
     * @param description UTF-8 description, or null.
     * @param trailers    trailers, or null.
     * @return the offset after the frame.
     */
    public int descriptionAndTrailers(final byte[] description, final Metadata trailers)
    {
        final int at = FrameCodec.putString(buffer, offset + DESCRIPTION_LENGTH_OFFSET, description);
        return FrameCodec.putMetadata(buffer, at, trailers);
    }

    /**
     * @param end end of the frame.
     * @return the description, or null when absent (the common case, read without allocating).
     * @throws ProtocolException if malformed.
     */
    public String description(final int end) throws ProtocolException
    {
        final int at = offset + DESCRIPTION_LENGTH_OFFSET;
        if (end - at >= 4 && buffer.getInt(at) == -1)
        {
            return null;
        }
        FrameCodec.getString(buffer, at, end, text);
        final String description = text[0];
        text[0] = null;
        return description;
    }

    /**
     * @param end end of the frame.
     * @return where the trailers' metadata block starts.
     * @throws ProtocolException if the description is malformed.
     */
    public int trailersOffset(final int end) throws ProtocolException
    {
        final int at = offset + DESCRIPTION_LENGTH_OFFSET;
        FrameCodec.check(end - at >= 4, "STATUS truncated");
        final int length = buffer.getInt(at);
        if (length == -1)
        {
            return at + 4;
        }
        FrameCodec.check(length >= 0 && length <= end - at - 4, "bad string length " + length);
        return at + 4 + length;
    }
}
