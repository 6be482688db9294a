package io.reverb.rpc.protobuf;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.ExtensionRegistryLite;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;
import com.google.protobuf.UnsafeByteOperations;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.Status;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@link Marshaller} for protobuf messages that writes with {@link CodedOutputStream} straight into the transport's
 * buffer (registered memory for RDMA): no intermediate {@code byte[]} on the send side.
 *
 * <h2>Reading large messages: two modes</h2>
 * protobuf-java 4.36 has no decoder over direct memory and no {@code ByteString} over a {@code ByteBuffer} (the
 * {@code UnsafeDirectNioDecoder} and {@code NioByteString} of the 3.x and early 4.x releases are gone): a message in
 * registered memory is copied into a heap array once, and its {@code bytes} fields alias that array.
 * <ul>
 *   <li>{@link #of(MessageLite)}, the default: new arrays per large message, owned by the message (safe whatever
 *   the application does with it). A singular {@code bytes} field of more than 256 KiB of a full (descriptor-backed)
 *   message type is read as a rope of 256 KiB arrays, so that a 1 MiB payload is not one 1 MiB array (a G1
 *   humongous object, whose garbage starts concurrent collections); other large messages are one array each. The
 *   transports' pollers allocate those 256 KiB arrays ahead of time while they wait ({@link #prepareIdle()}): new
 *   arrays, each given to one message only, zeroed before the message arrives.</li>
 *   <li>{@link #aliasing(MessageLite)}, opt-in: messages of {@value #LEND_THRESHOLD} bytes and more are parsed from
 *   an array lent from a shared pool, and their {@code bytes} fields alias it. rpc-core gives the array back when
 *   the message's lifetime ends ({@link Marshaller#release(Object)}: on the client, when the {@code onNext} that
 *   delivered the response returns; on the server, when a unary or server-streaming call's last frame has been
 *   written); the next large message may then overwrite it. Keep nothing of such a message beyond that lifetime
 *   (copy what you keep: {@code ByteString.copyFrom(...)}), and do not hand it to another call from the client's
 *   {@code onNext}. No garbage per large message, so the heap's size and the collector no longer matter. An array
 *   whose lifetime cannot be bounded (a request of a client-streaming call) is never reused.
 *   {@link #aliasing(MessageLite, boolean)} with {@code poisonReleasedArrays} makes a use after release visible in
 *   tests, for the messages of that marshaller only (there is no JVM-wide switch).</li>
 * </ul>
 * The default cannot lend pooled arrays and take them back once the garbage collector proves a message unreachable
 * (a {@code Cleaner}): a {@code bytes} field's {@code asReadOnlyByteBuffer()}, {@code substring()} and
 * {@code newInput()} reference the array but neither the message nor the field, so they can outlive both and would
 * see the next message's bytes. Only the array's own unreachability would prove it unused, and then it is gone.
 *
 * @param <T> message type.
 */
public final class ProtoMarshaller<T extends MessageLite> implements Marshaller<T>
{
    private static final int SMALL_MESSAGE = 1024;
    /** In {@link #aliasing(MessageLite)} mode, messages of at least this many bytes are parsed from a lent array. */
    public static final int LEND_THRESHOLD = 64 * 1024;
    /** Lent arrays one marshaller remembers for their release; beyond that the oldest are forgotten. */
    static final long MAX_LENT_BYTES = 128L << 20;
    private static final ThreadLocal<Encoder> ENCODERS = ThreadLocal.withInitial(Encoder::new);
    /** Misses after which a thread's encoder takes {@link #local}'s place: see {@link #encoder()}. */
    private static final int TAKE_OVER_AFTER_MISSES = 64;

    private final T defaultInstance;
    private final Parser<T> parser;
    private final boolean aliasing;
    /**
     * Default mode: reads large bytes fields as ropes of small arrays; null until the first message over
     * {@link LargeFieldSplitter#CHUNK} bytes. Made then, not here: it reads the type's descriptor, and building a
     * descriptor runs protobuf's own parsers, whose call profiles in shared protobuf code then cost every small message
     * of the JVM an allocation (the parser's builder, no longer scalar-replaced: +130 bytes per unary call measured).
     * Immutable once made; a race makes it twice, harmlessly.
     */
    private LargeFieldSplitter<T> splitter;
    /**
     * The encoder of the thread that uses this marshaller most, looked up without the thread-local map (a measurable
     * part of a small call's cost: two lookups per message each way). Only its owner uses it (checked on every use);
     * a plain field, safely read by any thread because the owner is final. See {@link #encoder()}.
     */
    private Encoder local;
    /** Aliasing mode: fill arrays with {@code 0xDB} when this marshaller gives them back (debugging aid). */
    private final boolean poisonReleasedArrays;
    /**
     * Aliasing mode: each message read from a lent array, and that array, until released, oldest first; at most
     * {@link #MAX_LENT_BYTES} of arrays are remembered (a message never released, e.g. of a cancelled call, is
     * forgotten: its array is left to the collector, never reused).
     */
    private final LinkedHashMap<Lease, byte[]> lent;
    private long lentBytes;
    /**
     * Bytes of messages over {@link #SMALL_MESSAGE} bytes copied out of the transport's direct memory, counted at each
     * copy (see {@link #largeBytesCopiedIn()}). Not counted for small messages, whose path must stay free of shared
     * writes.
     */
    private final LongAdder largeBytesCopiedIn = new LongAdder();

    @SuppressWarnings("unchecked")
    private ProtoMarshaller(final T defaultInstance, final boolean aliasing, final boolean poisonReleasedArrays)
    {
        this.defaultInstance = Objects.requireNonNull(defaultInstance, "defaultInstance");
        this.parser = (Parser<T>)defaultInstance.getParserForType();
        this.aliasing = aliasing;
        this.poisonReleasedArrays = poisonReleasedArrays;
        this.lent = aliasing ? new LinkedHashMap<>() : null;
    }

    /**
     * @param defaultInstance the message type's default instance, e.g. {@code HelloRequest.getDefaultInstance()}.
     * @param <T>             message type.
     * @return a marshaller whose messages own their bytes.
     */
    public static <T extends MessageLite> Marshaller<T> of(final T defaultInstance)
    {
        return new ProtoMarshaller<>(defaultInstance, false, false);
    }

    /**
     * A marshaller whose large messages ({@value #LEND_THRESHOLD} bytes and more) are parsed from a pooled array that
     * their {@code bytes} fields alias, valid only for the lifetime described in the class documentation.
     *
     * @param defaultInstance the message type's default instance.
     * @param <T>             message type.
     * @return a marshaller in aliasing mode.
     */
    public static <T extends MessageLite> Marshaller<T> aliasing(final T defaultInstance)
    {
        return new ProtoMarshaller<>(defaultInstance, true, false);
    }

    /**
     * {@link #aliasing(MessageLite)}, with a debugging aid: when {@code poisonReleasedArrays} is true, the arrays this
     * marshaller gives back are filled with {@code 0xDB} before they can be reused, so that a message kept beyond its
     * lifetime shows as garbage at once instead of as another message's bytes later. Costs a fill per large message.
     * It applies to this marshaller's messages only: other marshallers of the JVM are unaffected.
     *
     * @param defaultInstance      the message type's default instance.
     * @param poisonReleasedArrays true to fill released arrays.
     * @param <T>                  message type.
     * @return a marshaller in aliasing mode.
     */
    public static <T extends MessageLite> Marshaller<T> aliasing(final T defaultInstance,
        final boolean poisonReleasedArrays)
    {
        return new ProtoMarshaller<>(defaultInstance, true, poisonReleasedArrays);
    }

    /**
     * @return true if this marshaller fills the arrays it gives back ({@link #aliasing(MessageLite, boolean)}).
     */
    public boolean poisonsReleasedArrays()
    {
        return poisonReleasedArrays;
    }

    /**
     * @return true if this marshaller lends pooled arrays to large messages.
     */
    public boolean isAliasing()
    {
        return aliasing;
    }

    /**
     * @return the default instance.
     */
    public T defaultInstance()
    {
        return defaultInstance;
    }

    /**
     * For transports: bounded work for a thread that delivers messages (a poller) and found nothing to do. If the
     * default marshaller ({@link #of}) has read a large message on this thread, allocates one fresh
     * {@value LargeFieldSplitter#CHUNK}-byte array for the next one, up to as many as the largest one took (at most
     * 4 MiB per thread), so that the JVM's zeroing and the first touch of new memory happen while the thread waits
     * rather than between a message's arrival and its delivery. The arrays are new and each becomes part of exactly
     * one message: nothing is reused, no lifetime rule. Does nothing on other threads, and costs a thread-local
     * lookup when there is nothing to prepare.
     *
     * @return true if it allocated an array (there may be more to prepare), false if there was nothing to do.
     */
    public static boolean prepareIdle()
    {
        return FreshChunks.prepare();
    }

    @Override
    public int serializedSize(final T value)
    {
        // protobuf caches the size in the message, so the write below does not compute it again
        return value.getSerializedSize();
    }

    @Override
    public void write(final T value, final ByteBuffer target)
    {
        // Small messages (the common case) go through this thread's reusable encoder: CodedOutputStream cannot be
        // re-targeted, and a new one over a direct buffer costs two objects (~150 bytes) per message.
        final Encoder encoder = value.getSerializedSize() <= SMALL_MESSAGE ? encoder() : null;
        if (encoder != null && encoder.target == null)
        {
            encoder.target = target;
            try
            {
                value.writeTo(encoder.output);
                encoder.output.flush();
            }
            catch (final IOException | RuntimeException e)
            {
                encoder.reset(); // its stream may hold part of this message: never reuse that
                throw serializationFailed(e);
            }
            finally
            {
                encoder.target = null;
            }
            return;
        }
        try
        {
            final CodedOutputStream output = CodedOutputStream.newInstance(target);
            value.writeTo(output);
            output.flush();
        }
        catch (final IOException e)
        {
            throw serializationFailed(e);
        }
    }

    /**
     * This thread's encoder: {@link #local} when this thread owns it, else the thread-local one, which takes
     * {@link #local}'s place after {@value #TAKE_OVER_AFTER_MISSES} misses of its thread (a marshaller used by one
     * thread, such as a transport's poller, finds its encoder there from then on; threads that take turns replace it
     * rarely, so the field is not a line written on every call).
     */
    private Encoder encoder()
    {
        final Thread thread = Thread.currentThread();
        final Encoder cached = local;
        if (cached != null && cached.owner == thread)
        {
            return cached;
        }
        final Encoder own = ENCODERS.get();
        if (++own.misses >= TAKE_OVER_AFTER_MISSES)
        {
            own.misses = 0;
            local = own;
        }
        return own;
    }

    private static RuntimeException serializationFailed(final Exception e)
    {
        return Status.INTERNAL.withDescription("protobuf serialization failed: " + e.getMessage())
            .withCause(e).asException();
    }

    /**
     * A per-thread {@link CodedOutputStream} over a small heap buffer whose flush copies into the current target
     * (registered memory): one copy of a small message, no allocation; and a reusable decoder small messages are
     * parsed with.
     */
    private static final class Encoder extends OutputStream
    {
        CodedOutputStream output = CodedOutputStream.newInstance(this, SMALL_MESSAGE);
        /** What {@link #decoder} reads: the message being parsed, or nothing (then the decoder is free). */
        final SourceStream source = new SourceStream();
        /**
         * Reused for every small direct message this thread parses (a {@code CodedInputStream} cannot be re-targeted
         * at another array, but one over a stream can be fed message after message): its array holds one small
         * message whole, so each parse fills it once and finds the end on the next read.
         */
        CodedInputStream decoder = newDecoder(source);
        /** The thread whose encoder this is: the only one that uses it. */
        final Thread owner = Thread.currentThread();
        /** Its thread's lookups that missed a marshaller's {@code local} (that thread only). */
        int misses;
        ByteBuffer target;

        /** After a failed write: a new stream, nothing of the failed message in it. */
        void reset()
        {
            output = CodedOutputStream.newInstance(this, SMALL_MESSAGE);
        }

        /** After a parse that did not end cleanly: a new decoder, nothing of that message or its limits in it. */
        void resetDecoder()
        {
            decoder = newDecoder(source);
        }

        private static CodedInputStream newDecoder(final SourceStream source)
        {
            final CodedInputStream decoder = CodedInputStream.newInstance(source, SMALL_MESSAGE);
            decoder.enableAliasing(false); // its array is reused: bytes fields must be copies (a stream copies anyway)
            return decoder;
        }

        @Override
        public void write(final int b)
        {
            target.put((byte)b);
        }

        @Override
        public void write(final byte[] bytes, final int offset, final int length)
        {
            target.put(bytes, offset, length);
        }
    }

    /**
     * The message being parsed, as the {@link InputStream} a reusable decoder reads: absolute reads from the buffer,
     * so the caller's position and limit stay as they were. Owned by one thread's {@link Encoder}.
     */
    private static final class SourceStream extends InputStream
    {
        ByteBuffer buffer;
        private int position;
        private int limit;

        void wrap(final ByteBuffer source, final int length)
        {
            buffer = source;
            position = source.position();
            limit = position + length;
        }

        int remaining()
        {
            return limit - position;
        }

        @Override
        public int read()
        {
            return position < limit ? buffer.get(position++) & 0xFF : -1;
        }

        @Override
        public int read(final byte[] target, final int offset, final int length)
        {
            final int n = Math.min(length, limit - position);
            if (n <= 0)
            {
                return length == 0 ? 0 : -1;
            }
            buffer.get(position, target, offset, n);
            position += n;
            return n;
        }

        @Override
        public int available()
        {
            return limit - position;
        }
    }

    @Override
    public void release(final T message)
    {
        if (lent == null || message == null)
        {
            return;
        }
        synchronized (lent)
        {
            final byte[] array = lent.remove(new Lease(message));
            if (array != null)
            {
                lentBytes -= array.length;
                // under the lock, so that lentArrays() counts an array until it is back (and poisoned, in tests)
                LendingPool.SHARED.giveBack(array, poisonReleasedArrays);
            }
        }
    }

    /**
     * Copies of the received payload, counted (tests, diagnostics): every byte this marshaller copied out of the
     * transport's direct (registered) memory while reading messages of more than 1 KiB. A
     * message read with one copy, as every mode here does, adds its length (a large {@code bytes} field's earlier,
     * overridden occurrences are not copied at all); a second copy of the same bytes would show as twice that.
     *
     * @return bytes copied out of direct memory by reads of large messages since this marshaller was made.
     */
    public long largeBytesCopiedIn()
    {
        return largeBytesCopiedIn.sum();
    }

    /**
     * @return arrays lent to messages not yet released (tests, leak checks).
     */
    public int lentArrays()
    {
        if (lent == null)
        {
            return 0;
        }
        synchronized (lent)
        {
            return lent.size();
        }
    }

    private T readLent(final ByteBuffer source)
    {
        final int length = source.remaining();
        final byte[] array = LendingPool.SHARED.take(length);
        source.get(source.position(), array, 0, length);
        if (!source.hasArray())
        {
            largeBytesCopiedIn.add(length);
        }
        final T message;
        try
        {
            final CodedInputStream input = UnsafeByteOperations.unsafeWrap(array, 0, length).newCodedInput();
            input.enableAliasing(true);
            message = parser.parseFrom(input, ExtensionRegistryLite.getEmptyRegistry());
            input.checkLastTagWas(0);
        }
        catch (final InvalidProtocolBufferException e)
        {
            LendingPool.SHARED.giveBack(array, poisonReleasedArrays);
            throw invalidMessage(e);
        }
        synchronized (lent)
        {
            lent.put(new Lease(message), array);
            lentBytes += array.length;
            final Iterator<byte[]> oldest = lent.values().iterator();
            while (lentBytes > MAX_LENT_BYTES && oldest.hasNext())
            {
                // forgotten, not given back: its message may still be in use
                lentBytes -= oldest.next().length;
                oldest.remove();
            }
        }
        return message;
    }

    @Override
    public T read(final ByteBuffer source)
    {
        final int length = source.remaining();
        if (aliasing && length >= LEND_THRESHOLD)
        {
            return readLent(source);
        }
        if (length > SMALL_MESSAGE && !source.hasArray())
        {
            return readLarge(source, length);
        }
        try
        {
            final CodedInputStream input;
            if (source.hasArray())
            {
                input = CodedInputStream.newInstance(source);
                // the buffer is only valid during this call: parsed bytes fields must be copies, never aliases
                input.enableAliasing(false);
            }
            else
            {
                // small, direct: this thread's reusable decoder (no CodedInputStream per message)
                final Encoder encoder = encoder();
                if (encoder.source.buffer == null)
                {
                    return readSmallDirect(encoder, source, length);
                }
                // a parse within a parse on this thread (a parser that calls back into a marshaller): its own copy
                final byte[] copy = new byte[length];
                source.get(source.position(), copy, 0, length);
                input = CodedInputStream.newInstance(copy, 0, length);
                input.enableAliasing(false);
            }
            final T message = parser.parseFrom(input, ExtensionRegistryLite.getEmptyRegistry());
            input.checkLastTagWas(0);
            return message;
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw invalidMessage(e);
        }
    }

    /**
     * A small message in direct memory, parsed by this thread's decoder, which reads it straight from the buffer into
     * its own array (the one copy the scratch array used to take) and copies bytes fields out of that array. A decoder
     * that failed mid-message may hold part of it, or an unbalanced limit: it is replaced, never reused.
     */
    private T readSmallDirect(final Encoder encoder, final ByteBuffer source, final int length)
    {
        final SourceStream stream = encoder.source;
        stream.wrap(source, length);
        boolean clean = false;
        try
        {
            final CodedInputStream input = encoder.decoder;
            input.resetSizeCounter();
            final T message = parser.parseFrom(input, ExtensionRegistryLite.getEmptyRegistry());
            input.checkLastTagWas(0);
            // the parse ended at the end of the input (last tag 0): the decoder took every byte and holds none
            clean = stream.remaining() == 0;
            return message;
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw invalidMessage(e);
        }
        finally
        {
            stream.buffer = null;
            if (!clean)
            {
                encoder.resetDecoder();
            }
        }
    }

    /**
     * A large message in direct (registered) memory. protobuf-java 4.x has no decoder over direct memory: it would copy
     * the whole message into a new heap array and then copy every bytes field out of that array again.
     */
    private T readLarge(final ByteBuffer source, final int length)
    {
        try
        {
            if (length > LargeFieldSplitter.CHUNK)
            {
                // its large bytes fields as ropes of small arrays (made ahead of time by prepareIdle() where this
                // thread had time): no humongous array, no lifetime rule
                LargeFieldSplitter<T> splitter = this.splitter;
                if (splitter == null)
                {
                    splitter = LargeFieldSplitter.forType(defaultInstance);
                    this.splitter = splitter;
                }
                final T split = splitter.read(source, parser, largeBytesCopiedIn);
                if (split != null)
                {
                    return split;
                }
            }
            // one private copy, marked immutable so that bytes fields alias it (one copy of a 1 MiB payload, not two;
            // a plain newInstance(byte[]) is mutable, and protobuf copies fields out of it)
            final byte[] copy = new byte[length];
            source.get(source.position(), copy);
            largeBytesCopiedIn.add(length);
            final CodedInputStream input = UnsafeByteOperations.unsafeWrap(copy).newCodedInput();
            input.enableAliasing(true);
            final T message = parser.parseFrom(input, ExtensionRegistryLite.getEmptyRegistry());
            input.checkLastTagWas(0);
            return message;
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw invalidMessage(e);
        }
    }

    private static RuntimeException invalidMessage(final InvalidProtocolBufferException e)
    {
        return Status.INTERNAL.withDescription("invalid protobuf message: " + e.getMessage())
            .withCause(e).asException();
    }

    /** A message as a key by identity (protobuf's equals and hashCode read the whole message). */
    private static final class Lease
    {
        private final Object message;

        Lease(final Object message)
        {
            this.message = message;
        }

        @Override
        public boolean equals(final Object other)
        {
            return other instanceof Lease && ((Lease)other).message == message;
        }

        @Override
        public int hashCode()
        {
            return System.identityHashCode(message);
        }
    }

    /**
     * Heap arrays lent to large messages by aliasing marshallers, shared by all of them: size classes in quarter steps
     * of a power of two (a 1 MiB message takes a 1.25 MiB array), at most {@link #MAX_IDLE_BYTES} kept idle; beyond
     * that a given-back array is left to the collector. Never blocks: an empty class allocates.
     */
    static final class LendingPool
    {
        static final LendingPool SHARED = new LendingPool();
        static final long MAX_IDLE_BYTES = 64L << 20;
        private static final byte POISON = (byte)0xDB;

        private final Map<Integer, ArrayDeque<byte[]>> idle = new HashMap<>();
        private long idleBytes;

        static int sizeClass(final int length)
        {
            if (length <= 4096)
            {
                return 4096;
            }
            final int shift = 31 - Integer.numberOfLeadingZeros(length - 1) - 2;
            final long step = 1L << shift;
            final long size = (length + step - 1) / step * step;
            return (int)Math.min(size, Integer.MAX_VALUE - 8);
        }

        byte[] take(final int length)
        {
            final int size = sizeClass(length);
            synchronized (this)
            {
                final ArrayDeque<byte[]> free = idle.get(size);
                final byte[] array = free != null ? free.pollFirst() : null;
                if (array != null)
                {
                    idleBytes -= array.length;
                    return array;
                }
            }
            return new byte[size];
        }

        /**
         * @param array  an array {@link #take} returned, no longer read by anyone.
         * @param poison true to fill it with {@code 0xDB} first (the giving marshaller's setting).
         */
        void giveBack(final byte[] array, final boolean poison)
        {
            if (poison)
            {
                Arrays.fill(array, POISON);
            }
            synchronized (this)
            {
                if (idleBytes + array.length > MAX_IDLE_BYTES)
                {
                    return;
                }
                idle.computeIfAbsent(array.length, k -> new ArrayDeque<>()).addFirst(array);
                idleBytes += array.length;
            }
        }

        synchronized long idleBytes()
        {
            return idleBytes;
        }
    }
}
