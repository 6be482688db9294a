package io.reverb.rpc.internal;

import io.reverb.rpc.Marshaller;
import java.nio.ByteBuffer;

/**
 * A message serialized before its frame is claimed, because it was to be compressed: the frame's claim needs the
 * compressed length. Either compressed (the body of a COMPRESSED MESSAGE: codec name, then the compressed bytes) or
 * plain (compression would not have shrunk it: the serialized message as it is). Frames carry it with
 * {@link #MARSHALLER}, which {@link FrameEncoder#message} recognises to set the COMPRESSED flag.
 */
final class EncodedMessage
{
    /** Writes the bytes as they are; never reads (inbound messages are decompressed into a plain buffer). */
    static final Marshaller<EncodedMessage> MARSHALLER = new Marshaller<>()
    {
        @Override
        public int serializedSize(final EncodedMessage value)
        {
            return value.length;
        }

        @Override
        public void write(final EncodedMessage value, final ByteBuffer target)
        {
            target.put(value.bytes, 0, value.length);
        }

        @Override
        public EncodedMessage read(final ByteBuffer source)
        {
            throw new UnsupportedOperationException("an outbound-only marshaller");
        }
    };

    final byte[] bytes;
    final int length;
    final boolean compressed;

    EncodedMessage(final byte[] bytes, final int length, final boolean compressed)
    {
        this.bytes = bytes;
        this.length = length;
        this.compressed = compressed;
    }
}
