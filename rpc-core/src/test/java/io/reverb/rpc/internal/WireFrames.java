package io.reverb.rpc.internal;

import io.reverb.rpc.Marshaller;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.wire.CallFlyweight;
import io.reverb.rpc.wire.FrameCodec;
import io.reverb.rpc.wire.FrameHeaderFlyweight;
import io.reverb.rpc.wire.FrameType;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.GZIPOutputStream;

/**
 * Frames as a hostile (or any) client writes them, for tests that feed a {@link ServerWireConnection} by hand: no
 * client call sits behind them, so nothing keeps them within the protocol's rules.
 */
final class WireFrames
{
    private final FrameEncoder encoder = new FrameEncoder();

    /** @return a CALL frame without deadline or metadata. */
    byte[] call(final int streamId, final MethodDescriptor<?, ?> method, final int initialRequestN)
    {
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(CallFlyweight.frameLength(method.fullMethodName(),
            null)));
        final int end = encoder.call(buffer, 0, streamId, method.fullMethodName(), -1, initialRequestN, null);
        return Arrays.copyOf(buffer.array(), end);
    }

    /** @return a CALL frame without deadline, with the metadata given. */
    byte[] call(final int streamId, final MethodDescriptor<?, ?> method, final int initialRequestN,
        final Metadata metadata)
    {
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(CallFlyweight.frameLength(method.fullMethodName(),
            metadata)));
        final int end = encoder.call(buffer, 0, streamId, method.fullMethodName(), -1, initialRequestN, metadata);
        return Arrays.copyOf(buffer.array(), end);
    }

    /** @return an uncompressed MESSAGE frame. */
    <T> byte[] message(final int streamId, final Marshaller<T> marshaller, final T value, final boolean endOfStream)
    {
        final int length = marshaller.serializedSize(value);
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(FrameEncoder.HEADER + length));
        encoder.message(buffer, 0, streamId, endOfStream, marshaller, value, length);
        return buffer.array();
    }

    /** @return a COMPRESSED MESSAGE frame whose body is the codec name and the given compressed bytes. */
    byte[] compressedMessage(final int streamId, final String codec, final byte[] compressed, final boolean endOfStream)
    {
        final byte[] name = codec.getBytes(StandardCharsets.US_ASCII);
        final byte[] body = new byte[1 + name.length + compressed.length];
        body[0] = (byte)name.length;
        System.arraycopy(name, 0, body, 1, name.length);
        System.arraycopy(compressed, 0, body, 1 + name.length, compressed.length);
        final EncodedMessage encoded = new EncodedMessage(body, body.length, true);
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(FrameEncoder.HEADER + body.length));
        encoder.message(buffer, 0, streamId, endOfStream, EncodedMessage.MARSHALLER, encoded, body.length);
        return buffer.array();
    }

    /** @return a HALF_CLOSE frame. */
    byte[] halfClose(final int streamId)
    {
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(FrameEncoder.HEADER));
        encoder.header(buffer, 0, FrameEncoder.HEADER, FrameType.HALF_CLOSE, 0, streamId);
        return buffer.array();
    }

    /** @return a CANCEL frame carrying the code the client gives. */
    byte[] cancel(final int streamId, final int code)
    {
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(FrameEncoder.HEADER + 4));
        final int body = encoder.header(buffer, 0, FrameEncoder.HEADER + 4, FrameType.CANCEL, 0, streamId);
        buffer.putInt(body, code);
        return buffer.array();
    }

    /** @return a REQUEST_N frame. */
    byte[] requestN(final int streamId, final int n)
    {
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(FrameEncoder.HEADER + 4));
        final int body = encoder.header(buffer, 0, FrameEncoder.HEADER + 4, FrameType.REQUEST_N, 0, streamId);
        buffer.putInt(body, n);
        return buffer.array();
    }

    /** @return the ACK of a PING, echoing its payload. */
    byte[] pingAck(final long payload)
    {
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(FrameEncoder.HEADER + 8));
        final int body = encoder.header(buffer, 0, FrameEncoder.HEADER + 8, FrameType.PING, FrameType.Flags.ACK, 0);
        buffer.putLong(body, payload);
        return buffer.array();
    }

    /** @return a PING frame (not an ACK). */
    byte[] ping(final long payload)
    {
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(FrameEncoder.HEADER + 8));
        final int body = encoder.header(buffer, 0, FrameEncoder.HEADER + 8, FrameType.PING, 0, 0);
        buffer.putLong(body, payload);
        return buffer.array();
    }

    /** @return the frames as one transport message. */
    static byte[] concat(final byte[]... frames)
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (final byte[] frame : frames)
        {
            out.writeBytes(frame);
        }
        return out.toByteArray();
    }

    /** @return the bytes gzipped. */
    static byte[] gzip(final byte[] plain)
    {
        try
        {
            final ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (GZIPOutputStream gz = new GZIPOutputStream(out))
            {
                gz.write(plain);
            }
            return out.toByteArray();
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException(e);
        }
    }

    /** @return every frame written to the connection (each a little-endian buffer from its header), in order. */
    static List<ByteBuffer> written(final RecordingConnection transport)
    {
        final List<byte[]> messages;
        synchronized (transport.messages)
        {
            messages = new ArrayList<>(transport.messages);
        }
        final List<ByteBuffer> frames = new ArrayList<>();
        for (final byte[] message : messages)
        {
            final ByteBuffer all = ByteBuffer.wrap(message).order(ByteOrder.LITTLE_ENDIAN);
            for (int at = 0; at + FrameHeaderFlyweight.HEADER_LENGTH <= message.length; )
            {
                final int length = all.getInt(at);
                frames.add(all.duplicate().position(at).limit(at + length).slice().order(ByteOrder.LITTLE_ENDIAN));
                at += length;
            }
        }
        return frames;
    }
}
