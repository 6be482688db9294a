package io.reverb.rpc.internal;

import io.reverb.rpc.ServiceDefinition.ServerMethodDefinition;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Collection;

/**
 * Finds a method by the ASCII bytes of its name in a CALL frame, without building a String per call. Immutable
 * after construction.
 */
final class MethodRegistry
{
    private final byte[][] names;
    private final ServerMethodDefinition<?, ?>[] methods;
    private final int mask;

    MethodRegistry(final Collection<ServerMethodDefinition<?, ?>> definitions)
    {
        int capacity = 16;
        while (capacity < definitions.size() * 2)
        {
            capacity <<= 1;
        }
        names = new byte[capacity][];
        methods = new ServerMethodDefinition<?, ?>[capacity];
        mask = capacity - 1;
        for (final ServerMethodDefinition<?, ?> definition : definitions)
        {
            final byte[] name = definition.method().fullMethodName().getBytes(StandardCharsets.US_ASCII);
            int i = hash(name, 0, name.length) & mask;
            while (names[i] != null)
            {
                i = (i + 1) & mask;
            }
            names[i] = name;
            methods[i] = definition;
        }
    }

    ServerMethodDefinition<?, ?> find(final ByteBuffer buffer, final int offset, final int length)
    {
        int hash = 1;
        for (int i = 0; i < length; i++)
        {
            hash = 31 * hash + buffer.get(offset + i);
        }
        for (int i = mix(hash) & mask; names[i] != null; i = (i + 1) & mask)
        {
            if (matches(names[i], buffer, offset, length))
            {
                return methods[i];
            }
        }
        return null;
    }

    private static boolean matches(final byte[] name, final ByteBuffer buffer, final int offset, final int length)
    {
        if (name.length != length)
        {
            return false;
        }
        for (int i = 0; i < length; i++)
        {
            if (name[i] != buffer.get(offset + i))
            {
                return false;
            }
        }
        return true;
    }

    private static int hash(final byte[] bytes, final int offset, final int length)
    {
        int hash = 1;
        for (int i = offset; i < offset + length; i++)
        {
            hash = 31 * hash + bytes[i];
        }
        return mix(hash);
    }

    private static int mix(final int h)
    {
        return h ^ (h >>> 16);
    }
}
