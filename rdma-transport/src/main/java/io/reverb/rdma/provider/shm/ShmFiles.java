package io.reverb.rdma.provider.shm;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import org.agrona.IoUtil;

/**
 * File-system helpers for the shm fabric: the private directory, mapped files and the clean-up of
 * files left behind by processes that died without closing their contexts.
 *
 * <p>Every file a context creates is named {@code r<pid>-<context>-<kind><id>} (see
 * {@link ShmVerbsContext}), so the owner of a file is known from its name alone: a file whose pid is
 * not a live process is stale and may be deleted by anyone. Listen sockets are named from the listen
 * name ({@code <name>.sock}) and are recognised as stale when nobody answers on them: a new listener
 * on the same name replaces such a socket at once, other contexts delete it once it is a minute old.
 */
final class ShmFiles
{
    static final Set<PosixFilePermission> DIR_PERMISSIONS = PosixFilePermissions.fromString("rwx------");
    static final Set<PosixFilePermission> FILE_PERMISSIONS = PosixFilePermissions.fromString("rw-------");
    private static final FileAttribute<Set<PosixFilePermission>> FILE_ATTRIBUTE =
        PosixFilePermissions.asFileAttribute(FILE_PERMISSIONS);

    /** Prefix of every mapped file, followed by the owner's pid. */
    static final String FILE_PREFIX = "r";
    /** Suffix of listen sockets. */
    static final String SOCKET_SUFFIX = ".sock";

    private ShmFiles()
    {
    }

    /**
     * Creates the directory (mode 0700) if missing. An existing directory is used as it is: it may be
     * shared by several processes of the same user.
     */
    static void ensureDirectory(final Path dir) throws IOException
    {
        if (!Files.isDirectory(dir))
        {
            try
            {
                Files.createDirectories(dir);
                // createDirectories applies the umask; set the mode explicitly.
                Files.setPosixFilePermissions(dir, DIR_PERMISSIONS);
            }
            catch (final FileAlreadyExistsException ignore)
            {
                // Another process won the race; fine.
            }
        }
        if (!Files.isWritable(dir))
        {
            throw new IOException("shm directory " + dir + " is not writable; set -D" +
                io.reverb.rdma.verbs.VerbsConfig.SHM_DIR_PROP + " to a directory you own");
        }
    }

    /**
     * Creates a new file of {@code size} zero bytes, mode 0600, and maps it read-write.
     */
    static MappedByteBuffer createAndMap(final Path file, final long size) throws IOException
    {
        try (FileChannel channel = FileChannel.open(
            file, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE), FILE_ATTRIBUTE))
        {
            // tmpfs hands out zero pages: no need to write the content.
            channel.truncate(size);
            if (channel.size() != size)
            {
                // truncate() only shrinks: grow by writing the last byte.
                channel.write(java.nio.ByteBuffer.allocate(1), size - 1);
            }
            return channel.map(FileChannel.MapMode.READ_WRITE, 0, size);
        }
    }

    /**
     * Maps an existing file read-write (a peer's file).
     *
     * @return the mapping, or null if the file does not exist (never created, or already removed).
     */
    static MappedByteBuffer mapExisting(final Path file) throws IOException
    {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE))
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
     * @return the pid encoded in a provider file name, or -1 if the name is not one of ours.
     */
    static long ownerPid(final String name)
    {
        if (!name.startsWith(FILE_PREFIX))
        {
            return -1;
        }
        final int dash = name.indexOf('-');
        if (dash <= FILE_PREFIX.length())
        {
            return -1;
        }
        try
        {
            return Long.parseLong(name.substring(FILE_PREFIX.length(), dash));
        }
        catch (final NumberFormatException ex)
        {
            return -1;
        }
    }

    /**
     * Deletes files of processes that are no longer alive, and listen sockets nobody answers on that
     * are older than {@link #STALE_SOCKET_AGE_MILLIS} (a live listener answers from the moment it has
     * bound, so the age only guards the instant between bind and listen). Files of live processes
     * (including this one) are left alone.
     *
     * @return number of files deleted.
     */
    static int deleteStaleFiles(final Path dir)
    {
        int deleted = 0;
        if (!Files.isDirectory(dir))
        {
            return 0;
        }
        final long self = ProcessHandle.current().pid();
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
                final long pid = ownerPid(name);
                if (pid > 0 && pid != self && !ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false))
                {
                    deleteQuietly(file);
                    deleted++;
                }
            }
        }
        catch (final IOException ignore)
        {
            // Listing failed (directory removed concurrently): nothing to clean.
        }
        return deleted;
    }
}
