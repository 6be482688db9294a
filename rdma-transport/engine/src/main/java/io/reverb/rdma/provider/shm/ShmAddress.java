package io.reverb.rdma.provider.shm;

/**
 * Parses shm addresses: a name such as {@code pingpong}, optionally written {@code shm://pingpong}.
 */
final class ShmAddress
{
    /** Unix socket paths are limited to 107 bytes; keep names well inside that together with the directory. */
    static final int MAX_NAME_LENGTH = 64;

    private ShmAddress()
    {
    }

    static String name(final String address)
    {
        if (address == null)
        {
            throw new IllegalArgumentException("shm address is null");
        }
        String name = address;
        if (name.startsWith("shm://"))
        {
            name = name.substring("shm://".length());
        }
        if (name.isEmpty() || name.length() > MAX_NAME_LENGTH)
        {
            throw new IllegalArgumentException("shm address must be a name of 1.." + MAX_NAME_LENGTH +
                " characters: '" + address + "'");
        }
        for (int i = 0; i < name.length(); i++)
        {
            final char c = name.charAt(i);
            if (!(Character.isLetterOrDigit(c) || c == '-' || c == '_' || c == '.'))
            {
                throw new IllegalArgumentException("shm address may only hold letters, digits, '-', '_' and '.': '" +
                    address + "'");
            }
        }
        if (name.startsWith("."))
        {
            throw new IllegalArgumentException("shm address must not start with '.': '" + address + "'");
        }
        return name;
    }
}
