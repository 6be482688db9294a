package io.reverb.common.counters;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.CountersReader;

/**
 * The per-user directory of counters files: finds the files of live Reverb processes and recognises the stale
 * files of dead ones (nobody holds their lock any more). The reader's half of {@link ProcessCounters}.
 */
public final class CountersDirectory
{
    static final Set<PosixFilePermission> DIR_PERMISSIONS = PosixFilePermissions.fromString("rwx------");
    static final Set<PosixFilePermission> FILE_PERMISSIONS = PosixFilePermissions.fromString("rw-------");

    private CountersDirectory()
    {
    }

    /**
     * One file of the directory.
     *
     * @param file    the file.
     * @param process a reader of its counters if its process lives and the file is sound, else null.
     * @param problem why it was skipped (stale, unreadable, other layout), or null.
     */
    public record Entry(Path file, LiveProcess process, String problem)
    {
    }

    /**
     * Reads the directory. This process's own file is read through {@link ProcessCounters#view()}, never opened:
     * closing a descriptor of a file drops every lock this process holds on it.
     *
     * @param dir the directory ({@link ProcessCounters#directory()} by default).
     * @return its counters files, live ones with a reader, in name order; empty if the directory does not exist.
     * @throws IOException if the directory cannot be listed.
     */
    public static List<Entry> scan(final Path dir) throws IOException
    {
        final List<Entry> entries = new ArrayList<>();
        if (!Files.isDirectory(dir))
        {
            return entries;
        }
        final ProcessCounters own = ProcessCounters.current();
        for (final Path file : counterFiles(dir))
        {
            if (own != null && own.file() != null && Files.isSameFile(own.file(), file))
            {
                entries.add(new Entry(file, own.view(), null));
                continue;
            }
            entries.add(open(file));
        }
        return entries;
    }

    private static Entry open(final Path file)
    {
        FileChannel channel = null;
        try
        {
            channel = FileChannel.open(file, StandardOpenOption.READ);
            final FileLock probe;
            try
            {
                probe = channel.tryLock(0, Long.MAX_VALUE, true);
            }
            catch (final OverlappingFileLockException ownedHere)
            {
                // Locked by this JVM (another class loader's counters): the descriptor stays open for good, so that
                // closing it cannot drop that lock.
                final FileChannel kept = channel;
                channel = null;
                return read(file, kept);
            }
            if (probe != null)
            {
                probe.release();
                return new Entry(file, null, "stale: its process is gone (nobody holds its lock)");
            }
            return read(file, channel);
        }
        catch (final IOException | RuntimeException ex)
        {
            return new Entry(file, null, "unreadable: " + ex.getMessage());
        }
        finally
        {
            closeQuietly(channel);
        }
    }

    private static void closeQuietly(final FileChannel channel)
    {
        if (channel != null)
        {
            try
            {
                channel.close(); // the mapping, if any, stays valid
            }
            catch (final IOException ignore)
            {
                // Read-only: nothing lost.
            }
        }
    }

    private static Entry read(final Path file, final FileChannel channel) throws IOException
    {
        final long size = channel.size();
        if (size < CountersLayout.HEADER_LENGTH || size > Integer.MAX_VALUE)
        {
            return new Entry(file, null, "size " + size + " is not that of a counters file");
        }
        final MappedByteBuffer mapped = channel.map(FileChannel.MapMode.READ_ONLY, 0, size);
        final AtomicBuffer whole = new UnsafeBuffer(mapped);
        final String problem = CountersLayout.checkHeader(whole);
        if (problem != null)
        {
            return new Entry(file, null, problem);
        }
        final int metadataLength = whole.getInt(CountersLayout.METADATA_LENGTH_OFFSET);
        final int valuesLength = whole.getInt(CountersLayout.VALUES_LENGTH_OFFSET);
        final CountersReader reader = new CountersReader(
            new UnsafeBuffer(whole, CountersLayout.HEADER_LENGTH, metadataLength),
            new UnsafeBuffer(whole, CountersLayout.HEADER_LENGTH + metadataLength, valuesLength),
            StandardCharsets.US_ASCII);
        return new Entry(file, new LiveProcess(file, new UnsafeBuffer(whole, 0, CountersLayout.HEADER_LENGTH), reader), null);
    }

    /**
     * Deletes the stale counters files of dead processes.
     *
     * @param dir the directory.
     * @return how many were deleted.
     */
    public static int deleteStale(final Path dir)
    {
        // This JVM's own files (another class loader's counters) are never opened here: closing a descriptor of a
        // file drops every lock this process holds on it, which would make a live file look stale.
        final String own = CountersLayout.FILE_PREFIX + ProcessHandle.current().pid() + "-";
        int deleted = 0;
        try
        {
            for (final Path file : counterFiles(dir))
            {
                if (file.getFileName().toString().startsWith(own))
                {
                    continue;
                }
                try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE))
                {
                    final FileLock lock = channel.tryLock();
                    if (lock != null)
                    {
                        Files.deleteIfExists(file);
                        deleted++;
                    }
                }
                catch (final IOException ignore)
                {
                    // Not ours to delete.
                }
            }
        }
        catch (final IOException ignore)
        {
            // Nothing to clean.
        }
        return deleted;
    }

    private static List<Path> counterFiles(final Path dir) throws IOException
    {
        final List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir,
            CountersLayout.FILE_PREFIX + "*" + CountersLayout.FILE_SUFFIX))
        {
            for (final Path file : stream)
            {
                if (Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS))
                {
                    files.add(file);
                }
            }
        }
        files.sort(null);
        return files;
    }

    /**
     * Creates the directory with mode 0700 if missing; refuses one that is a link, not a directory, or open to
     * other users.
     */
    static void ensureDirectory(final Path dir) throws IOException
    {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS))
        {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(DIR_PERMISSIONS));
            Files.setPosixFilePermissions(dir, DIR_PERMISSIONS); // the umask may have narrowed the mode
        }
        final PosixFileAttributes attributes = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (!attributes.isDirectory())
        {
            throw new IOException(dir + " is not a directory");
        }
        final Set<PosixFilePermission> open = attributes.permissions();
        open.retainAll(Set.of(PosixFilePermission.GROUP_WRITE, PosixFilePermission.OTHERS_WRITE,
            PosixFilePermission.GROUP_READ, PosixFilePermission.OTHERS_READ));
        if (!open.isEmpty())
        {
            throw new IOException(dir + " has mode " + PosixFilePermissions.toString(attributes.permissions()) +
                ", counters need a private directory (rwx------)");
        }
    }
}
