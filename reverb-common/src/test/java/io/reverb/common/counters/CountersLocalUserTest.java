package io.reverb.common.counters;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.CachedEpochClock;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.CountersReader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 38, items 4 and 5: the counters directory and file against another local user and a full file system. The
 * directory must be this uid's own real directory (writer and reader); a corrupt file is read within bounds; the file
 * is written in full before it is mapped.
 */
class CountersLocalUserTest
{
    @TempDir
    Path dir;

    @BeforeEach
    void useTempDir()
    {
        assertThat(ProcessCounters.current()).as("no counters held before the test").isNull();
        System.setProperty(ProcessCounters.DIR_PROPERTY, dir.resolve("counters").toString());
    }

    @AfterEach
    void resetSettings()
    {
        System.clearProperty(ProcessCounters.DIR_PROPERTY);
        System.clearProperty(ProcessCounters.MAX_PROPERTY);
    }

    @Test
    void shouldRefuseADirectoryOwnedByAnotherUserNamingTheOwner() throws IOException
    {
        final Path other = Files.createDirectory(dir.resolve("other"),
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx--x--x")));
        final long self = CountersDirectory.processUid();
        final String owner = Files.getOwner(other).getName();
        // Seen by a process of another uid, this directory is another user's: mode 0711 passes the mode check alone.
        assertThatThrownBy(() -> CountersDirectory.ensureDirectory(other, self + 1))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("is owned by " + owner + " (uid " + self + "), not by this user (uid " + (self + 1) + ")");
        assertThatThrownBy(() -> CountersDirectory.scan(other, self + 1))
            .isInstanceOf(IOException.class).hasMessageContaining("is owned by " + owner);
        CountersDirectory.ensureDirectory(other, self); // its own user's: accepted
        assertThat(CountersDirectory.scan(other, self)).isEmpty();
    }

    /** As root (the attack suite's case, held here when the build runs as root): a real other owner. */
    @Test
    void shouldKeepCountersInMemoryWhenAnotherUserPreCreatedTheDirectory() throws IOException
    {
        assumeThat(CountersDirectory.processUid()).as("needs root to give a directory to another uid").isZero();
        final Path other = Files.createDirectory(dir.resolve("counters"));
        Files.setPosixFilePermissions(other, PosixFilePermissions.fromString("rwx--x--x"));
        Files.setAttribute(other, "unix:uid", 65534);
        final ProcessCounters counters = ProcessCounters.acquire();
        try
        {
            assertThat(counters.file()).as("not in another user's directory").isNull();
            assertThat(Files.list(other)).isEmpty();
        }
        finally
        {
            counters.release();
        }
    }

    @Test
    void shouldNotFollowASymlinkedDirectoryWhenReading() throws IOException
    {
        final ProcessCounters live = ProcessCounters.acquire();
        try
        {
            final Path real = live.file().getParent();
            final Path link = Files.createSymbolicLink(dir.resolve("link"), real);
            assertThatThrownBy(() -> CountersDirectory.scan(link))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("is a symbolic link (to " + real + ")");
            assertThat(CountersDirectory.scan(real)).hasSize(1);
        }
        finally
        {
            live.release();
        }
    }

    @Test
    void shouldDeleteNothingThroughASymlinkedDirectory() throws IOException
    {
        final Path real = Files.createDirectory(dir.resolve("real"),
            PosixFilePermissions.asFileAttribute(CountersDirectory.DIR_PERMISSIONS));
        final Path stale = Files.write(real.resolve(CountersLayout.FILE_PREFIX + "1-a" + CountersLayout.FILE_SUFFIX),
            new byte[CountersLayout.HEADER_LENGTH]); // unlocked: stale
        final Path link = Files.createSymbolicLink(dir.resolve("link"), real);

        assertThatThrownBy(() -> CountersDirectory.deleteStale(link))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("is a symbolic link (to " + real + ")")
            .hasMessageEndingWith("; nothing deleted");
        assertThat(stale).exists();
        final long self = CountersDirectory.processUid();
        assertThatThrownBy(() -> CountersDirectory.deleteStale(real, self + 1, System.currentTimeMillis()))
            .as("a directory of another uid").isInstanceOf(IOException.class).hasMessageContaining("is owned by");
        assertThat(stale).exists();

        assertThat(CountersDirectory.deleteStale(real)).as("this user's own directory").isEqualTo(1);
        assertThat(stale).doesNotExist();
        assertThat(CountersDirectory.deleteStale(dir.resolve("nowhere"))).isZero();
    }

    /** As root (the attack suite's case, held here when the build runs as root): a real other owner. */
    @Test
    void shouldNotDeleteAnotherUsersFile() throws IOException
    {
        assumeThat(CountersDirectory.processUid()).as("skipped: needs root (uid 0) to give a file to another uid; " +
            "run the build as root, e.g. sudo mvn -pl reverb-common test -Dtest=CountersLocalUserTest").isZero();
        final Path own = Files.createDirectory(dir.resolve("own"),
            PosixFilePermissions.asFileAttribute(CountersDirectory.DIR_PERMISSIONS));
        final Path foreign = Files.write(own.resolve(CountersLayout.FILE_PREFIX + "1-a" + CountersLayout.FILE_SUFFIX),
            new byte[CountersLayout.HEADER_LENGTH]);
        Files.setAttribute(foreign, "unix:uid", 65534);

        assertThat(CountersDirectory.deleteStale(own)).isZero();
        assertThat(foreign).exists();
    }

    @Test
    void shouldReadACorruptRecordWithinBoundsAndKeepReadingTheOthers() throws IOException
    {
        final ProcessCounters live = ProcessCounters.acquire();
        final CounterGroup group = live.newGroup(CountersLayout.KIND_ENGINE, "good", 0);
        group.counter("first").incrementRelease();
        group.counter("second").incrementRelease();
        final Path corrupt = live.file().resolveSibling(CountersLayout.FILE_PREFIX + "1-corrupt" + CountersLayout.FILE_SUFFIX);
        Files.copy(live.file(), corrupt);
        try (FileChannel channel = FileChannel.open(corrupt, StandardOpenOption.READ, StandardOpenOption.WRITE);
            FileLock lock = channel.lock())
        {
            // The first record's label says 2 GiB: Agrona's reader would throw (or read a neighbour's bytes).
            final UnsafeBuffer bytes = new UnsafeBuffer(Files.readAllBytes(corrupt));
            bytes.putInt(CountersLayout.HEADER_LENGTH + CountersReader.LABEL_OFFSET, Integer.MAX_VALUE);
            bytes.putInt(CountersLayout.HEADER_LENGTH + CountersReader.METADATA_LENGTH + CountersReader.LABEL_OFFSET, 400);
            channel.write(ByteBuffer.wrap(bytes.byteArray()), 0);
            assertThat(lock.isValid()).isTrue();

            final List<CountersDirectory.Entry> entries = CountersDirectory.scan(live.file().getParent());
            assertThat(entries).hasSize(2).allSatisfy(e -> assertThat(e.process()).isNotNull());
            final CountersDirectory.Entry bad = entries.stream().filter(e -> e.file().equals(corrupt)).findFirst().get();
            assertThat(bad.process().counters()).extracting(CounterValue::group, CounterValue::name)
                .containsExactly(tuple("?", "first"),
                    tuple("?", "second"));
        }
        finally
        {
            group.close();
            live.release();
        }
    }

    /** A sparse file leaves pages to allocate on first touch: SIGBUS there when /dev/shm is full. */
    @Test
    void shouldWriteTheWholeFileBeforeMappingIt() throws Exception
    {
        System.setProperty(ProcessCounters.MAX_PROPERTY, "1024");
        final ProcessCounters counters = ProcessCounters.acquire();
        try
        {
            final long length = Files.size(counters.file());
            assertThat(length).isEqualTo(CountersLayout.HEADER_LENGTH + CountersLayout.metadataLength(1024) +
                CountersLayout.valuesLength(1024));
            final Process stat = new ProcessBuilder("stat", "-c", "%b %B", counters.file().toString())
                .redirectErrorStream(true).start();
            assertThat(stat.waitFor(30, TimeUnit.SECONDS)).isTrue();
            final String[] blocks = new String(stat.getInputStream().readAllBytes()).trim().split(" ");
            assumeThat(stat.exitValue()).as("stat(1) available").isZero();
            final long allocated = Long.parseLong(blocks[0]) * Long.parseLong(blocks[1]);
            assertThat(allocated).as("bytes allocated to the file (not sparse)").isGreaterThanOrEqualTo(length);
        }
        finally
        {
            counters.release();
        }
    }

    /** Connection churn: a freed slot is reused after the grace period, so the file never fills up for good. */
    @Test
    void shouldReuseFreedSlotsSoChurnCannotFillTheFile() throws IOException
    {
        System.setProperty(ProcessCounters.MAX_PROPERTY, "16");
        final CachedEpochClock clock = new CachedEpochClock();
        ProcessCounters.reuseClock = clock;
        final ProcessCounters counters = ProcessCounters.acquire();
        try
        {
            for (int connection = 0; connection < 100; connection++)
            {
                final String label = "#" + connection;
                final CounterGroup group = counters.newGroup(CountersLayout.KIND_CONNECTION, label, 0);
                for (int i = 0; i < 12; i++)
                {
                    group.counter("c" + i).incrementRelease();
                }
                assertThat(counters.view().counters()).as("connection %d in the file", connection)
                    .filteredOn(c -> c.group().equals(label)).hasSize(12);
                group.close();
                clock.advance(ProcessCounters.FREE_TO_REUSE_MS);
            }
        }
        finally
        {
            counters.release();
            ProcessCounters.reuseClock = SystemEpochClock.INSTANCE;
        }
    }
}
