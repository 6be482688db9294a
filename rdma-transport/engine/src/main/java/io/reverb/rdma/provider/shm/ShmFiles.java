package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.VerbsConfig;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.channels.SocketChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.agrona.IoUtil;

/**
 * File-system helpers for the shm fabric: the private directory, mapped files and the clean-up of
 * files left behind by processes that died without closing their contexts.
 *
 * <p>Every file a context creates is named {@code r<64 random bits, hex>-<kind><id>} (see
 * {@link ShmVerbsContext}): names cannot collide, even between processes in different PID namespaces
 * sharing one {@code /dev/shm} (two containers whose JVMs are both PID 1). The context's first file is
 * {@code <prefix>-lock}, on which it holds an advisory lock ({@link FileChannel#lock()}, an fcntl
 * record lock, kept by the kernel per inode and so visible across PID namespaces) for as long as it is
 * open; the kernel drops the lock when the process dies, however it dies. A context's files are stale
 * when anyone can take that lock; then anyone may delete them. Listen sockets are named from the
 * listen name ({@code <name>.sock}) and are recognised as stale when nobody answers on them: a new
 * listener on the same name replaces such a socket at once, other contexts delete it once it is a
 * minute old.
 *
 * <p>The directory is the trust boundary: it must be owned by this process's user with mode 0700
 * (checked by {@link #ensureDirectory}, refused otherwise), so only that user's processes (and root)
 * can reach the sockets and the mapped files.
 */
final class ShmFiles
{
    static final Set<PosixFilePermission> DIR_PERMISSIONS = PosixFilePermissions.fromString("rwx------");
    static final Set<PosixFilePermission> FILE_PERMISSIONS = PosixFilePermissions.fromString("rw-------");
    private static final FileAttribute<Set<PosixFilePermission>> FILE_ATTRIBUTE =
        PosixFilePermissions.asFileAttribute(FILE_PERMISSIONS);

    /** Prefix of every mapped file, followed by its context's random id in hex. */
    static final String FILE_PREFIX = "r";
    /** Suffix of listen sockets. */
    static final String SOCKET_SUFFIX = ".sock";

    private ShmFiles()
    {
    }

    /**
     * Creates the directory (mode 0700) if missing, then checks that it is a real directory (not a
     * symbolic link) owned by this process's user with no access for group or others. An existing
     * directory may be shared by several processes of the same user.
     *
     * @return this process's user (the directory's owner), as {@code SO_PEERCRED} peers are compared with.
     * @throws IOException if the directory cannot be made, or fails a check (the message names the fix).
     */
    static UserPrincipal ensureDirectory(final Path dir) throws IOException
    {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS))
        {
            try
            {
                Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(DIR_PERMISSIONS));
                // createDirectories applies the umask; set the mode explicitly.
                Files.setPosixFilePermissions(dir, DIR_PERMISSIONS);
            }
            catch (final FileAlreadyExistsException ignore)
            {
                // Another process won the race; checked below like any existing directory.
            }
        }
        final String fix = "; remove it, or set -D" + VerbsConfig.SHM_DIR_PROP +
            " to a directory of your own with mode 0700";
        final PosixFileAttributes attributes;
        try
        {
            attributes = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        }
        catch (final UnsupportedOperationException ex)
        {
            throw new IOException("shm:// needs a POSIX file system for its directory " + dir, ex);
        }
        if (!attributes.isDirectory())
        {
            throw new IOException("shm directory " + dir + " is not a directory (or is a symbolic link)" + fix);
        }
        final UserPrincipal self = currentUser(dir, fix);
        if (!attributes.owner().equals(self))
        {
            throw new IOException("shm directory " + dir + " is owned by '" + attributes.owner().getName() +
                "', not by this process's user '" + self.getName() + "'" + fix);
        }
        if (!attributes.permissions().equals(DIR_PERMISSIONS))
        {
            throw new IOException("shm directory " + dir + " has mode " +
                PosixFilePermissions.toString(attributes.permissions()) + ", shm:// requires rwx------ (0700)" +
                "; run chmod 700 " + dir + " if it is yours" + fix);
        }
        return self;
    }

    /** The user this process runs as: the owner of a file it creates (user.name may be anything). */
    private static UserPrincipal currentUser(final Path dir, final String fix) throws IOException
    {
        final Path probe;
        try
        {
            probe = Files.createTempFile(dir, ".owner-", "", FILE_ATTRIBUTE);
        }
        catch (final IOException ex)
        {
            throw new IOException("shm directory " + dir + " is not writable by this process" + fix, ex);
        }
        try
        {
            return Files.getOwner(probe, LinkOption.NOFOLLOW_LINKS);
        }
        finally
        {
            deleteQuietly(probe);
        }
    }

    /**
     * Creates {@code <prefix>-lock} and takes an exclusive advisory lock on it, held until the channel
     * is closed (or the process dies).
     *
     * @param file the lock file.
     * @return the open channel holding the lock.
     * @throws IOException if it exists or cannot be locked.
     */
    static FileChannel createLock(final Path file) throws IOException
    {
        // Created and locked under a name no cleaner judges, then renamed: whoever sees the lock file sees it locked.
        final Path temporary = file.resolveSibling("." + file.getFileName() + "-new");
        final FileChannel channel = FileChannel.open(
            temporary, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE),
            FILE_ATTRIBUTE);
        try
        {
            if (channel.tryLock() == null)
            {
                throw new IOException("cannot lock the new shm file " + temporary);
            }
            Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE);
            return channel;
        }
        catch (final IOException | RuntimeException ex)
        {
            channel.close();
            deleteQuietly(temporary);
            throw ex;
        }
    }

    /**
     * Creates a new file of {@code size} zero bytes, mode 0600, and maps it read-write. The zeros are written, not left
     * as holes: a sparse file on a tmpfs another user has filled maps fine and raises SIGBUS at the first touch of a
     * page (an {@code InternalError} in whichever thread copies into it, this process's or the peer's); written, a
     * full file system is an {@code IOException} here, and the file is removed.
     */
    static MappedByteBuffer createAndMap(final Path file, final long size) throws IOException
    {
        try (FileChannel channel = FileChannel.open(
            file, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE), FILE_ATTRIBUTE))
        {
            try
            {
                final ByteBuffer zeros = ByteBuffer.allocate((int)Math.min(size, 64 * 1024));
                long position = 0;
                while (position < size)
                {
                    zeros.clear().limit((int)Math.min(zeros.capacity(), size - position));
                    position += channel.write(zeros, position);
                }
                return channel.map(FileChannel.MapMode.READ_WRITE, 0, size);
            }
            catch (final IOException | RuntimeException ex)
            {
                deleteQuietly(file);
                throw ex;
            }
        }
    }

    /**
     * Maps an existing file read-write (a peer's file).
     *
     * @return the mapping, or null if the file does not exist (never created, or already removed).
     */
    static MappedByteBuffer mapExisting(final Path file) throws IOException
    {
        try (FileChannel channel = FileChannel.open(
            file, StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS))
        {
            return channel.map(FileChannel.MapMode.READ_WRITE, 0, channel.size());
        }
        catch (final NoSuchFileException ex)
        {
            return null;
        }
    }

    static void unmap(final MappedByteBuffer buffer)
    {
        if (buffer != null)
        {
            IoUtil.unmap(buffer);
        }
    }

    static void deleteQuietly(final Path file)
    {
        try
        {
            Files.deleteIfExists(file);
        }
        catch (final IOException ignore)
        {
            // Best effort: a file we cannot delete is cleaned as stale by the next process.
        }
    }

    /**
     * @param file a file.
     * @return its identity (device and inode), or null if it does not exist or cannot be read.
     */
    static Object fileKey(final Path file)
    {
        try
        {
            return Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
        }
        catch (final IOException ex)
        {
            return null;
        }
    }

    /**
     * Deletes {@code file} only if it is still the file whose identity is {@code key}: a socket path another
     * process has bound since (a replacement taking the name) is not ours to delete.
     *
     * @param file the path.
     * @param key  the identity it had when it was ours ({@link #fileKey}); null deletes nothing.
     */
    static void deleteIfSameFile(final Path file, final Object key)
    {
        if (key != null && key.equals(fileKey(file)))
        {
            deleteQuietly(file);
        }
    }

    /** Age after which a listen socket that refuses connections is considered left by a dead process. */
    static final long STALE_SOCKET_AGE_MILLIS = 60_000;

    /** @return true if a listener accepts connections on the socket file. */
    static boolean isAnswering(final Path socketPath)
    {
        try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX))
        {
            probe.connect(UnixDomainSocketAddress.of(socketPath));
            return true;
        }
        catch (final IOException ex)
        {
            return false;
        }
    }

    private static boolean isOlderThan(final Path file, final long millis)
    {
        try
        {
            return System.currentTimeMillis() - Files.getLastModifiedTime(file).toMillis() > millis;
        }
        catch (final IOException ex)
        {
            return false;
        }
    }

    /**
     * @param name a file name in the shm directory.
     * @return the owner prefix of a provider file ({@code r<hex>}), or null if the name is not one of ours.
     */
    static String ownerPrefix(final String name)
    {
        if (!name.startsWith(FILE_PREFIX))
        {
            return null;
        }
        final int dash = name.indexOf('-');
        if (dash <= FILE_PREFIX.length())
        {
            return null;
        }
        for (int i = FILE_PREFIX.length(); i < dash; i++)
        {
            if (Character.digit(name.charAt(i), 16) < 0)
            {
                return null;
            }
        }
        return name.substring(0, dash);
    }

    /**
     * Deletes the files of contexts whose lock nobody holds (their process died), files of ours whose
     * lock file is gone (left by a crash between deletions) once a minute old, and listen sockets nobody
     * answers on that are older than {@link #STALE_SOCKET_AGE_MILLIS} (a live listener answers from the
     * moment it has bound, so the age only guards the instant between bind and listen). Files of live
     * contexts, and of every context of this JVM ({@code ownPrefixes}: a POSIX lock is per process, and
     * closing any channel of a file would drop this process's lock on it), are left alone.
     *
     * @param dir         the shm directory.
     * @param ownPrefixes prefixes of this JVM's open contexts.
     * @return number of files deleted.
     */
    static int deleteStaleFiles(final Path dir, final Set<String> ownPrefixes)
    {
        int deleted = 0;
        if (!Files.isDirectory(dir))
        {
            return 0;
        }
        final Map<String, List<Path>> byOwner = new HashMap<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir))
        {
            for (final Path file : stream)
            {
                final String name = file.getFileName().toString();
                if (name.endsWith(SOCKET_SUFFIX))
                {
                    if (isOlderThan(file, STALE_SOCKET_AGE_MILLIS) && !isAnswering(file))
                    {
                        deleteQuietly(file);
                        deleted++;
                    }
                    continue;
                }
                final String owner = ownerPrefix(name);
                if (owner != null && !ownPrefixes.contains(owner))
                {
                    byOwner.computeIfAbsent(owner, k -> new ArrayList<>()).add(file);
                }
            }
        }
        catch (final IOException ignore)
        {
            // Listing failed (directory removed concurrently): nothing to clean.
            return deleted;
        }
        for (final Map.Entry<String, List<Path>> owner : byOwner.entrySet())
        {
            final Path lock = dir.resolve(owner.getKey() + LOCK_SUFFIX);
            if (!Files.exists(lock, LinkOption.NOFOLLOW_LINKS))
            {
                for (final Path file : owner.getValue())
                {
                    if (isOlderThan(file, STALE_SOCKET_AGE_MILLIS))
                    {
                        deleteQuietly(file);
                        deleted++;
                    }
                }
                continue;
            }
            try (FileChannel channel = FileChannel.open(lock, StandardOpenOption.READ, StandardOpenOption.WRITE);
                FileLock held = channel.tryLock())
            {
                if (held == null)
                {
                    continue; // Its owner is alive.
                }
                // Data files first, the lock file last, all while holding its lock.
                for (final Path file : owner.getValue())
                {
                    if (!file.equals(lock))
                    {
                        deleteQuietly(file);
                        deleted++;
                    }
                }
                deleteQuietly(lock);
                deleted++;
            }
            catch (final IOException | OverlappingFileLockException ex)
            {
                // Gone meanwhile, or locked in this JVM: not ours to judge.
            }
        }
        return deleted;
    }

    /**
     * Whether the context with this prefix (of another JVM: probing a lock of this process would drop it) is alive.
     *
     * @param dir    the shm directory.
     * @param prefix the context's prefix.
     * @return false if its lock file is missing or nobody holds its lock; true if it is held or cannot be judged.
     */
    static boolean isLockHeld(final Path dir, final String prefix)
    {
        try (FileChannel channel = FileChannel.open(dir.resolve(prefix + LOCK_SUFFIX), StandardOpenOption.READ,
            StandardOpenOption.WRITE); FileLock held = channel.tryLock())
        {
            return held == null;
        }
        catch (final NoSuchFileException ex)
        {
            return false;
        }
        catch (final IOException | OverlappingFileLockException ex)
        {
            return true;
        }
    }

    /** Suffix of a context's lock file, after its prefix. */
    static final String LOCK_SUFFIX = "-lock";
}
