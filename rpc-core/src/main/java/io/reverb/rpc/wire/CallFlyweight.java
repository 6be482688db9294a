package io.reverb.rpc.wire;

import io.reverb.rpc.Metadata;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over a CALL frame's body, the part after the {@link FrameHeaderFlyweight header}; the one place that
 * knows the layout, used by the client that writes it and the server that reads it. Little-endian.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +---------------------------------------------------------------+
 * |                 Timeout nanos (int64, -1 = none)              |
 * |                                                               |
 * +---------------------------------------------------------------+
 * |      Initial response demand (int32, MAX_VALUE = unbounded)   |
 * +-------------------------------+-------------------------------+
 * |  Method name length (uint16)  |  Method name (ASCII)        ...
 * +-------------------------------+-------------------------------+
 * |  Metadata block (see {@link FrameCodec})                    ...
 * </pre>
 */
public final class CallFlyweight
{
    /** Offset of the timeout in the body. */
    public static final int TIMEOUT_OFFSET = 0;
    /** Offset of the initial demand. */
    public static final int INITIAL_REQUEST_N_OFFSET = 8;
    /** Offset of the method name's length. */
    public static final int METHOD_LENGTH_OFFSET = 12;
    /** Offset of the method name. */
    public static final int METHOD_OFFSET = 14;

    private ByteBuffer buffer;
    private int offset;

    /**
     * @param method   full method name (ASCII).
     * @param metadata request metadata, or null.
     * @return the frame's length, header included.
     */
    public static int frameLength(final String method, final Metadata metadata)
    {
        return FrameHeaderFlyweight.HEADER_LENGTH + METHOD_OFFSET + method.length() + FrameCodec.metadataLength(metadata);
    }

    /**
     * @param buffer the buffer; its byte order is set to little-endian.
     * @param offset where the body starts (after the header).
     * @return this.
     */
    public CallFlyweight wrap(final ByteBuffer buffer, final int offset)
    {
        this.buffer = buffer.order(ByteOrder.LITTLE_ENDIAN);
        this.offset = offset;
        return this;
    }

    /**
     * Checks a received body before its fields are read.
     *
     * @param end end of the frame.
     * @return this.
     * @throws ProtocolException if the body is truncated or the method name does not fit.
     */
    public CallFlyweight validate(final int end) throws ProtocolException
    {
        FrameCodec.check(end - offset >= METHOD_OFFSET, "CALL truncated");
        FrameCodec.check(initialRequestN() >= 0, "negative initial demand");
        final int methodLength = methodLength();
        FrameCodec.check(methodLength > 0 && offset + METHOD_OFFSET + methodLength <= end, "bad method name length");
        return this;
    }

    /** @return the timeout in nanoseconds, -1 for none. */
    public long timeoutNanos()
    {
        return buffer.getLong(offset + TIMEOUT_OFFSET);
    }

    /**
     * @param nanos the timeout, -1 for none.
     * @return this.
     */
    public CallFlyweight timeoutNanos(final long nanos)
    {
        buffer.putLong(offset + TIMEOUT_OFFSET, nanos);
        return this;
    }

    /** @return the demand the client grants with the call. */
    public int initialRequestN()
    {
        return buffer.getInt(offset + INITIAL_REQUEST_N_OFFSET);
    }

    /**
     * @param n the demand granted with the call.
     * @return this.
     */
    public CallFlyweight initialRequestN(final int n)
    {
        buffer.putInt(offset + INITIAL_REQUEST_N_OFFSET, n);
        return this;
    }

    /** @return the method name's length in bytes. */
    public int methodLength()
    {
        return buffer.getShort(offset + METHOD_LENGTH_OFFSET) & 0xFFFF;
    }

    /** @return where the method name starts in the buffer. */
    public int methodOffset()
    {
        return offset + METHOD_OFFSET;
    }

    /** @return the method name (allocates; for messages). */
    public String method()
    {
        return FrameCodec.ascii(buffer, methodOffset(), methodLength());
    }

    /**
     * Writes the method name with its length.
     *
     * @param method full method name (ASCII).
     * @return this.
     */
    public CallFlyweight method(final String method)
    {
        buffer.putShort(offset + METHOD_LENGTH_OFFSET, (short)method.length());
        FrameCodec.putAscii(buffer, offset + METHOD_OFFSET, method);
        return this;
    }

    /**
     * Writes the method name with its length, from its ASCII bytes (a caller that sends one method many times keeps
     * them: one bulk copy instead of a loop over the name's characters).
     *
     * @param ascii full method name, ASCII bytes.
     * @return this.
     */
    public CallFlyweight method(final byte[] ascii)
    {
        buffer.putShort(offset + METHOD_LENGTH_OFFSET, (short)ascii.length);
        buffer.put(offset + METHOD_OFFSET, ascii);
        return this;
    }

    /** @return where the metadata block starts (after the method name). */
    public int metadataOffset()
    {
        return offset + METHOD_OFFSET + methodLength();
    }

    /**
     * Writes the metadata block after the method name (write the name first).
     *
     * @param metadata request metadata, or null.
     * @return the offset after the frame.
     */
    public int metadata(final Metadata metadata)
    {
        return FrameCodec.putMetadata(buffer, metadataOffset(), metadata);
    }
}
