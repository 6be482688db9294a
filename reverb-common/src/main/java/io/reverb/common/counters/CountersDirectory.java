package io.reverb.common.counters;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
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
    /**
     * How old a file being created ({@code .counters.new}) must be before {@link #deleteStale} takes it for the
     * leftover of a killed writer: its writer creates it, then locks it, so for a moment a live one is unlocked.
     */
    static final long CREATING_GRACE_MS = 5_000;
    /** This process's uid once learnt; -1 before. */
    private static volatile long processUid = -1;

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
     * <p>Only a real directory of this process's user is read: a symbolic link, or a directory another local user
     * created under the expected name, is refused (it would show that user's files as this user's processes). A file
     * that is not this user's, not a regular file, or corrupt is an entry with a problem; it never hides the others.
     *
     * @param dir the directory ({@link ProcessCounters#directory()} by default).
     * @return its counters files, live ones with a reader, in name order; empty if the directory does not exist.
     * @throws IOException if the directory cannot be listed, is a link, or is not this user's.
     */
    public static List<Entry> scan(final Path dir) throws IOException
    {
        return scan(dir, processUid());
    }

    static List<Entry> scan(final Path dir, final long uid) throws IOException
    {
        final List<Entry> entries = new ArrayList<>();
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS))
        {
            return entries;
        }
        final String problem = directoryProblem(dir, uid);
        if (problem != null)
        {
            throw new IOException(problem);
        }
        final ProcessCounters own = ProcessCounters.current();
        for (final Path file : counterFiles(dir))
        {
            try
            {
                if (own != null && own.file() != null && Files.isSameFile(own.file(), file))
                {
                    entries.add(new Entry(file, own.view(), null));
                    continue;
                }
            }
            catch (final IOException gone)
            {
                // Deleted since listed: judged (and skipped) by open() below like any other.
            }
            entries.add(open(file, uid));
        }
        return entries;
    }

    private static Entry open(final Path file, final long uid)
    {
        FileChannel channel = null;
        try
        {
            final long owner = uid(file);
            if (owner != uid)
            {
                return new Entry(file, null, "owned by " + ownerName(file) + " (uid " + owner + "), not by this user");
            }
            // NOFOLLOW_LINKS: a link put in its place since the listing is refused (O_NOFOLLOW), not followed.
            channel = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
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
        catch (final IOException | RuntimeException | InternalError ex)
        {
            // InternalError: a page of the mapping that went away (the file truncated under the reader: SIGBUS).
            return new Entry(file, null, "unreadable: " + ex);
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
        if (size < CountersLayout.HEADER_LENGTH || size > CountersLayout.MAX_FILE_LENGTH)
        {
            return new Entry(file, null, "size " + size + " is not that of a counters file");
        }
        final MappedByteBuffer mapped = channel.map(FileChannel.MapMode.READ_ONLY, 0, size);
        final AtomicBuffer whole = new UnsafeBuffer(mapped);
        return parse(file, whole);
    }

    /**
     * Reads the image of a counters file as {@link #scan} reads each file (the fuzz target's way in).
     *
     * @param image the file's bytes.
     * @return an entry with no file: with a reader if the header holds, else with the problem.
     */
    public static Entry read(final AtomicBuffer image)
    {
        return parse(null, image);
    }

    /**
     * Checks a counters file's header and wraps its buffers: the reader's whole trust boundary.
     *
     * @param file  the file (for the reader), or null.
     * @param whole its bytes.
     * @return an entry with a reader over them, or with the problem.
     */
    private static Entry parse(final Path file, final AtomicBuffer whole)
    {
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
     * Deletes the stale counters files of dead processes, and the files that writers killed while creating them left
     * behind ({@code reverb-<pid>-<hex>.counters.new}, unlocked and older than {@link #CREATING_GRACE_MS}).
     *
     * <p>Only in this user's own real directory (as {@link #scan} reads), and only this user's files: a symbolic link
     * in place of the directory, or another user's directory, is refused and nothing is deleted.
     *
     * @param dir the directory.
     * @return how many files were deleted; 0 if the directory does not exist.
     * @throws IOException if the directory is a link, not a directory or not this user's (naming why), or this
     *                     process's uid cannot be learnt.
     */
    public static int deleteStale(final Path dir) throws IOException
    {
        return deleteStale(dir, processUid(), System.currentTimeMillis());
    }

    /** {@link #deleteStale(Path)} for a given uid and time (tests: another user's files, old files, without waiting). */
    static int deleteStale(final Path dir, final long uid, final long nowMillis) throws IOException
    {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS))
        {
            return 0;
        }
        final String problem = directoryProblem(dir, uid);
        if (problem != null)
        {
            throw new IOException(problem + "; nothing deleted");
        }
        // This JVM's own files (another class loader's counters) are never opened here: closing a descriptor of a
        // file drops every lock this process holds on it, which would make a live file look stale.
        final String own = CountersLayout.FILE_PREFIX + ProcessHandle.current().pid() + "-";
        final List<Path> candidates;
        try
        {
            candidates = files(dir, CountersLayout.FILE_SUFFIX);
            candidates.addAll(files(dir, CountersLayout.FILE_SUFFIX + CountersLayout.CREATING_SUFFIX));
        }
        catch (final IOException ignore)
        {
            return 0; // nothing to clean
        }
        int deleted = 0;
        for (final Path file : candidates)
        {
            if (file.getFileName().toString().startsWith(own))
            {
                continue;
            }
            try
            {
                if (uid(file) != uid)
                {
                    continue; // another user's: not ours to judge (its lock is not ours to probe)
                }
                if (file.getFileName().toString().endsWith(CountersLayout.CREATING_SUFFIX) && nowMillis -
                    Files.getLastModifiedTime(file, LinkOption.NOFOLLOW_LINKS).toMillis() < CREATING_GRACE_MS)
                {
                    continue; // its writer may not have locked it yet: it creates, then locks
                }
            }
            catch (final IOException gone)
            {
                continue;
            }
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS))
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
        return deleted;
    }

    private static List<Path> counterFiles(final Path dir) throws IOException
    {
        return files(dir, CountersLayout.FILE_SUFFIX);
    }

    /** @return the regular files (not links) of the directory named {@code reverb-*SUFFIX}, in name order. */
    private static List<Path> files(final Path dir, final String suffix) throws IOException
    {
        final List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir, CountersLayout.FILE_PREFIX + "*" + suffix))
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
     * Creates the directory with mode 0700 if missing; refuses one that is a link, not a directory, not owned by this
     * process's user (another local user may create it first under the name this user's processes expect), or open
     * to other users.
     */
    static void ensureDirectory(final Path dir) throws IOException
    {
        ensureDirectory(dir, processUid());
    }

    /** {@link #ensureDirectory(Path)} for a given uid (tests: a directory "of another user" without root). */
    static void ensureDirectory(final Path dir, final long uid) throws IOException
    {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS))
        {
            try
            {
                Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(DIR_PERMISSIONS));
                Files.setPosixFilePermissions(dir, DIR_PERMISSIONS); // the umask may have narrowed the mode
            }
            catch (final FileAlreadyExistsException raced)
            {
                // Created meanwhile (by another process, perhaps another user's): checked below like any other.
            }
        }
        final String problem = directoryProblem(dir, uid);
        if (problem != null)
        {
            throw new IOException(problem);
        }
        final PosixFileAttributes attributes = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        final Set<PosixFilePermission> open = attributes.permissions();
        open.retainAll(Set.of(PosixFilePermission.GROUP_WRITE, PosixFilePermission.OTHERS_WRITE,
            PosixFilePermission.GROUP_READ, PosixFilePermission.OTHERS_READ));
        if (!open.isEmpty())
        {
            throw new IOException(dir + " has mode " + PosixFilePermissions.toString(attributes.permissions()) +
                ", counters need a private directory (rwx------)");
        }
    }

    /**
     * @param dir a directory that exists.
     * @param uid this process's user.
     * @return why it is not this user's own real directory (naming its owner), or null.
     */
    static String directoryProblem(final Path dir, final long uid) throws IOException
    {
        final PosixFileAttributes attributes = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (attributes.isSymbolicLink())
        {
            String target;
            try
            {
                target = String.valueOf(Files.readSymbolicLink(dir));
            }
            catch (final IOException ex)
            {
                target = "?";
            }
            return dir + " is a symbolic link (to " + target + "), not a directory: refused (owned by " +
                attributes.owner().getName() + "; remove it, or set " + ProcessCounters.DIR_PROPERTY +
                " to a directory of your own)";
        }
        if (!attributes.isDirectory())
        {
            return dir + " is not a directory";
        }
        final long owner = uid(dir);
        if (owner != uid)
        {
            return dir + " is owned by " + attributes.owner().getName() + " (uid " + owner + "), not by this user (uid " +
                uid + "): refused (another user may have created it; remove it, or set " + ProcessCounters.DIR_PROPERTY +
                " to a directory of your own)";
        }
        return null;
    }

    private static long uid(final Path path) throws IOException
    {
        try
        {
            return ((Number)Files.getAttribute(path, "unix:uid", LinkOption.NOFOLLOW_LINKS)).longValue();
        }
        catch (final UnsupportedOperationException | IllegalArgumentException ex)
        {
            throw new IOException("cannot read the owner of " + path + " (not a Unix file system)", ex);
        }
    }

    private static String ownerName(final Path path)
    {
        try
        {
            return Files.getOwner(path, LinkOption.NOFOLLOW_LINKS).getName();
        }
        catch (final IOException ex)
        {
            return "?";
        }
    }

    /**
     * @return this process's (effective) uid, by number: the owner of a file it creates. A name ({@code user.name})
     * may have no passwd entry (containers) or be set to anything.
     * @throws IOException if no file can be created to learn it.
     */
    static long processUid() throws IOException
    {
        long known = processUid;
        if (known < 0)
        {
            try
            {
                // Linux: /proc/self is owned by the process's effective uid; no file to create.
                processUid = ((Number)Files.getAttribute(Path.of("/proc/self"), "unix:uid")).longValue();
                return processUid;
            }
            catch (final IOException | RuntimeException noProc)
            {
                // Not Linux, or no /proc: ask the file system who owns what this process creates.
            }
            final Path probe = Files.createTempFile(".reverb-uid-", "", PosixFilePermissions.asFileAttribute(FILE_PERMISSIONS));
            try
            {
                known = uid(probe);
            }
            finally
            {
                Files.deleteIfExists(probe);
            }
            processUid = known;
        }
        return known;
    }
}
