package io.reverb.common.counters;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.management.ThreadMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.AtomicCounter;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The counters file of this process: written where configured, read back by {@link CountersDirectory} with the
 * values the counters hold, removed on the last release; stale and foreign files recognised and skipped.
 */
class ProcessCountersTest
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
        System.clearProperty(ProcessCounters.ENABLED_PROPERTY);
    }

    @Test
    void shouldShowCountersOfThisProcessAndDeleteTheFileOnLastRelease() throws IOException
    {
        final ProcessCounters counters = ProcessCounters.acquire();
        final ProcessCounters again = ProcessCounters.acquire();
        assertThat(again).isSameAs(counters);
        final Path file = counters.file();
        assertThat(file).exists().hasParent(dir.resolve("counters"));
        assertThat(Files.getPosixFilePermissions(file)).isEqualTo(CountersDirectory.FILE_PERMISSIONS);
        assertThat(Files.getPosixFilePermissions(file.getParent())).isEqualTo(CountersDirectory.DIR_PERMISSIONS);

        final CounterGroup engine = counters.newGroup(CountersLayout.KIND_ENGINE, "engine e1 shm", 0);
        final CounterGroup connection = counters.newGroup(CountersLayout.KIND_CONNECTION, "e1 #1 shm://peer", engine.id());
        final AtomicCounter sent = connection.counter("messages sent");
        final AtomicCounter bytes = connection.counter("bytes sent");
        connection.gauge("credits available", () -> 17);
        for (int i = 0; i < 5; i++)
        {
            sent.incrementRelease();
            bytes.getAndAddRelease(64);
        }
        connection.relabel("e1 #1 shm://peer-b (connected)");

        final List<CountersDirectory.Entry> entries = CountersDirectory.scan(dir.resolve("counters"));
        assertThat(entries).hasSize(1);
        final LiveProcess process = entries.get(0).process();
        assertThat(process).isNotNull();
        assertThat(process.pid()).isEqualTo(ProcessHandle.current().pid());
        assertThat(process.heartbeatMillis()).isPositive();
        assertThat(process.counters()).containsExactly(
            new CounterValue(sent.id(), CountersLayout.KIND_CONNECTION, connection.id(), engine.id(),
                "e1 #1 shm://peer-b (connected)", "messages sent", 5),
            new CounterValue(bytes.id(), CountersLayout.KIND_CONNECTION, connection.id(), engine.id(),
                "e1 #1 shm://peer-b (connected)", "bytes sent", 320),
            new CounterValue(bytes.id() + 1, CountersLayout.KIND_CONNECTION, connection.id(), engine.id(),
                "e1 #1 shm://peer-b (connected)", "credits available", 17));

        connection.close();
        assertThat(CountersDirectory.scan(dir.resolve("counters")).get(0).process().counters()).isEmpty();

        again.release();
        assertThat(file).exists();
        counters.release();
        assertThat(file).doesNotExist();
        assertThat(ProcessCounters.current()).isNull();
        engine.close();
    }

    @Test
    void shouldSkipStaleAndForeignFiles() throws IOException
    {
        final Path counters = dir.resolve("counters");
        final ProcessCounters live = ProcessCounters.acquire();
        try
        {
            // a dead process's file: a complete header, but nobody holds its lock
            final Path stale = counters.resolve(CountersLayout.FILE_PREFIX + "999999-1" + CountersLayout.FILE_SUFFIX);
            Files.copy(live.file(), stale);
            final Path foreign = counters.resolve(CountersLayout.FILE_PREFIX + "999999-2" + CountersLayout.FILE_SUFFIX);
            Files.write(foreign, new byte[2048]);
            Files.write(foreign, "not a counters file".getBytes(StandardCharsets.US_ASCII),
                StandardOpenOption.WRITE);

            final List<CountersDirectory.Entry> entries = CountersDirectory.scan(counters);
            assertThat(entries).hasSize(3);
            assertThat(entries).filteredOn(e -> e.file().equals(stale)).singleElement()
                .satisfies(e -> assertThat(e.process()).isNull())
                .satisfies(e -> assertThat(e.problem()).startsWith("stale"));
            assertThat(entries).filteredOn(e -> e.file().equals(foreign)).singleElement()
                .satisfies(e -> assertThat(e.problem()).startsWith("stale"));
            assertThat(entries).filteredOn(e -> e.file().equals(live.file())).singleElement()
                .satisfies(e -> assertThat(e.process()).isNotNull());

            // stale files go (this one and the unlocked foreign one); the live file stays, and so does a file named
            // for this process's pid (never opened by the cleaner: closing it would drop this JVM's lock on it)
            final Path ownPid = counters.resolve(CountersLayout.FILE_PREFIX + ProcessHandle.current().pid() + "-2" +
                CountersLayout.FILE_SUFFIX);
            Files.copy(live.file(), ownPid);
            assertThat(CountersDirectory.deleteStale(counters)).isEqualTo(2);
            assertThat(stale).doesNotExist();
            assertThat(foreign).doesNotExist();
            assertThat(live.file()).exists();
            assertThat(ownPid).exists();
        }
        finally
        {
            live.release();
        }
    }

    /** A writer killed between creating its file and renaming it leaves reverb-PID-HEX.counters.new. */
    @Test
    void shouldDeleteTheFileOfAWriterKilledWhileCreatingIt() throws IOException
    {
        final Path counters = dir.resolve("counters");
        CountersDirectory.ensureDirectory(counters);
        final String name = CountersLayout.FILE_PREFIX + "999999-1" + CountersLayout.FILE_SUFFIX +
            CountersLayout.CREATING_SUFFIX;
        final Path left = Files.write(counters.resolve(name), new byte[CountersLayout.HEADER_LENGTH]);
        final long created = Files.getLastModifiedTime(left).toMillis();
        final long uid = CountersDirectory.processUid();

        // unlocked, but young: its writer may be about to lock it
        assertThat(CountersDirectory.deleteStale(counters, uid, created + CountersDirectory.CREATING_GRACE_MS - 1))
            .isZero();
        assertThat(left).exists();
        // older than the grace period, still unlocked: left behind for good
        assertThat(CountersDirectory.deleteStale(counters, uid, created + CountersDirectory.CREATING_GRACE_MS))
            .isEqualTo(1);
        assertThat(left).doesNotExist();
    }

    @Test
    void shouldKeepCountersInMemoryWhenTheFileIsFullOrOff() throws IOException
    {
        System.setProperty(ProcessCounters.MAX_PROPERTY, "16");
        final ProcessCounters counters = ProcessCounters.acquire();
        try
        {
            final CounterGroup group = counters.newGroup(CountersLayout.KIND_ENGINE, "big", 0);
            AtomicCounter last = null;
            for (int i = 0; i < 20; i++)
            {
                last = group.counter("c" + i);
                last.incrementRelease();
            }
            assertThat(last.get()).isEqualTo(1);
            assertThat(CountersDirectory.scan(counters.file().getParent()).get(0).process().counters()).hasSize(16);
            group.relabel("still fine");
            group.close();
        }
        finally
        {
            counters.release();
        }

        System.setProperty(ProcessCounters.ENABLED_PROPERTY, "off");
        final ProcessCounters off = ProcessCounters.acquire();
        try
        {
            assertThat(off.file()).isNull();
            final AtomicCounter counter = off.newGroup(CountersLayout.KIND_ENGINE, "memory", 0).counter("c");
            counter.incrementRelease();
            assertThat(off.view().counters()).extracting(CounterValue::value).containsExactly(1L);
        }
        finally
        {
            off.release();
        }
    }

    @Test
    void shouldGiveACounterOfMemoryOnlyToWhoAsksAfterTheGroupClosed() throws IOException
    {
        final ProcessCounters counters = ProcessCounters.acquire();
        try
        {
            final CounterGroup method = counters.newGroup(CountersLayout.KIND_SERVER_METHOD, "server m", 0);
            method.counter("calls started").increment();
            method.close();

            // A call cancelled while its server is torn down ends after the method's counters were freed.
            final AtomicCounter late = method.counter("calls finished CANCELLED");
            late.increment();
            assertThat(late.get()).isEqualTo(1);
            assertThat(CountersDirectory.scan(counters.file().getParent()).get(0).process().counters())
                .as("nothing of the closed group in the file").isEmpty();
        }
        finally
        {
            counters.release();
        }
    }

    @Test
    void shouldRefuseADirectoryOpenToOthers() throws IOException
    {
        final Path open = dir.resolve("open");
        Files.createDirectory(open);
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxrwxrwx"));
        System.setProperty(ProcessCounters.DIR_PROPERTY, open.toString());
        final ProcessCounters counters = ProcessCounters.acquire();
        try
        {
            assertThat(counters.file()).as("falls back to memory, with a warning").isNull();
        }
        finally
        {
            counters.release();
        }
    }

    @Test
    void shouldCheckTheHeaderOfWhatItMaps() throws IOException
    {
        assertThat(CountersLayout.checkHeader(new UnsafeBuffer(new byte[CountersLayout.HEADER_LENGTH])))
            .isEqualTo("not written yet");
        final ProcessCounters counters = ProcessCounters.acquire();
        try
        {
            final byte[] bytes = Files.readAllBytes(counters.file());
            final UnsafeBuffer copy = new UnsafeBuffer(bytes);
            assertThat(CountersLayout.checkHeader(copy)).isNull();
            copy.putInt(CountersLayout.MAGIC_OFFSET, 0x12345678);
            assertThat(CountersLayout.checkHeader(copy)).isEqualTo("not a Reverb counters file");
            copy.putInt(CountersLayout.MAGIC_OFFSET, CountersLayout.MAGIC);
            copy.putInt(CountersLayout.VERSION_OFFSET, 99);
            assertThat(CountersLayout.checkHeader(copy)).isEqualTo("layout version 99, this reader knows 1");
            copy.putInt(CountersLayout.VERSION_OFFSET, CountersLayout.VERSION);
            copy.putInt(CountersLayout.VALUES_LENGTH_OFFSET, Integer.MAX_VALUE);
            assertThat(CountersLayout.checkHeader(copy)).contains("do not fit a file of");
            assertThat(CountersLayout.checkHeader(new UnsafeBuffer(bytes, 0, 100))).isEqualTo("shorter than its header");
        }
        finally
        {
            counters.release();
        }
    }

    @Test
    void shouldCountWithoutAllocating()
    {
        final ProcessCounters counters = ProcessCounters.acquire();
        try
        {
            final CounterGroup group = counters.newGroup(CountersLayout.KIND_CONNECTION, "c", 0);
            final AtomicCounter single = group.counter("single writer");
            final AtomicCounter shared = group.counter("several writers");
            final AtomicCounter detached = CounterGroup.detached("memory").counter("in memory");
            final ThreadMXBean threads = (ThreadMXBean)ManagementFactory.getThreadMXBean();
            count(single, shared, detached, 10_000); // class loading and the first compilations
            // The fewest bytes of five rounds: a round that meets a JIT compilation or deoptimisation on a loaded
            // machine allocates a few KiB once; code that allocates per increment allocates in every round.
            long fewest = Long.MAX_VALUE;
            for (int round = 0; round < 5; round++)
            {
                final long before = threads.getCurrentThreadAllocatedBytes();
                count(single, shared, detached, 100_000);
                fewest = Math.min(fewest, threads.getCurrentThreadAllocatedBytes() - before);
            }
            assertThat(fewest).as("bytes allocated by 300,000 increments (fewest of five rounds)").isLessThan(1_000);
            assertThat(single.get()).isEqualTo(510_000);
            assertThat(shared.get()).isEqualTo(510_000 * 64L);
            assertThat(detached.get()).isEqualTo(510_000);
            group.close();
        }
        finally
        {
            counters.release();
        }
    }

    private static void count(final AtomicCounter single, final AtomicCounter shared, final AtomicCounter detached,
        final int times)
    {
        for (int i = 0; i < times; i++)
        {
            single.incrementRelease();
            shared.getAndAdd(64);
            detached.incrementRelease();
        }
    }
}
