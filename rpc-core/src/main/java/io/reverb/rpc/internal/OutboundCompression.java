package io.reverb.rpc.internal;

import io.reverb.rpc.Marshaller;
import io.reverb.rpc.compression.Codec;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * What one call's outbound messages are compressed with: a codec and the size below which a message goes as it is.
 * Immutable. A message is compressed on the thread that sends it, before its frame is claimed (never under the
 * connection's write lock), and sent plain when compressing would not shrink it.
 */
final class OutboundCompression
{
    /** Nothing is compressed. */
    static final OutboundCompression NONE = new OutboundCompression(null, Integer.MAX_VALUE);

    private final Codec codec;
    private final int minSize;
    private final byte[] name;

    OutboundCompression(final Codec codec, final int minSize)
    {
        this.codec = codec;
        this.minSize = minSize;
        this.name = codec == null ? null : codec.name().getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * @return the codec, or null for none.
     */
    Codec codec()
    {
        return codec;
    }

    /**
     * @param payloadLength a message's serialized size.
     * @return whether the message is to be compressed.
     */
    boolean applies(final int payloadLength)
    {
        return codec != null && payloadLength >= minSize;
    }

    /**
     * Serializes the message and compresses it (call only when {@link #applies}).
     *
     * @param marshaller    the message's marshaller.
     * @param value         the message.
     * @param payloadLength its serialized size.
     * @return the compressed body, or the plain message when compression did not shrink it.
     * @throws IOException if the codec fails.
     */
    <T> EncodedMessage encode(final Marshaller<T> marshaller, final T value, final int payloadLength) throws IOException
    {
        final byte[] plain = new byte[payloadLength];
        final ByteBuffer target = ByteBuffer.wrap(plain);
        marshaller.write(value, target);
        final Output out = new Output(Math.max(256, payloadLength >>> 2));
        out.write(name.length);
        out.write(name);
        try (OutputStream compressing = codec.compress(out))
        {
            compressing.write(plain);
        }
        if (out.size() >= payloadLength)
        {
            return new EncodedMessage(plain, payloadLength, false);
        }
        return new EncodedMessage(out.array(), out.size(), true);
    }

    @Override
    public String toString()
    {
        return codec == null ? "identity" : codec.name() + " from " + minSize + " bytes";
    }

    /** A byte array output whose array is handed over without a copy. */
    private static final class Output extends ByteArrayOutputStream
    {
        Output(final int size)
        {
            super(size);
        }

        byte[] array()
        {
            return buf;
        }
    }
}
