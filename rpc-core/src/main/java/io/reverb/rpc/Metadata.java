package io.reverb.rpc;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * Initial metadata (headers) and trailers of a call, as in gRPC: an ordered multimap from lower-case names to
 * values. Names ending in {@code "-bin"} carry binary values; all others carry printable ASCII.
 *
 * <p>Values are kept in their serialized form (bytes) so that sending needs no conversion. Not thread-safe:
 * a call's metadata is meant to be filled by one thread before the call sends it.
 */
public final class Metadata
{
    /** Suffix marking a binary key. */
    public static final String BINARY_HEADER_SUFFIX = "-bin";

    /** Marshaller for ASCII string values. */
    public static final AsciiMarshaller<String> ASCII_STRING_MARSHALLER = new AsciiMarshaller<>()
    {
        @Override
        public String toAsciiString(final String value)
        {
            return value;
        }

        @Override
        public String parseAsciiString(final String serialized)
        {
            return serialized;
        }
    };

    /** Marshaller for binary values, kept as given. */
    public static final BinaryMarshaller<byte[]> BINARY_BYTE_MARSHALLER = new BinaryMarshaller<>()
    {
        @Override
        public byte[] toBytes(final byte[] value)
        {
            return value;
        }

        @Override
        public byte[] parseBytes(final byte[] serialized)
        {
            return serialized;
        }
    };

    // created on first put: most calls carry no metadata, and every call has several Metadata objects
    private ArrayList<String> names;
    private ArrayList<byte[]> values;

    /**
     * Creates empty metadata.
     */
    public Metadata()
    {
    }

    /**
     * @return number of entries.
     */
    public int size()
    {
        return names == null ? 0 : names.size();
    }

    /**
     * @return true if there are no entries.
     */
    public boolean isEmpty()
    {
        return names == null || names.isEmpty();
    }

    private void ensureLists()
    {
        if (names == null)
        {
            names = new ArrayList<>(4);
            values = new ArrayList<>(4);
        }
    }

    /**
     * @param key a key.
     * @return true if at least one value is present for the key.
     */
    public boolean containsKey(final Key<?> key)
    {
        return names != null && names.contains(key.name());
    }

    /**
     * @param key   a key.
     * @param value a value, not null.
     * @param <T>   value type.
     */
    public <T> void put(final Key<T> key, final T value)
    {
        Objects.requireNonNull(value, "value");
        final byte[] bytes = key.toBytes(value);
        ensureLists();
        names.add(key.name());
        values.add(bytes);
    }

    /**
     * @param key a key.
     * @param <T> value type.
     * @return the last value for the key, or null.
     */
    public <T> T get(final Key<T> key)
    {
        for (int i = size() - 1; i >= 0; i--)
        {
            if (names.get(i).equals(key.name()))
            {
                return key.parseBytes(values.get(i));
            }
        }
        return null;
    }

    /**
     * @param key a key.
     * @param <T> value type.
     * @return all values for the key in insertion order, empty if none.
     */
    public <T> List<T> getAll(final Key<T> key)
    {
        List<T> result = null;
        for (int i = 0; i < size(); i++)
        {
            if (names.get(i).equals(key.name()))
            {
                if (result == null)
                {
                    result = new ArrayList<>(2);
                }
                result.add(key.parseBytes(values.get(i)));
            }
        }
        return result == null ? Collections.emptyList() : result;
    }

    /**
     * Removes the first occurrence of a value.
     *
     * @param key   a key.
     * @param value the value to remove.
     * @param <T>   value type.
     * @return true if removed.
     */
    public <T> boolean remove(final Key<T> key, final T value)
    {
        for (int i = 0; i < size(); i++)
        {
            if (names.get(i).equals(key.name()) && Objects.equals(key.parseBytes(values.get(i)), value))
            {
                names.remove(i);
                values.remove(i);
                return true;
            }
        }
        return false;
    }

    /**
     * Removes all values of a key.
     *
     * @param key a key.
     * @param <T> value type.
     * @return the removed values, empty if none.
     */
    public <T> List<T> removeAll(final Key<T> key)
    {
        final List<T> removed = getAll(key);
        for (int i = size() - 1; i >= 0; i--)
        {
            if (names.get(i).equals(key.name()))
            {
                names.remove(i);
                values.remove(i);
            }
        }
        return removed;
    }

    /**
     * Appends all entries of another metadata.
     *
     * @param other entries to add; may be null.
     */
    public void merge(final Metadata other)
    {
        if (other != null && other != this && !other.isEmpty())
        {
            ensureLists();
            names.addAll(other.names);
            values.addAll(other.values);
        }
    }

    /**
     * @return the distinct names present, in first-insertion order.
     */
    public Set<String> keys()
    {
        return names == null ? Collections.emptySet() : Collections.unmodifiableSet(new LinkedHashSet<>(names));
    }

    /**
     * @return a copy.
     */
    public Metadata copy()
    {
        final Metadata copy = new Metadata();
        copy.merge(this);
        return copy;
    }

    /**
     * Raw access for the wire codec.
     *
     * @param index entry index, 0..size()-1.
     * @return the entry's name.
     */
    public String nameAt(final int index)
    {
        return names.get(index);
    }

    /**
     * Raw access for the wire codec.
     *
     * @param index entry index, 0..size()-1.
     * @return the entry's serialized value (do not modify).
     */
    public byte[] valueAt(final int index)
    {
        return values.get(index);
    }

    /**
     * Raw append for the wire codec: the name must be valid and lower case.
     *
     * @param name  entry name.
     * @param value serialized value.
     */
    public void putRaw(final String name, final byte[] value)
    {
        ensureLists();
        names.add(name);
        values.add(value);
    }

    @Override
    public String toString()
    {
        final StringBuilder sb = new StringBuilder("Metadata(");
        if (names == null)
        {
            return sb.append(')').toString();
        }
        final Iterator<String> it = names.iterator();
        for (int i = 0; it.hasNext(); i++)
        {
            final String name = it.next();
            if (i > 0)
            {
                sb.append(", ");
            }
            sb.append(name).append('=');
            if (name.endsWith(BINARY_HEADER_SUFFIX))
            {
                sb.append('[').append(values.get(i).length).append(" bytes]");
            }
            else
            {
                sb.append(new String(values.get(i), StandardCharsets.US_ASCII));
            }
        }
        return sb.append(')').toString();
    }

    /**
     * Converts ASCII values to and from strings.
     *
     * @param <T> value type.
     */
    public interface AsciiMarshaller<T>
    {
        /**
         * @param value a value.
         * @return its printable ASCII form.
         */
        String toAsciiString(T value);

        /**
         * @param serialized printable ASCII form.
         * @return the value.
         */
        T parseAsciiString(String serialized);
    }

    /**
     * Converts binary values to and from bytes.
     *
     * @param <T> value type.
     */
    public interface BinaryMarshaller<T>
    {
        /**
         * @param value a value.
         * @return its bytes.
         */
        byte[] toBytes(T value);

        /**
         * @param serialized bytes.
         * @return the value.
         */
        T parseBytes(byte[] serialized);
    }

    /**
     * A typed metadata key. Names are lower-cased and may contain {@code a-z 0-9 - _ .}; binary keys end in
     * {@code "-bin"} and ASCII keys must not.
     *
     * @param <T> value type.
     */
    public abstract static class Key<T>
    {
        private final String name;

        Key(final String name)
        {
            this.name = validateName(name);
        }

        /**
         * @param name       key name, not ending in "-bin".
         * @param marshaller converts values.
         * @param <T>        value type.
         * @return an ASCII key.
         */
        public static <T> Key<T> of(final String name, final AsciiMarshaller<T> marshaller)
        {
            return new AsciiKey<>(name, marshaller);
        }

        /**
         * @param name       key name, ending in "-bin".
         * @param marshaller converts values.
         * @param <T>        value type.
         * @return a binary key.
         */
        public static <T> Key<T> of(final String name, final BinaryMarshaller<T> marshaller)
        {
            return new BinaryKey<>(name, marshaller);
        }

        /**
         * @return the lower-case name.
         */
        public final String name()
        {
            return name;
        }

        /**
         * @return true for a "-bin" key.
         */
        public final boolean isBinary()
        {
            return name.endsWith(BINARY_HEADER_SUFFIX);
        }

        abstract byte[] toBytes(T value);

        abstract T parseBytes(byte[] serialized);

        private static String validateName(final String name)
        {
            Objects.requireNonNull(name, "name");
            final String lower = name.toLowerCase(Locale.ROOT);
            if (lower.isEmpty() || lower.startsWith(":"))
            {
                throw new IllegalArgumentException("invalid metadata key name: '" + name + "'");
            }
            for (int i = 0; i < lower.length(); i++)
            {
                final char c = lower.charAt(i);
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
                {
                    throw new IllegalArgumentException("invalid character '" + c + "' in metadata key '" + name + "'");
                }
            }
            return lower;
        }

        @Override
        public boolean equals(final Object o)
        {
            return o instanceof Key && ((Key<?>)o).name.equals(name);
        }

        @Override
        public int hashCode()
        {
            return name.hashCode();
        }

        @Override
        public String toString()
        {
            return "Key{" + name + "}";
        }
    }

    private static final class AsciiKey<T> extends Key<T>
    {
        private final AsciiMarshaller<T> marshaller;

        AsciiKey(final String name, final AsciiMarshaller<T> marshaller)
        {
            super(name);
            if (name().endsWith(BINARY_HEADER_SUFFIX))
            {
                throw new IllegalArgumentException("ASCII key must not end in -bin: " + name);
            }
            this.marshaller = Objects.requireNonNull(marshaller, "marshaller");
        }

        @Override
        byte[] toBytes(final T value)
        {
            final String s = marshaller.toAsciiString(value);
            for (int i = 0; i < s.length(); i++)
            {
                final char c = s.charAt(i);
                if (c < 0x20 || c > 0x7E)
                {
                    throw new IllegalArgumentException("metadata value for '" + name() + "' is not printable ASCII");
                }
            }
            return s.getBytes(StandardCharsets.US_ASCII);
        }

        @Override
        T parseBytes(final byte[] serialized)
        {
            return marshaller.parseAsciiString(new String(serialized, StandardCharsets.US_ASCII));
        }
    }

    private static final class BinaryKey<T> extends Key<T>
    {
        private final BinaryMarshaller<T> marshaller;

        BinaryKey(final String name, final BinaryMarshaller<T> marshaller)
        {
            super(name);
            if (!name().endsWith(BINARY_HEADER_SUFFIX))
            {
                throw new IllegalArgumentException("binary key must end in -bin: " + name);
            }
            this.marshaller = Objects.requireNonNull(marshaller, "marshaller");
        }

        @Override
        byte[] toBytes(final T value)
        {
            return marshaller.toBytes(value);
        }

        @Override
        T parseBytes(final byte[] serialized)
        {
            return marshaller.parseBytes(serialized);
        }
    }
}
