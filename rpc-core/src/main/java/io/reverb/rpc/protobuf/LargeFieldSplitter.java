package io.reverb.rpc.protobuf;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.ExtensionRegistryLite;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;
import com.google.protobuf.UninitializedMessageException;
import com.google.protobuf.UnsafeByteOperations;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

/**
 * Reads a large message of the default ({@link ProtoMarshaller#of}) mode out of registered memory so that its large
 * {@code bytes} fields are made of {@value #CHUNK}-byte arrays (a rope {@link ByteString}) instead of one array as
 * large as the message.
 *
 * <p>Why: with G1, an array of half a heap region or more is a humongous object (a 1 MiB array with the 1 MiB regions
 * of heaps below 4 GiB). Humongous garbage is allocated outside the young generation, counts as old until the next
 * young pause, and starts a concurrent marking cycle (with its remark pause) whenever the old generation looks full:
 * a service receiving 1 MiB messages at a few thousand a second spent 4-9% of its time in those pauses, plus the
 * marking, on top of the copies. Arrays of {@value #CHUNK} bytes are ordinary young objects whatever the region size,
 * and die young. The message still owns its bytes (fresh arrays, never lent): nothing to release, no lifetime rule.
 *
 * <p>What it splits: singular {@code bytes} fields of the message itself (not of nested messages, not in a
 * {@code oneof}, not extensions) whose last occurrence on the wire is larger than {@value #CHUNK} bytes, for full
 * (descriptor-backed) message types. The wire is scanned once; the fields split are cut out of it, the rest is parsed
 * as usual (from its own array, which the message owns), and the fields are set afterwards (last occurrence wins,
 * as in the parser). Anything else — lite messages, groups, malformed input — returns null and is parsed the usual
 * way, which reports any error.
 *
 * @param <T> message type.
 */
final class LargeFieldSplitter<T extends MessageLite>
{
    /** Size of the arrays a large field is made of, and the field size from which it is split. */
    static final int CHUNK = 256 * 1024;
    private static final int WIRE_VARINT = 0;
    private static final int WIRE_FIXED64 = 1;
    private static final int WIRE_LENGTH_DELIMITED = 2;
    private static final int WIRE_FIXED32 = 5;
    /** Per occurrence: tag start, value start, value end, candidate index. */
    private static final int OCCURRENCE_INTS = 4;

    private final int[] numbers;
    private final FieldDescriptor[] fields;

    private LargeFieldSplitter(final int[] numbers, final FieldDescriptor[] fields)
    {
        this.numbers = numbers;
        this.fields = fields;
    }

    /**
     * @param defaultInstance a message type's default instance.
     * @param <T>             message type.
     * @return a splitter for the type; one that splits nothing if the type is lite or has no singular bytes field.
     */
    static <T extends MessageLite> LargeFieldSplitter<T> forType(final T defaultInstance)
    {
        if (!(defaultInstance instanceof Message))
        {
            return new LargeFieldSplitter<>(new int[0], new FieldDescriptor[0]);
        }
        final List<FieldDescriptor> candidates = new ArrayList<>();
        for (final FieldDescriptor field : ((Message)defaultInstance).getDescriptorForType().getFields())
        {
            if (!field.isRepeated() && field.getType() == FieldDescriptor.Type.BYTES &&
                field.getRealContainingOneof() == null)
            {
                candidates.add(field);
            }
        }
        final int[] numbers = new int[candidates.size()];
        for (int i = 0; i < numbers.length; i++)
        {
            numbers[i] = candidates.get(i).getNumber();
        }
        return new LargeFieldSplitter<>(numbers, candidates.toArray(new FieldDescriptor[0]));
    }

    /**
     * @param source the message, from its position to its limit (not modified; read with absolute gets).
     * @param parser the type's parser.
     * @param copied counts every byte copied out of {@code source} (the marshaller's count of copies out of transport
     *               memory: each byte of the message at most once, none when nothing is split).
     * @return the message with its large bytes fields split, or null if there is nothing to split here (parse as
     *     usual then).
     * @throws InvalidProtocolBufferException if the rest of the message does not parse, or lacks a required field.
     */
    @SuppressWarnings("unchecked")
    T read(final ByteBuffer source, final Parser<T> parser, final LongAdder copied)
        throws InvalidProtocolBufferException
    {
        if (numbers.length == 0)
        {
            return null;
        }
        final int start = source.position();
        final int end = source.limit();
        int[] occurrences = new int[OCCURRENCE_INTS * 4];
        int count = 0;
        int p = start;
        while (p < end)
        {
            final int tagStart = p;
            long read = varint32(source, p, end);
            if (read < 0)
            {
                return null;
            }
            final int tag = (int)read;
            p = (int)(read >>> 32);
            if (tag >>> 3 == 0)
            {
                return null;
            }
            switch (tag & 7)
            {
                case WIRE_VARINT ->
                {
                    p = skipVarint(source, p, end);
                    if (p < 0)
                    {
                        return null;
                    }
                }
                case WIRE_FIXED64 ->
                {
                    if (end - p < Long.BYTES)
                    {
                        return null;
                    }
                    p += Long.BYTES;
                }
                case WIRE_FIXED32 ->
                {
                    if (end - p < Integer.BYTES)
                    {
                        return null;
                    }
                    p += Integer.BYTES;
                }
                case WIRE_LENGTH_DELIMITED ->
                {
                    read = varint32(source, p, end);
                    if (read < 0)
                    {
                        return null;
                    }
                    final int length = (int)read;
                    p = (int)(read >>> 32);
                    if (length < 0 || length > end - p)
                    {
                        return null;
                    }
                    final int candidate = candidate(tag >>> 3);
                    if (candidate >= 0)
                    {
                        if (count * OCCURRENCE_INTS == occurrences.length)
                        {
                            occurrences = Arrays.copyOf(occurrences, occurrences.length * 2);
                        }
                        final int o = count++ * OCCURRENCE_INTS;
                        occurrences[o] = tagStart;
                        occurrences[o + 1] = p;
                        occurrences[o + 2] = p + length;
                        occurrences[o + 3] = candidate;
                    }
                    p += length;
                }
                default ->
                {
                    return null; // groups, invalid wire types: the parser decides
                }
            }
        }
        return split(source, start, end, occurrences, count, parser, copied);
    }

    @SuppressWarnings("unchecked")
    private T split(final ByteBuffer source, final int start, final int end, final int[] occurrences, final int count,
        final Parser<T> parser, final LongAdder copied) throws InvalidProtocolBufferException
    {
        // Per candidate, its last occurrence (the value the parser would keep); split it if that one is large.
        final int[] last = new int[fields.length];
        Arrays.fill(last, -1);
        for (int i = 0; i < count; i++)
        {
            last[occurrences[i * OCCURRENCE_INTS + 3]] = i;
        }
        final boolean[] cut = new boolean[fields.length];
        boolean any = false;
        for (int c = 0; c < fields.length; c++)
        {
            if (last[c] >= 0)
            {
                final int o = last[c] * OCCURRENCE_INTS;
                cut[c] = occurrences[o + 2] - occurrences[o + 1] > CHUNK;
                any |= cut[c];
            }
        }
        if (!any)
        {
            return null;
        }
        // The rest of the wire: every occurrence of a field split is cut out (earlier ones lose to the last anyway).
        int restLength = end - start;
        for (int i = 0; i < count; i++)
        {
            final int o = i * OCCURRENCE_INTS;
            if (cut[occurrences[o + 3]])
            {
                restLength -= occurrences[o + 2] - occurrences[o];
            }
        }
        final byte[] rest = new byte[restLength];
        int from = start;
        int filled = 0;
        for (int i = 0; i < count; i++)
        {
            final int o = i * OCCURRENCE_INTS;
            if (cut[occurrences[o + 3]])
            {
                source.get(from, rest, filled, occurrences[o] - from);
                copied.add(occurrences[o] - from);
                filled += occurrences[o] - from;
                from = occurrences[o + 2];
            }
        }
        source.get(from, rest, filled, end - from);
        copied.add(end - from);
        // The rest's array is the message's own (fresh): its bytes fields may alias it, as in the default mode.
        final CodedInputStream input = UnsafeByteOperations.unsafeWrap(rest).newCodedInput();
        input.enableAliasing(true);
        final T partial = parser.parsePartialFrom(input, ExtensionRegistryLite.getEmptyRegistry());
        input.checkLastTagWas(0);
        final Message.Builder builder = ((Message)partial).toBuilder();
        for (int c = 0; c < fields.length; c++)
        {
            if (cut[c])
            {
                final int o = last[c] * OCCURRENCE_INTS;
                builder.setField(fields[c], chunks(source, occurrences[o + 1], occurrences[o + 2], copied));
            }
        }
        final Message message = builder.buildPartial();
        if (!message.isInitialized())
        {
            throw new UninitializedMessageException(message).asInvalidProtocolBufferException();
        }
        return (T)message;
    }

    /**
     * @param copied counts the bytes copied out of {@code source}.
     * @return the bytes from {@code from} to {@code to} as a rope of fresh {@value #CHUNK}-byte arrays: taken from this
     *     thread's {@link FreshChunks} (allocated ahead while the thread was idle, never handed out before) when it has
     *     some, else allocated here; a last piece shorter than {@value #CHUNK} bytes is always allocated here.
     */
    static ByteString chunks(final ByteBuffer source, final int from, final int to, final LongAdder copied)
    {
        final int count = (to - from + CHUNK - 1) / CHUNK;
        final FreshChunks stash = FreshChunks.expect((to - from) / CHUNK); // full pieces: what the stash can serve
        final List<ByteString> pieces = new ArrayList<>(count);
        for (int p = from; p < to; p += CHUNK)
        {
            final int n = Math.min(CHUNK, to - p);
            final byte[] ready = n == CHUNK ? stash.take() : null;
            final byte[] piece = ready != null ? ready : new byte[n];
            source.get(p, piece, 0, n);
            copied.add(n);
            // a new array nobody else references, now this message's alone: wrapping it without a copy is safe
            pieces.add(UnsafeByteOperations.unsafeWrap(piece));
        }
        return ByteString.copyFrom(pieces); // concatenates as a rope, without copying the pieces
    }

    private int candidate(final int number)
    {
        for (int i = 0; i < numbers.length; i++)
        {
            if (numbers[i] == number)
            {
                return i;
            }
        }
        return -1;
    }

    /** @return (position after the varint) << 32 | its low 32 bits, or -1 if it is malformed or runs past end */
    private static long varint32(final ByteBuffer source, final int start, final int end)
    {
        long value = 0;
        int p = start;
        for (int shift = 0; shift < 64; shift += 7)
        {
            if (p >= end)
            {
                return -1;
            }
            final byte b = source.get(p++);
            value |= (long)(b & 0x7F) << shift;
            if (b >= 0)
            {
                if (value > 0xFFFF_FFFFL)
                {
                    return -1; // tags and lengths fit 32 bits
                }
                return (long)p << 32 | value;
            }
        }
        return -1;
    }

    /** @return the position after the varint at {@code start}, or -1 if it is malformed or runs past end */
    private static int skipVarint(final ByteBuffer source, final int start, final int end)
    {
        for (int p = start; p < end && p - start < 10; p++)
        {
            if (source.get(p) >= 0)
            {
                return p + 1;
            }
        }
        return -1;
    }
}
