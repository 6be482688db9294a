package io.reverb.rpc.wire;

import io.reverb.rpc.Metadata;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Encodes and decodes frame bodies laid out as in {@link FrameType}, with absolute little-endian accesses.
 * Encoders write at an offset and return the offset after what they wrote; lengths are computed first so that the
 * frame can be claimed at its exact size.
 */
public final class FrameCodec
{
    /** Longest description accepted in STATUS/GOAWAY. */
    public static final int MAX_DESCRIPTION_BYTES = 64 * 1024;

    private FrameCodec()
    {
    }

    /**
     * @param buffer a buffer.
     * @return the buffer, little-endian.
     */
    public static ByteBuffer le(final ByteBuffer buffer)
    {
        return buffer.order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * @param metadata metadata or null.
     * @return encoded length of its block.
     */
    public static int metadataLength(final Metadata metadata)
    {
        int length = 2;
        if (metadata != null)
        {
            for (int i = 0, n = metadata.size(); i < n; i++)
            {
                length += 2 + metadata.nameAt(i).length() + 4 + metadata.valueAt(i).length;
            }
        }
        return length;
    }

    /**
     * @param buffer   target.
     * @param offset   where to write.
     * @param metadata metadata or null.
     * @return offset after the block.
     */
    public static int putMetadata(final ByteBuffer buffer, final int offset, final Metadata metadata)
    {
        final int count = metadata == null ? 0 : metadata.size();
        if (count > 0xFFFF)
        {
            throw new IllegalArgumentException("too many metadata entries: " + count);
        }
        buffer.putShort(offset, (short)count);
        int at = offset + 2;
        for (int i = 0; i < count; i++)
        {
            final String name = metadata.nameAt(i);
            buffer.putShort(at, (short)name.length());
            at += 2;
            for (int c = 0; c < name.length(); c++)
            {
                buffer.put(at++, (byte)name.charAt(c));
            }
            final byte[] value = metadata.valueAt(i);
            buffer.putInt(at, value.length);
            at += 4;
            buffer.put(at, value);
            at += value.length;
        }
        return at;
    }

    /**
     * The size of a metadata block as gRPC counts it against {@code maxInboundMetadataSize} (per entry: its name's and
     * value's bytes and 32), read without making anything of it.
     *
     * @param buffer source.
     * @param offset where the block starts.
     * @param limit  end of the frame.
     * @return the size.
     * @throws ProtocolException if the block is malformed.
     */
    public static long metadataSize(final ByteBuffer buffer, final int offset, final int limit) throws ProtocolException
    {
        check(offset + 2 <= limit, "metadata block truncated");
        final int count = buffer.getShort(offset) & 0xFFFF;
        long size = 0;
        int at = offset + 2;
        for (int i = 0; i < count; i++)
        {
            check(at + 2 <= limit, "metadata entry truncated");
            final int nameLength = buffer.getShort(at) & 0xFFFF;
            at += 2;
            check(nameLength > 0 && at + nameLength + 4 <= limit, "metadata name truncated");
            at += nameLength;
            final int valueLength = buffer.getInt(at);
            at += 4;
            check(valueLength >= 0 && valueLength <= limit - at, "metadata value truncated");
            at += valueLength;
            size += nameLength + (long)valueLength + 32;
        }
        return size;
    }

    /**
     * @param buffer source.
     * @param offset where the block starts.
     * @param limit  end of the frame.
     * @param into   metadata to add to.
     * @return offset after the block.
     * @throws ProtocolException if the block is malformed.
     */
    public static int getMetadata(final ByteBuffer buffer, final int offset, final int limit, final Metadata into)
        throws ProtocolException
    {
        check(offset + 2 <= limit, "metadata block truncated");
        final int count = buffer.getShort(offset) & 0xFFFF;
        int at = offset + 2;
        for (int i = 0; i < count; i++)
        {
            check(at + 2 <= limit, "metadata entry truncated");
            final int nameLength = buffer.getShort(at) & 0xFFFF;
            at += 2;
            check(nameLength > 0 && at + nameLength + 4 <= limit, "metadata name truncated");
            final String name = ascii(buffer, at, nameLength);
            validateName(name);
            at += nameLength;
            final int valueLength = buffer.getInt(at);
            at += 4;
            check(valueLength >= 0 && valueLength <= limit - at, "metadata value truncated");
            final byte[] value = new byte[valueLength];
            buffer.get(at, value);
            at += valueLength;
            into.putRaw(name, value);
        }
        return at;
    }

    /**
     * @param text text or null.
     * @return bytes of the length-prefixed UTF-8 string.
     */
    public static int stringLength(final byte[] text)
    {
        return 4 + (text == null ? 0 : text.length);
    }

    /**
     * @param text a string or null.
     * @return its UTF-8 bytes, truncated to {@link #MAX_DESCRIPTION_BYTES}, or null.
     */
    public static byte[] utf8(final String text)
    {
        if (text == null)
        {
            return null;
        }
        final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        if (bytes.length <= MAX_DESCRIPTION_BYTES)
        {
            return bytes;
        }
        // cut on a character boundary so that the peer decodes valid UTF-8
        int end = MAX_DESCRIPTION_BYTES;
        while (end > 0 && (bytes[end] & 0xC0) == 0x80)
        {
            end--;
        }
        return Arrays.copyOf(bytes, end);
    }

    /**
     * @param buffer target.
     * @param offset where to write.
     * @param text   UTF-8 bytes or null.
     * @return offset after.
     */
    public static int putString(final ByteBuffer buffer, final int offset, final byte[] text)
    {
        if (text == null)
        {
            buffer.putInt(offset, -1);
            return offset + 4;
        }
        buffer.putInt(offset, text.length);
        buffer.put(offset + 4, text);
        return offset + 4 + text.length;
    }

    /**
     * @param buffer source.
     * @param offset where the string starts.
     * @param limit  end of the frame.
     * @param out    receives the string (index 0), null if absent.
     * @return offset after.
     * @throws ProtocolException if malformed.
     */
    public static int getString(final ByteBuffer buffer, final int offset, final int limit, final String[] out)
        throws ProtocolException
    {
        check(offset + 4 <= limit, "string truncated");
        final int length = buffer.getInt(offset);
        if (length == -1)
        {
            out[0] = null;
            return offset + 4;
        }
        check(length >= 0 && length <= MAX_DESCRIPTION_BYTES && length <= limit - offset - 4, "bad string length " + length);
        final byte[] bytes = new byte[length];
        buffer.get(offset + 4, bytes);
        out[0] = new String(bytes, StandardCharsets.UTF_8);
        return offset + 4 + length;
    }

    /**
     * @param buffer source.
     * @param offset start.
     * @param length length.
     * @return the bytes as an ASCII string.
     */
    public static String ascii(final ByteBuffer buffer, final int offset, final int length)
    {
        final byte[] bytes = new byte[length];
        buffer.get(offset, bytes);
        return new String(bytes, StandardCharsets.ISO_8859_1);
    }

    /**
     * @param buffer target.
     * @param offset where to write.
     * @param text   ASCII text.
     * @return offset after.
     */
    public static int putAscii(final ByteBuffer buffer, final int offset, final String text)
    {
        for (int i = 0; i < text.length(); i++)
        {
            buffer.put(offset + i, (byte)text.charAt(i));
        }
        return offset + text.length();
    }

    private static void validateName(final String name) throws ProtocolException
    {
        for (int i = 0; i < name.length(); i++)
        {
            final char c = name.charAt(i);
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
            {
                throw new ProtocolException("invalid metadata name");
            }
        }
    }

    /**
     * @param condition must hold.
     * @param message   what is wrong otherwise.
     * @throws ProtocolException if it does not.
     */
    public static void check(final boolean condition, final String message) throws ProtocolException
    {
        if (!condition)
        {
            throw new ProtocolException(message);
        }
    }
}
