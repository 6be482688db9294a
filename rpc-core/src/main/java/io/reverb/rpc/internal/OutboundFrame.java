package io.reverb.rpc.internal;

import io.reverb.rpc.Marshaller;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.Status;
import io.reverb.rpc.wire.FrameCodec;
import io.reverb.rpc.wire.FrameHeaderFlyweight;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;

/**
 * A frame waiting to be written: knows its exact length and how to encode itself into a claimed buffer. Frames are
 * encoded at once when the transport has space, and queued in order when it is back-pressured.
 */
abstract class OutboundFrame
{
    static final int HEADER = FrameHeaderFlyweight.HEADER_LENGTH;

    int streamId; // assigned late for a first message that travels with its CALL

    OutboundFrame(final int streamId)
    {
        this.streamId = streamId;
    }

    abstract int length();

    /**
     * @param buffer little-endian buffer.
     * @param offset where the frame starts.
     */
    abstract void encode(ByteBuffer buffer, int offset);

    /**
     * The frame could not be written (too large, serialization failed). Called outside any connection lock.
     *
     * @param status why.
     */
    void failed(final Status status)
    {
    }

    static int callLength(final String method, final Metadata metadata)
    {
        return HEADER + 8 + 4 + 2 + method.length() + FrameCodec.metadataLength(metadata);
    }

    static int encodeCall(final ByteBuffer buffer, final int offset, final int length, final int streamId,
        final String method, final long timeoutNanos, final int initialRequestN, final Metadata metadata)
    {
        header(buffer, offset, length, FrameType.CALL, 0, streamId);
        int at = offset + HEADER;
        buffer.putLong(at, timeoutNanos);
        buffer.putInt(at + 8, initialRequestN);
        buffer.putShort(at + 12, (short)method.length());
        at = FrameCodec.putAscii(buffer, at + 14, method);
        return FrameCodec.putMetadata(buffer, at, metadata);
    }

    /** Writes a MESSAGE frame; leaves the buffer's limit narrowed to the payload (restore it to write more). */
    static <T> void encodeMessage(final ByteBuffer buffer, final int offset, final int streamId, final boolean endOfStream,
        final Marshaller<T> marshaller, final T value, final int payloadLength)
    {
        header(buffer, offset, HEADER + payloadLength, FrameType.MESSAGE,
            endOfStream ? FrameType.Flags.END_STREAM : 0, streamId);
        final int start = offset + HEADER;
        buffer.limit(start + payloadLength).position(start);
        marshaller.write(value, buffer);
    }

    static int statusLength(final byte[] description, final Metadata trailers)
    {
        return HEADER + 4 + FrameCodec.stringLength(description) + FrameCodec.metadataLength(trailers);
    }

    static void encodeStatus(final ByteBuffer buffer, final int offset, final int length, final int streamId,
        final int code, final byte[] description, final Metadata trailers)
    {
        header(buffer, offset, length, FrameType.STATUS, 0, streamId);
        buffer.putInt(offset + HEADER, code);
        final int at = FrameCodec.putString(buffer, offset + HEADER + 4, description);
        FrameCodec.putMetadata(buffer, at, trailers);
    }

    static void header(final ByteBuffer buffer, final int offset, final int length, final FrameType type, final int flags,
        final int streamId)
    {
        buffer.putInt(offset + FrameHeaderFlyweight.FRAME_LENGTH_OFFSET, length);
        buffer.put(offset + FrameHeaderFlyweight.VERSION_OFFSET, (byte)FrameHeaderFlyweight.CURRENT_VERSION);
        buffer.put(offset + FrameHeaderFlyweight.TYPE_OFFSET, (byte)type.value());
        buffer.putShort(offset + FrameHeaderFlyweight.FLAGS_OFFSET, (short)flags);
        buffer.putInt(offset + FrameHeaderFlyweight.STREAM_ID_OFFSET, streamId);
    }

    /**
     * Two frames in one transport message (CALL + first MESSAGE, last MESSAGE + STATUS): one SEND instead of two on
     * the latency path.
     */
    static final class Pair extends OutboundFrame
    {
        private final OutboundFrame first;
        private final OutboundFrame second;

        Pair(final OutboundFrame first, final OutboundFrame second)
        {
            super(first.streamId);
            this.first = first;
            this.second = second;
        }

        @Override
        int length()
        {
            return first.length() + second.length();
        }

        @Override
        void encode(final ByteBuffer buffer, final int offset)
        {
            final int limit = buffer.limit();
            first.encode(buffer, offset);
            buffer.limit(limit); // a message frame narrows the limit to its payload for the marshaller
            second.encode(buffer, offset + first.length());
        }

        @Override
        void failed(final Status status)
        {
            first.failed(status);
            second.failed(status);
        }
    }

    /** CALL. */
    static final class Call extends OutboundFrame
    {
        private final String method;
        private final long timeoutNanos;
        private final int initialRequestN;
        private final Metadata metadata;
        private final int length;

        Call(final int streamId, final String method, final long timeoutNanos, final int initialRequestN, final Metadata metadata)
        {
            super(streamId);
            this.method = method;
            this.timeoutNanos = timeoutNanos;
            this.initialRequestN = initialRequestN;
            this.metadata = metadata;
            this.length = callLength(method, metadata);
        }

        @Override
        int length()
        {
            return length;
        }

        @Override
        void encode(final ByteBuffer buffer, final int offset)
        {
            encodeCall(buffer, offset, length, streamId, method, timeoutNanos, initialRequestN, metadata);
        }
    }

    /** MESSAGE. */
    static final class Message<T> extends OutboundFrame
    {
        private final boolean endOfStream;
        private final Marshaller<T> marshaller;
        private final T value;
        private final int payloadLength;
        private final RpcStream stream;

        Message(final int streamId, final boolean endOfStream, final Marshaller<T> marshaller, final T value,
            final RpcStream stream)
        {
            this(streamId, endOfStream, marshaller, value, marshaller.serializedSize(value), stream);
        }

        Message(final int streamId, final boolean endOfStream, final Marshaller<T> marshaller, final T value,
            final int payloadLength, final RpcStream stream)
        {
            super(streamId);
            this.endOfStream = endOfStream;
            this.marshaller = marshaller;
            this.value = value;
            this.payloadLength = payloadLength;
            this.stream = stream;
        }

        int payloadLength()
        {
            return payloadLength;
        }

        @Override
        int length()
        {
            return HEADER + payloadLength;
        }

        @Override
        void encode(final ByteBuffer buffer, final int offset)
        {
            encodeMessage(buffer, offset, streamId, endOfStream, marshaller, value, payloadLength);
        }

        @Override
        void failed(final Status status)
        {
            stream.onWriteFailed(status);
        }
    }

    /** HALF_CLOSE, CANCEL, REQUEST_N, PING: fixed-size control frames. */
    static final class Control extends OutboundFrame
    {
        private final FrameType type;
        private final int flags;
        private final long argument;

        Control(final FrameType type, final int flags, final int streamId, final long argument)
        {
            super(streamId);
            this.type = type;
            this.flags = flags;
            this.argument = argument;
        }

        @Override
        int length()
        {
            switch (type)
            {
                case REQUEST_N:
                case CANCEL:
                    return HEADER + 4;
                case PING: return HEADER + 8;
                default: return HEADER;
            }
        }

        @Override
        void encode(final ByteBuffer buffer, final int offset)
        {
            header(buffer, offset, length(), type, flags, streamId);
            if (type == FrameType.REQUEST_N || type == FrameType.CANCEL)
            {
                buffer.putInt(offset + HEADER, (int)argument);
            }
            else if (type == FrameType.PING)
            {
                buffer.putLong(offset + HEADER, argument);
            }
        }
    }

    /** HEADERS. */
    static final class Headers extends OutboundFrame
    {
        private final Metadata metadata;
        private final int length;

        Headers(final int streamId, final Metadata metadata)
        {
            super(streamId);
            this.metadata = metadata;
            this.length = HEADER + FrameCodec.metadataLength(metadata);
        }

        @Override
        int length()
        {
            return length;
        }

        @Override
        void encode(final ByteBuffer buffer, final int offset)
        {
            header(buffer, offset, length, FrameType.HEADERS, 0, streamId);
            FrameCodec.putMetadata(buffer, offset + HEADER, metadata);
        }
    }

    /** STATUS. */
    static final class StatusFrame extends OutboundFrame
    {
        private final int code;
        private final byte[] description;
        private final Metadata trailers;
        private final int length;

        StatusFrame(final int streamId, final Status status, final Metadata trailers)
        {
            super(streamId);
            this.code = status.code().value();
            this.description = FrameCodec.utf8(status.description());
            this.trailers = trailers;
            this.length = statusLength(description, trailers);
        }

        @Override
        int length()
        {
            return length;
        }

        @Override
        void encode(final ByteBuffer buffer, final int offset)
        {
            encodeStatus(buffer, offset, length, streamId, code, description, trailers);
        }
    }

    /** GOAWAY. */
    static final class GoAway extends OutboundFrame
    {
        private final int lastStreamId;
        private final int code;
        private final byte[] description;

        GoAway(final int lastStreamId, final Status status)
        {
            super(0);
            this.lastStreamId = lastStreamId;
            this.code = status.code().value();
            this.description = FrameCodec.utf8(status.description());
        }

        @Override
        int length()
        {
            return HEADER + 8 + FrameCodec.stringLength(description);
        }

        @Override
        void encode(final ByteBuffer buffer, final int offset)
        {
            header(buffer, offset, length(), FrameType.GOAWAY, 0, 0);
            buffer.putInt(offset + HEADER, lastStreamId);
            buffer.putInt(offset + HEADER + 4, code);
            FrameCodec.putString(buffer, offset + HEADER + 8, description);
        }
    }
}
