package io.reverb.grpc;

import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.reverb.rpc.Marshaller;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The bytes of one grpc-java message over Reverb: one that arrived, or one whose length its marshaller did not know.
 * Messages travel as {@link InputStream}s: an outbound one is the stream grpc-java's marshaller produced, itself when
 * its length is known ({@link #outbound}: protobuf's streams are, so a call's messages cost no object of their own
 * here). {@link #MARSHALLER} writes such a stream into the transport's claimed buffer, registered memory for
 * shm/tcp/rdma:
 * <ul>
 *   <li>a buffer with an array: the stream reads straight into it (protobuf's stream serializes the message there);
 *   </li>
 *   <li>registered memory, a message of up to {@link #SCRATCH_LIMIT} bytes: the stream reads into an array kept per
 *   thread, then one copy into the buffer; protobuf's stream serializes the message into that array, where draining
 *   it would allocate an array of the message's size (protobuf's own buffer) for every message;</li>
 *   <li>larger messages: {@link Drainable} streams (protobuf's) drain into the buffer, others are read through the
 *   per-thread array in pieces.</li>
 * </ul>
 * A message that arrived (or whose length its marshaller did not know) holds its bytes and is its own stream, a
 * {@link KnownLength} one: grpc-java's parsers size their buffers from it. grpc-java closes every message stream once
 * it has parsed it (or dropped it), and a stream closed is not read again (its Netty transport releases the buffer
 * under it then): so the array of a received message of up to {@link #RECYCLE_LIMIT} bytes, once closed, is kept by
 * the closing thread for the next message that thread receives (one array per thread; with
 * {@code directExecutor()} the transport's thread receives, parses and closes, and copies each small message into
 * the same array). An array closed on a thread whose own slot is taken goes to one slot shared by all threads, where
 * any thread receiving finds it once its own slot is empty: a blocking stub's caller closes the responses (its
 * thread parses them) while the transport's thread receives them, and without it the transport's thread would make
 * an array for every response. A closed received message reads as ended.
 */
final class Payload extends InputStream implements KnownLength
{
    /** The largest message written through the per-thread array in one piece (and the array's largest size). */
    static final int SCRATCH_LIMIT = 16 * 1024;
    /** Per thread: the array messages are read into on their way to registered memory. */
    private static final ThreadLocal<byte[]> SCRATCH = new ThreadLocal<>();
    /** The largest received message whose array is kept for the next one, once closed. */
    static final int RECYCLE_LIMIT = 4096;
    /** Per thread: a closed received message's array, for the next message received here (slot 0; null if none). */
    private static final ThreadLocal<byte[][]> RECYCLED = ThreadLocal.withInitial(() -> new byte[1][]);
    /** A closed received message's array that its closing thread had no room for, for any thread; null if none. */
    private static final AtomicReference<byte[]> SHARED = new AtomicReference<>();

    /**
     * Marshals grpc-java's messages: what its marshaller produced ({@link #outbound}) is written, what arrives is read
     * as a payload. The grpc-java marshaller already produced the bytes, this only moves them.
     */
    static final Codec MARSHALLER = new Codec();

    /** {@link #MARSHALLER}'s class: reads give payloads. */
    static final class Codec implements Marshaller<InputStream>
    {
        @Override
        public int serializedSize(final InputStream value)
        {
            return lengthOf(value);
        }

        @Override
        public void write(final InputStream value, final ByteBuffer target)
        {
            if (value instanceof Payload)
            {
                ((Payload)value).writeTo(target);
            }
            else
            {
                writeStream(value, lengthOf(value), target);
            }
        }

        @Override
        public Payload read(final ByteBuffer source)
        {
            final int length = source.remaining();
            final byte[] bytes = received(length);
            source.get(bytes, 0, length);
            return new Payload(bytes, length);
        }
    }

    private final int length;
    /** The bytes (the first {@link #length} of them); null once closed. */
    private byte[] bytes;
    /** As a stream over {@link #bytes}: the next byte to read. */
    private int position;

    private Payload(final byte[] bytes)
    {
        this(bytes, bytes.length);
    }

    private Payload(final byte[] bytes, final int length)
    {
        this.length = length;
        this.bytes = bytes;
    }

    /**
     * @param stream what grpc-java's marshaller returned.
     * @return the message to send: the stream itself when its length is known ({@link KnownLength}: protobuf's, and a
     * payload received), which {@link #MARSHALLER} then writes, without an object of its own; else a payload of its
     * bytes, read fully now.
     */
    static InputStream outbound(final InputStream stream)
    {
        if (stream instanceof KnownLength)
        {
            return stream;
        }
        try
        {
            return new Payload(stream.readAllBytes());
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException("cannot read message from marshaller", e);
        }
    }

    /**
     * @param message an outbound message ({@link #outbound}) or a payload that arrived, not yet read.
     * @return its serialized length: the bytes it has left to read ({@link KnownLength}).
     */
    static int lengthOf(final InputStream message)
    {
        if (message instanceof Payload)
        {
            return ((Payload)message).available();
        }
        try
        {
            return message.available();
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException("cannot read message length from marshaller", e);
        }
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
        if (bytes != null)
        {
            target.put(bytes, position, length - position);
        }
    }

    /**
     * Writes a stream of known length into the transport's buffer (see the class documentation for how).
     */
    private static void writeStream(final InputStream stream, final int length, final ByteBuffer target)
    {
        try
        {
            if (target.hasArray())
            {
                readFully(stream, target.array(), target.arrayOffset() + target.position(), length);
            }
            else if (length <= SCRATCH_LIMIT)
            {
                final byte[] scratch = scratch(length);
                readFully(stream, scratch, 0, length);
                target.put(scratch, 0, length);
            }
            else if (stream instanceof Drainable)
            {
                ((Drainable)stream).drainTo(new ByteBufferOutputStream(target));
            }
            else
            {
                final byte[] scratch = scratch(SCRATCH_LIMIT);
                int done = 0;
                while (done < length)
                {
                    final int n = stream.read(scratch, 0, Math.min(scratch.length, length - done));
                    if (n < 0)
                    {
                        throw new IOException("message stream ended after " + done + " of " + length + " bytes");
                    }
                    target.put(scratch, 0, n);
                    done += n;
                }
            }
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException("cannot write message", e);
        }
    }

    /**
     * Reads exactly {@code count} bytes of the stream into the array.
     */
    private static void readFully(final InputStream stream, final byte[] into, final int offset, final int count)
        throws IOException
    {
        int done = 0;
        while (done < count)
        {
            final int n = stream.read(into, offset + done, count - done);
            if (n < 0)
            {
                throw new IOException("message stream ended after " + done + " of " + count + " bytes");
            }
            done += n;
        }
    }

    /**
     * @param size at most {@link #SCRATCH_LIMIT}.
     * @return this thread's array, of at least size bytes.
     */
    private static byte[] scratch(final int size)
    {
        byte[] scratch = SCRATCH.get();
        if (scratch == null || scratch.length < size)
        {
            // grown in steps, so that a thread that writes small messages keeps a small array
            scratch = new byte[Math.min(SCRATCH_LIMIT, Math.max(size, scratch == null ? 256 : 2 * scratch.length))];
            SCRATCH.set(scratch);
        }
        return scratch;
    }

    // ---------------------------------------------------------------- the stream over the bytes (one reader)

    @Override
    public int read()
    {
        return bytes != null && position < length ? bytes[position++] & 0xff : -1;
    }

    @Override
    public int read(final byte[] into, final int offset, final int count)
    {
        Objects.checkFromIndexSize(offset, count, into.length);
        if (count == 0)
        {
            return 0;
        }
        final int n = Math.min(count, length - position);
        if (n <= 0 || bytes == null)
        {
            return -1;
        }
        System.arraycopy(bytes, position, into, offset, n);
        position += n;
        return n;
    }

    @Override
    public long skip(final long n)
    {
        final int skipped = (int)Math.max(0, Math.min(n, length - position));
        position += skipped;
        return skipped;
    }

    /**
     * @return the bytes left to read: all of them until read ({@link KnownLength}).
     */
    @Override
    public int available()
    {
        return bytes == null ? 0 : length - position;
    }

    /**
     * grpc-java is done with the message: a small received message's array is kept by this thread for the next
     * message it receives. Once only; the stream reads as ended afterwards.
     */
    @Override
    public void close()
    {
        final byte[] b = bytes;
        if (b == null)
        {
            return;
        }
        bytes = null;
        position = length;
        if (b.length > 0 && b.length <= RECYCLE_LIMIT) // an empty message's array is not worth keeping
        {
            final byte[][] slot = RECYCLED.get();
            final byte[] mine = slot[0];
            if (mine == null)
            {
                slot[0] = b;
            }
            else
            {
                // this thread keeps the larger one (it fits more messages), the other goes to the shared slot if free
                slot[0] = mine.length < b.length ? b : mine;
                SHARED.compareAndSet(null, mine.length < b.length ? mine : b);
            }
        }
    }

    /**
     * @param length a received message's length.
     * @return an array for it: this thread's kept one if it fits, else a new one of that length.
     */
    private static byte[] received(final int length)
    {
        if (length > 0 && length <= RECYCLE_LIMIT)
        {
            final byte[][] slot = RECYCLED.get();
            final byte[] kept = slot[0];
            if (kept != null && kept.length >= length)
            {
                slot[0] = null; // this message owns it until grpc-java closes it
                return kept;
            }
            final byte[] shared = SHARED.get();
            if (shared != null && shared.length >= length && SHARED.compareAndSet(shared, null))
            {
                return shared;
            }
        }
        return new byte[length];
    }

    /**
     * @return the array holding a received message's bytes, null once closed (tests: which array a message got).
     */
    Object array()
    {
        return bytes;
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
