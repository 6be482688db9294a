package io.reverb.rpc.internal;

import io.reverb.rpc.Marshaller;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.Status;
import io.reverb.rpc.wire.FrameCodec;
import io.reverb.rpc.wire.FrameHeaderFlyweight;
import io.reverb.rpc.wire.FrameType;
import io.reverb.rpc.wire.StatusFlyweight;
import java.nio.ByteBuffer;

/**
 * A frame waiting to be written: knows its exact length and how to encode itself into a claimed buffer. Frames are
 * encoded at once when the transport has space, and queued in order when it is back-pressured. An interface, so that
 * a call can be its own first or last frame (the client's CALL with its request, the server's final response with
 * its STATUS) without inheriting from a frame class and without allocating a frame object on the unary path.
 */
interface OutboundFrame
{
    int HEADER = FrameHeaderFlyweight.HEADER_LENGTH;

    /**
     * @return the encoded length.
     */
    int length();

    /**
     * @param encoder the connection's encoder (flyweights), used under its write lock.
     * @param buffer  little-endian buffer.
     * @param offset  where the frame starts.
     */
    void encode(FrameEncoder encoder, ByteBuffer buffer, int offset);

    /**
     * The frame could not be written (too large, serialization failed). Called outside any connection lock.
     *
     * @param status why.
     */
    default void failed(final Status status)
    {
    }

    /**
     * Frames of several calls sent in one transport message: only the attachment of that message, so that a refusal
     * fails each frame's call. Never encoded.
     */
    final class Group implements OutboundFrame
    {
        private final OutboundFrame[] frames;

        Group(final OutboundFrame[] frames)
        {
            this.frames = frames;
        }

        @Override
        public int length()
        {
            throw new UnsupportedOperationException("a group is not encoded");
        }

        @Override
        public void encode(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
        {
            throw new UnsupportedOperationException("a group is not encoded");
        }

        @Override
        public void failed(final Status status)
        {
            for (final OutboundFrame frame : frames)
            {
                frame.failed(status);
            }
        }
    }

    /** MESSAGE. */
    final class Message<T> implements OutboundFrame
    {
        private final int streamId;
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
            this.streamId = streamId;
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
        public int length()
        {
            return HEADER + payloadLength;
        }

        @Override
        public void encode(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
        {
            encoder.message(buffer, offset, streamId, endOfStream, marshaller, value, payloadLength);
        }

        @Override
        public void failed(final Status status)
        {
            stream.onWriteFailed(status);
        }
    }

    /** HALF_CLOSE, CANCEL, REQUEST_N, PING: fixed-size control frames. */
    final class Control implements OutboundFrame
    {
        private final int streamId;
        private final FrameType type;
        private final int flags;
        private final long argument;

        Control(final FrameType type, final int flags, final int streamId, final long argument)
        {
            this.streamId = streamId;
            this.type = type;
            this.flags = flags;
            this.argument = argument;
        }

        @Override
        public int length()
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
        public void encode(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
        {
            final int body = encoder.header(buffer, offset, length(), type, flags, streamId);
            if (type == FrameType.REQUEST_N || type == FrameType.CANCEL)
            {
                buffer.putInt(body, (int)argument);
            }
            else if (type == FrameType.PING)
            {
                buffer.putLong(body, argument);
            }
        }
    }

    /** HEADERS. */
    final class Headers implements OutboundFrame
    {
        private final int streamId;
        private final Metadata metadata;
        private final int length;

        Headers(final int streamId, final Metadata metadata)
        {
            this.streamId = streamId;
            this.metadata = metadata;
            this.length = HEADER + FrameCodec.metadataLength(metadata);
        }

        @Override
        public int length()
        {
            return length;
        }

        @Override
        public void encode(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
        {
            FrameCodec.putMetadata(buffer, encoder.header(buffer, offset, length, FrameType.HEADERS, 0, streamId), metadata);
        }
    }

    /** STATUS. */
    final class StatusFrame implements OutboundFrame
    {
        private final int streamId;
        private final int flags;
        private final int code;
        private final byte[] description;
        private final Metadata trailers;
        private final int length;

        StatusFrame(final int streamId, final Status status, final Metadata trailers)
        {
            this(streamId, 0, status, trailers);
        }

        /**
         * @param flags e.g. {@link FrameType.Flags#REFUSED} for a call refused before any handler ran.
         */
        StatusFrame(final int streamId, final int flags, final Status status, final Metadata trailers)
        {
            this.streamId = streamId;
            this.flags = flags;
            this.code = status.code().value();
            this.description = FrameCodec.utf8(status.description());
            this.trailers = trailers;
            this.length = StatusFlyweight.frameLength(description, trailers);
        }

        @Override
        public int length()
        {
            return length;
        }

        @Override
        public void encode(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
        {
            encoder.status(buffer, offset, streamId, flags, code, description, trailers);
        }
    }

    /** GOAWAY. */
    final class GoAway implements OutboundFrame
    {
        private final int lastStreamId;
        private final int code;
        private final byte[] description;

        GoAway(final int lastStreamId, final Status status)
        {
            this.lastStreamId = lastStreamId;
            this.code = status.code().value();
            this.description = FrameCodec.utf8(status.description());
        }

        @Override
        public int length()
        {
            return HEADER + 8 + FrameCodec.stringLength(description);
        }

        @Override
        public void encode(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
        {
            final int body = encoder.header(buffer, offset, length(), FrameType.GOAWAY, 0, 0);
            buffer.putInt(body, lastStreamId);
            buffer.putInt(body + 4, code);
            FrameCodec.putString(buffer, body + 8, description);
        }
    }
}
