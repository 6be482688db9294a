package io.reverb.rdma.provider.disni;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Test helper: the defined global symbols a 64-bit little-endian ELF shared object exports ({@code .dynsym}), as
 * {@code nm -D --defined-only} lists them, without binutils.
 */
final class ElfSymbols
{
    private static final int SHT_DYNSYM = 11;
    private static final int STB_GLOBAL = 1;
    private static final int STB_WEAK = 2;

    private ElfSymbols()
    {
    }

    static List<String> exported(final Path library) throws IOException
    {
        final ByteBuffer elf = ByteBuffer.wrap(Files.readAllBytes(library)).order(ByteOrder.LITTLE_ENDIAN);
        if (elf.getInt(0) != 0x464c457f || elf.get(4) != 2 || elf.get(5) != 1)
        {
            throw new IOException(library + " is not a 64-bit little-endian ELF file");
        }
        final long sectionHeaders = elf.getLong(0x28);
        final int headerSize = elf.getShort(0x3a) & 0xffff;
        final int sections = elf.getShort(0x3c) & 0xffff;
        final List<String> names = new ArrayList<>();
        for (int i = 0; i < sections; i++)
        {
            final int header = Math.toIntExact(sectionHeaders + (long)i * headerSize);
            if (elf.getInt(header + 4) != SHT_DYNSYM)
            {
                continue;
            }
            final int offset = Math.toIntExact(elf.getLong(header + 0x18));
            final int size = Math.toIntExact(elf.getLong(header + 0x20));
            final int entrySize = Math.toIntExact(elf.getLong(header + 0x38));
            final int strtabHeader = Math.toIntExact(sectionHeaders + (long)elf.getInt(header + 0x28) * headerSize);
            final int strtab = Math.toIntExact(elf.getLong(strtabHeader + 0x18));
            for (int symbol = offset; symbol + entrySize <= offset + size; symbol += entrySize)
            {
                final int binding = (elf.get(symbol + 4) & 0xff) >>> 4;
                final int sectionIndex = elf.getShort(symbol + 6) & 0xffff;
                if (sectionIndex != 0 && (binding == STB_GLOBAL || binding == STB_WEAK))
                {
                    names.add(string(elf, strtab + elf.getInt(symbol)));
                }
            }
        }
        return names;
    }

    private static String string(final ByteBuffer elf, final int start)
    {
        int end = start;
        while (elf.get(end) != 0)
        {
            end++;
        }
        final byte[] bytes = new byte[end - start];
        elf.get(start, bytes);
        return new String(bytes, StandardCharsets.US_ASCII);
    }
}
