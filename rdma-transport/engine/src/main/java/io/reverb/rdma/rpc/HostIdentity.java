package io.reverb.rdma.rpc;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.UUID;

/**
 * What {@code reverb://} takes as proof that client and server can share memory: the same kernel (the boot id, which
 * containers on one host share and which no two hosts have), the same shm directory (device and inode, which differ
 * between containers that each mount a /dev/shm of their own, whatever the path), and a secret file in it that only the
 * directory's owner can read. The host name proves nothing: containers and clones share it.
 */
final class HostIdentity
{
    /** The kernel's boot id: random per boot, the same in every container of the host. */
    static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");
    private static final Set<PosixFilePermission> DIRECTORY_MODE = PosixFilePermissions.fromString("rwx------");
    private static final Set<PosixFilePermission> SECRET_MODE = PosixFilePermissions.fromString("rw-------");

    private HostIdentity()
    {
    }

    /**
     * @param file the boot id file ({@link #BOOT_ID}; tests give another).
     * @return its 16 bytes.
     * @throws IOException if it cannot be read or is not a UUID.
     */
    static byte[] bootId(final Path file) throws IOException
    {
        final String text = Files.readString(file, StandardCharsets.US_ASCII).trim();
        try
        {
            final UUID uuid = UUID.fromString(text);
            return ByteBuffer.allocate(16).putLong(uuid.getMostSignificantBits()).putLong(uuid.getLeastSignificantBits())
                .array();
        }
        catch (final IllegalArgumentException ex)
        {
            throw new IOException(file + " does not hold a boot id: '" + text + "'", ex);
        }
    }

    /**
     * @param dir a directory.
     * @return {device, inode} of it (not following a symbolic link).
     * @throws IOException if they cannot be read (a file system without them).
     */
    static long[] deviceAndInode(final Path dir) throws IOException
    {
        try
        {
            final Object dev = Files.getAttribute(dir, "unix:dev", LinkOption.NOFOLLOW_LINKS);
            final Object ino = Files.getAttribute(dir, "unix:ino", LinkOption.NOFOLLOW_LINKS);
            return new long[] {((Number)dev).longValue(), ((Number)ino).longValue()};
        }
        catch (final UnsupportedOperationException | IllegalArgumentException ex)
        {
            throw new IOException("cannot read the device and inode of " + dir + " (not a Unix file system)", ex);
        }
    }

    /**
     * Checks that a directory is one only this process's user can enter: a real directory, owned by this user, mode
     * 0700 (the shm fabric's own rule), so that a file in it was put there by this user.
     *
     * @param dir the directory.
     * @return null if it holds, else why not.
     */
    static String privateDirectoryProblem(final Path dir)
    {
        try
        {
            final PosixFileAttributes attributes = Files.readAttributes(dir, PosixFileAttributes.class,
                LinkOption.NOFOLLOW_LINKS);
            if (!attributes.isDirectory())
            {
                return dir + " is not a directory";
            }
            // By number, as ShmFiles does: user.name may be anything, and a uid with no passwd entry (common in
            // containers) has no name to look up.
            final long self = processUid(dir);
            final long owner = ((Number)Files.getAttribute(dir, "unix:uid", LinkOption.NOFOLLOW_LINKS)).longValue();
            if (owner != self)
            {
                return dir + " is owned by '" + attributes.owner().getName() + "' (uid " + owner + "), not by this user (uid " +
                    self + ")";
            }
            if (!attributes.permissions().equals(DIRECTORY_MODE))
            {
                return dir + " has mode " + PosixFilePermissions.toString(attributes.permissions()) + ", not rwx------";
            }
            return null;
        }
        catch (final IOException | UnsupportedOperationException | IllegalArgumentException ex)
        {
            return "cannot read the attributes of " + dir + ": " + ex;
        }
    }

    /**
     * @param dir a directory to create a probe file in, when /proc is not there.
     * @return this process's effective uid: the owner of /proc/self (Linux), else of a file it creates.
     */
    private static long processUid(final Path dir) throws IOException
    {
        try
        {
            return ((Number)Files.getAttribute(Path.of("/proc/self"), "unix:uid")).longValue();
        }
        catch (final IOException | RuntimeException noProc)
        {
            final Path probe = Files.createTempFile(dir, ".owner-", "", PosixFilePermissions.asFileAttribute(SECRET_MODE));
            try
            {
                return ((Number)Files.getAttribute(probe, "unix:uid", LinkOption.NOFOLLOW_LINKS)).longValue();
            }
            finally
            {
                Files.deleteIfExists(probe);
            }
        }
    }

    /**
     * Writes a new secret file (mode 0600, created exclusively: an existing file or link is an error).
     *
     * @param file   where.
     * @param secret its bytes.
     * @throws IOException if it cannot be created.
     */
    static void writeSecret(final Path file, final byte[] secret) throws IOException
    {
        try (SeekableByteChannel channel = Files.newByteChannel(file,
            Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
            PosixFilePermissions.asFileAttribute(SECRET_MODE)))
        {
            final ByteBuffer b = ByteBuffer.wrap(secret);
            while (b.hasRemaining())
            {
                channel.write(b);
            }
        }
    }

    /**
     * Reads a server's secret file: a regular file (not a link) of exactly {@link FabricMessages#SECRET_LENGTH} bytes.
     *
     * @param file the file.
     * @return its bytes.
     * @throws IOException saying why it cannot be used.
     */
    static byte[] readSecret(final Path file) throws IOException
    {
        final PosixFileAttributes attributes = Files.readAttributes(file, PosixFileAttributes.class,
            LinkOption.NOFOLLOW_LINKS);
        if (!attributes.isRegularFile() || attributes.size() != FabricMessages.SECRET_LENGTH)
        {
            throw new IOException(file + " is not a regular file of " + FabricMessages.SECRET_LENGTH + " bytes");
        }
        try (SeekableByteChannel channel = Files.newByteChannel(file, Set.of(StandardOpenOption.READ,
            LinkOption.NOFOLLOW_LINKS)))
        {
            final ByteBuffer b = ByteBuffer.allocate(FabricMessages.SECRET_LENGTH);
            while (b.hasRemaining() && channel.read(b) >= 0)
            {
                // fill
            }
            if (b.hasRemaining())
            {
                throw new IOException(file + " ended early");
            }
            return b.array();
        }
    }
}
