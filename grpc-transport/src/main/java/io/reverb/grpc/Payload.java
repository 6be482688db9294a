package io.reverb.grpc;

import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.reverb.rpc.Marshaller;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;

/**
 * One grpc-java message in flight over Reverb: the stream grpc-java's marshaller produced (outbound) or the bytes
 * that arrived (inbound). Its {@link #MARSHALLER} writes the stream straight into the transport's claimed buffer,
 * registered memory for shm/tcp/rdma: {@link Drainable} streams (protobuf's) drain into it without an intermediate
 * array.
 */
final class Payload
{
    /** Marshals payloads: the grpc-java marshaller already produced the bytes, this only moves them. */
    static final Marshaller<Payload> MARSHALLER = new Marshaller<>()
    {
        @Override
        public int serializedSize(final Payload value)
        {
            return value.length;
        }

        @Override
        public void write(final Payload value, final ByteBuffer target)
        {
            value.writeTo(target);
        }

        @Override
        public Payload read(final ByteBuffer source)
        {
            final byte[] bytes = new byte[source.remaining()];
            source.get(bytes);
            return new Payload(new Inbound(bytes), bytes.length);
        }
    };

    private final InputStream stream;
    private final int length;

    private Payload(final InputStream stream, final int length)
    {
        this.stream = stream;
        this.length = length;
    }

    /**
     * @param stream what grpc-java's marshaller returned; read fully when its length is not known.
     * @return the payload.
     */
    static Payload outbound(final InputStream stream)
    {
        try
        {
            if (stream instanceof KnownLength)
            {
                return new Payload(stream, stream.available());
            }
            final byte[] bytes = stream.readAllBytes();
            return new Payload(new Inbound(bytes), bytes.length);
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException("cannot read message from marshaller", e);
        }
    }

    /**
     * @return the message as grpc-java's marshaller parses it.
     */
    InputStream stream()
    {
        return stream;
    }

    /**
     * @return serialized length.
     */
    int length()
    {
        return length;
    }

    private void writeTo(final ByteBuffer target)
    {
        try
        {
            if (stream instanceof Drainable)
            {
                ((Drainable)stream).drainTo(new ByteBufferOutputStream(target));
            }
            else if (target.hasArray())
            {
                final int at = target.arrayOffset() + target.position();
                int done = 0;
                while (done < length)
                {
                    final int n = stream.read(target.array(), at + done, length - done);
                    if (n < 0)
                    {
                        throw new IOException("message stream ended after " + done + " of " + length + " bytes");
                    }
                    done += n;
                }
            }
            else
            {
                final byte[] chunk = new byte[Math.min(length, 8192)];
                int done = 0;
                while (done < length)
                {
                    final int n = stream.read(chunk, 0, Math.min(chunk.length, length - done));
                    if (n < 0)
                    {
                        throw new IOException("message stream ended after " + done + " of " + length + " bytes");
                    }
                    target.put(chunk, 0, n);
                    done += n;
                }
            }
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException("cannot write message", e);
        }
    }

    /** A received message: grpc-java's parsers recognise {@link KnownLength} and size their buffers from it. */
    static final class Inbound extends ByteArrayInputStream implements KnownLength
    {
        Inbound(final byte[] bytes)
        {
            super(bytes);
        }
    }

    /** Lets a {@link Drainable} write into the claimed buffer. */
    private static final class ByteBufferOutputStream extends OutputStream
    {
        private final ByteBuffer target;

        ByteBufferOutputStream(final ByteBuffer target)
        {
            this.target = target;
        }

        @Override
        public void write(final int b)
        {
            target.put((byte)b);
        }

        @Override
        public void write(final byte[] b, final int off, final int len)
        {
            target.put(b, off, len);
        }
    }
}
