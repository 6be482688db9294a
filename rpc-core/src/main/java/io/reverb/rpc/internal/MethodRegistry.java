package io.reverb.rpc.internal;

import io.reverb.rpc.ServiceDefinition.ServerMethodDefinition;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;

/**
 * Finds a method by the ASCII bytes of its name in a CALL frame, without building a String per call. Immutable
 * after construction.
 *
 * <p>Names are read eight bytes at a time: the hash is taken from the length and the name's first and last eight
 * bytes (two reads, whatever the name's length), and a candidate is compared word by word. A name shorter than eight
 * bytes is read byte by byte into one word (its first and last words are the same).
 */
final class MethodRegistry<T>
{
    private static final int WORD = Long.BYTES;

    /** A registered name as words (little-endian), and its method. */
    private static final class Entry<T>
    {
        final int length;
        final long first;
        final long last;
        /** Words at 8, 16, ... up to the last full word before {@link #last} (which may overlap them). */
        final long[] middle;
        final T definition;

        Entry(final byte[] name, final T definition)
        {
            this.length = name.length;
            final ByteBuffer bytes = ByteBuffer.wrap(name).order(ByteOrder.LITTLE_ENDIAN);
            this.first = firstWord(bytes, 0, name.length);
            this.last = lastWord(bytes, 0, name.length);
            this.middle = new long[middleWords(name.length)];
            for (int i = 0; i < middle.length; i++)
            {
                middle[i] = bytes.getLong((i + 1) * WORD);
            }
            this.definition = definition;
        }
    }

    private final Entry<T>[] entries;
    private final int mask;

    /**
     * @param definitions methods, found by their full names.
     * @return a registry of them.
     */
    static MethodRegistry<ServerMethodDefinition<?, ?>> of(final Collection<ServerMethodDefinition<?, ?>> definitions)
    {
        final Map<String, ServerMethodDefinition<?, ?>> byName = new HashMap<>();
        for (final ServerMethodDefinition<?, ?> definition : definitions)
        {
            byName.put(definition.method().fullMethodName(), definition);
        }
        return new MethodRegistry<>(byName);
    }

    /**
     * @param byName what each full method name (ASCII) finds.
     */
    @SuppressWarnings("unchecked")
    MethodRegistry(final Map<String, ? extends T> byName)
    {
        int capacity = 16;
        while (capacity < byName.size() * 2)
        {
            capacity <<= 1;
        }
        entries = new Entry[capacity];
        mask = capacity - 1;
        for (final Map.Entry<String, ? extends T> named : byName.entrySet())
        {
            final Entry<T> entry = new Entry<>(named.getKey().getBytes(StandardCharsets.US_ASCII), named.getValue());
            int i = hash(entry.length, entry.first, entry.last) & mask;
            while (entries[i] != null)
            {
                i = (i + 1) & mask;
            }
            entries[i] = entry;
        }
    }

    /**
     * @param buffer a frame's buffer (any byte order).
     * @param offset where the name starts.
     * @param length the name's length in bytes.
     * @return what the name finds, or null if none has that name.
     */
    T find(final ByteBuffer buffer, final int offset, final int length)
    {
        final boolean swap = buffer.order() != ByteOrder.LITTLE_ENDIAN;
        final long first = swap ? Long.reverseBytes(firstWord(buffer, offset, length)) : firstWord(buffer, offset, length);
        final long last = swap ? Long.reverseBytes(lastWord(buffer, offset, length)) : lastWord(buffer, offset, length);
        for (int i = hash(length, first, last) & mask; entries[i] != null; i = (i + 1) & mask)
        {
            final Entry<T> entry = entries[i];
            if (entry.length == length && entry.first == first && entry.last == last &&
                middleMatches(entry.middle, buffer, offset, swap))
            {
                return entry.definition;
            }
        }
        return null;
    }

    private static boolean middleMatches(final long[] middle, final ByteBuffer buffer, final int offset,
        final boolean swap)
    {
        for (int i = 0; i < middle.length; i++)
        {
            final long word = buffer.getLong(offset + (i + 1) * WORD);
            if ((swap ? Long.reverseBytes(word) : word) != middle[i])
            {
                return false;
            }
        }
        return true;
    }

    /** Words strictly between the first and the last (which overlap them when the length is not a multiple of 8). */
    private static int middleWords(final int length)
    {
        return length <= 2 * WORD ? 0 : (length - 1) / WORD - 1;
    }

    /** The first eight bytes in the buffer's order, or for a shorter name its bytes little-endian in one word. */
    private static long firstWord(final ByteBuffer buffer, final int offset, final int length)
    {
        if (length >= WORD)
        {
            return buffer.getLong(offset);
        }
        return shortName(buffer, offset, length, buffer.order() != ByteOrder.LITTLE_ENDIAN);
    }

    /** The last eight bytes in the buffer's order, or for a shorter name the same word as {@link #firstWord}. */
    private static long lastWord(final ByteBuffer buffer, final int offset, final int length)
    {
        if (length >= WORD)
        {
            return buffer.getLong(offset + length - WORD);
        }
        return shortName(buffer, offset, length, buffer.order() != ByteOrder.LITTLE_ENDIAN);
    }

    /** A name under eight bytes as one little-endian word, or byte-swapped for a big-endian buffer (swapped back). */
    private static long shortName(final ByteBuffer buffer, final int offset, final int length, final boolean swapped)
    {
        long word = 0;
        for (int i = 0; i < length; i++)
        {
            word |= (buffer.get(offset + i) & 0xFFL) << (8 * i);
        }
        return swapped ? Long.reverseBytes(word) : word;
    }

    private static int hash(final int length, final long first, final long last)
    {
        long h = first * 0x9E3779B97F4A7C15L + last;
        h = (h ^ (h >>> 29)) * 0xBF58476D1CE4E5B9L + length;
        return (int)(h ^ (h >>> 32));
    }
}
