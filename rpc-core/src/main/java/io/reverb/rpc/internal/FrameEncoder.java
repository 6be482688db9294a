package io.reverb.rpc.internal;

import io.reverb.rpc.Marshaller;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.wire.CallFlyweight;
import io.reverb.rpc.wire.FrameHeaderFlyweight;
import io.reverb.rpc.wire.FrameType;
import io.reverb.rpc.wire.StatusFlyweight;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Writes frames through the wire flyweights (the same ones the reading side uses), into a claimed transport buffer.
 * One per connection, used under its write lock; frames call it from {@link OutboundFrame#encode}.
 */
final class FrameEncoder
{
    static final int HEADER = FrameHeaderFlyweight.HEADER_LENGTH;

    private final FrameHeaderFlyweight header = new FrameHeaderFlyweight();
    private final CallFlyweight call = new CallFlyweight();
    private final StatusFlyweight status = new StatusFlyweight();
    private String lastMethod;
    private byte[] lastMethodBytes;

    /**
     * @return the offset of the body.
     */
    int header(final ByteBuffer buffer, final int offset, final int length, final FrameType type, final int flags,
        final int streamId)
    {
        header.wrap(buffer, offset).header(length, type, flags, streamId);
        return offset + HEADER;
    }

    /**
     * @return the offset after the frame.
     */
    int call(final ByteBuffer buffer, final int offset, final int streamId, final String method, final long timeoutNanos,
        final int initialRequestN, final Metadata metadata)
    {
        final int body = header(buffer, offset, CallFlyweight.frameLength(method, metadata), FrameType.CALL, 0, streamId);
        return call.wrap(buffer, body).timeoutNanos(timeoutNanos).initialRequestN(initialRequestN)
            .method(methodBytes(method)).metadata(metadata);
    }

    /**
     * The method name's ASCII bytes: kept for the last name written on this connection (calls of one method in a row,
     * the common case, encode it once). Used under the connection's write lock, like the rest of this encoder.
     */
    private byte[] methodBytes(final String method)
    {
        if (method != lastMethod)
        {
            lastMethodBytes = method.getBytes(StandardCharsets.US_ASCII);
            lastMethod = method;
        }
        return lastMethodBytes;
    }

    /**
     * Writes a MESSAGE frame; leaves the buffer's limit narrowed to the payload (restore it to write more).
     *
     * @return the offset after the frame.
     */
    <T> int message(final ByteBuffer buffer, final int offset, final int streamId, final boolean endOfStream,
        final Marshaller<T> marshaller, final T value, final int payloadLength)
    {
        // a compressed message travels as an EncodedMessage (compressed before the claim, which needs its length)
        final int flags = (endOfStream ? FrameType.Flags.END_STREAM : 0) |
            (marshaller == EncodedMessage.MARSHALLER && ((EncodedMessage)value).compressed ? FrameType.Flags.COMPRESSED : 0);
        final int start = header(buffer, offset, HEADER + payloadLength, FrameType.MESSAGE, flags, streamId);
        buffer.limit(start + payloadLength).position(start);
        marshaller.write(value, buffer);
        return start + payloadLength;
    }

    /**
     * @return the offset after the frame.
     */
    int status(final ByteBuffer buffer, final int offset, final int streamId, final int code, final byte[] description,
        final Metadata trailers)
    {
        return status(buffer, offset, streamId, 0, code, description, trailers);
    }

    /**
     * @param flags STATUS flags, e.g. {@link FrameType.Flags#REFUSED}.
     * @return the offset after the frame.
     */
    int status(final ByteBuffer buffer, final int offset, final int streamId, final int flags, final int code,
        final byte[] description, final Metadata trailers)
    {
        final int body = header(buffer, offset, StatusFlyweight.frameLength(description, trailers), FrameType.STATUS, flags,
            streamId);
        return status.wrap(buffer, body).code(code).descriptionAndTrailers(description, trailers);
    }
}
