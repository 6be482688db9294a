package io.reverb.bench.stat;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.counters.CounterGroup;
import io.reverb.common.counters.CountersLayout;
import io.reverb.common.counters.ProcessCounters;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.agrona.concurrent.status.AtomicCounter;
import org.agrona.concurrent.status.CountersReader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Issue 38, item 4: reverb-stat against hostile or corrupt counters files and a directory that is not this user's
 * own. Names are printed with their control characters escaped; a corrupt file is read within bounds and hides no
 * other file; a symbolic link in place of the directory is refused with exit code 3, by --clean too (nothing deleted
 * through it). A long --watch keeps the values of the counters it last printed only.
 */
class ReverbStatHostileFileTest
{
    @TempDir
    Path dir;
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    @BeforeEach
    void useTempDir()
    {
        System.setProperty(ProcessCounters.DIR_PROPERTY, dir.resolve("counters").toString());
    }

    @AfterEach
    void resetSettings()
    {
        System.clearProperty(ProcessCounters.DIR_PROPERTY);
    }

    private int run(final String... args)
    {
        return ReverbStat.run(args, new PrintWriter(out), new PrintWriter(err));
    }

    @Test
    void shouldEscapeNamesAndPrintEveryFileWhenOneIsCorrupt() throws IOException
    {
        final ProcessCounters counters = ProcessCounters.acquire();
        try
        {
            final AtomicCounter counter = counters.newGroup(CountersLayout.KIND_ENGINE, "engine \u001b]0;owned\u0007 x", 0)
                .counter("sent \u001b[2J\r");
            counter.getAndAddRelease(42);
            // A file that sorts first, live (its lock held), whose first record claims a 2 GiB label.
            final Path corrupt = counters.file().resolveSibling(CountersLayout.FILE_PREFIX + "1-a" + CountersLayout.FILE_SUFFIX);
            Files.copy(counters.file(), corrupt);
            try (FileChannel channel = FileChannel.open(corrupt, StandardOpenOption.READ, StandardOpenOption.WRITE);
                FileLock lock = channel.lock())
            {
                final ByteBuffer length = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, Integer.MAX_VALUE);
                channel.write(length, CountersLayout.HEADER_LENGTH + CountersReader.LABEL_OFFSET);
                assertThat(lock.isValid()).isTrue();

                assertThat(run("--dir", counters.file().getParent().toString())).as(err.toString()).isEqualTo(ReverbStat.OK);
            }
            final String printed = out.toString();
            assertThat(printed).doesNotContain("\u001b", "\u0007", "\r");
            assertThat(printed).contains("engine engine \\x1b]0;owned\\x07 x", "sent \\x1b[2J\\x0d ");
            assertThat(printed).as("the corrupt file's counter, its label unread").contains("engine ?");
            assertThat(printed.split("pid " + ProcessHandle.current().pid(), -1)).as("both files printed").hasSize(3);
        }
        finally
        {
            counters.release();
        }
    }

    @Test
    void shouldRefuseASymbolicLinkInPlaceOfTheDirectory() throws IOException
    {
        final ProcessCounters counters = ProcessCounters.acquire();
        try
        {
            final Path link = Files.createSymbolicLink(dir.resolve("link"), counters.file().getParent());
            assertThat(run("--dir", link.toString())).isEqualTo(ReverbStat.UNREADABLE);
            assertThat(err.toString()).contains("is a symbolic link");
            assertThat(out.toString()).doesNotContain("pid ");
        }
        finally
        {
            counters.release();
        }
    }

    @Test
    void shouldDeleteNothingThroughASymbolicLinkInPlaceOfTheDirectory() throws IOException
    {
        final Path real = Files.createDirectory(dir.resolve("real"));
        final Path stale = Files.write(real.resolve(CountersLayout.FILE_PREFIX + "1-a" + CountersLayout.FILE_SUFFIX),
            new byte[CountersLayout.HEADER_LENGTH]); // nobody holds its lock: stale, were the directory this user's
        final Path link = Files.createSymbolicLink(dir.resolve("link"), real);

        assertThat(run("--clean", "--dir", link.toString())).isEqualTo(ReverbStat.UNREADABLE);

        assertThat(stale).exists();
        assertThat(err.toString()).contains("reverb-stat: --clean: " + link + " is a symbolic link (to " + real + ")")
            .contains("nothing deleted").doesNotContain("deleted 1");
        assertThat(out.toString()).isEmpty();
    }

    /** A long --watch over connections that come and go: the values kept for rates are only those last printed. */
    @Test
    void shouldForgetTheValuesOfGroupsGoneUnderWatch() throws IOException
    {
        final ProcessCounters counters = ProcessCounters.acquire();
        final List<CounterGroup> groups = new ArrayList<>();
        try
        {
            final Path directory = counters.file().getParent();
            final ReverbStat stat = new ReverbStat(new PrintWriter(out), new PrintWriter(err));
            new CommandLine(stat).parseArgs("--watch", "--dir", directory.toString(), "--connection", "watch-test #");
            for (int i = 0; i < 3; i++)
            {
                final CounterGroup group = counters.newGroup(CountersLayout.KIND_CONNECTION, "watch-test #" + i, 0);
                group.counter("messages sent").incrementRelease();
                group.counter("bytes sent").getAndAddRelease(64);
                groups.add(group);
            }
            assertThat(stat.printOnce(directory, true)).as(err.toString()).isEqualTo(ReverbStat.OK);
            assertThat(stat.previousValues()).hasSize(6);

            groups.remove(0).close();
            assertThat(stat.printOnce(directory, false)).isEqualTo(ReverbStat.OK);
            assertThat(stat.previousValues()).hasSize(4);

            groups.forEach(CounterGroup::close);
            groups.clear();
            assertThat(stat.printOnce(directory, false)).isEqualTo(ReverbStat.NOTHING);
            assertThat(stat.previousValues()).as("every group gone: nothing kept").isEmpty();
        }
        finally
        {
            groups.forEach(CounterGroup::close);
            counters.release();
        }
    }

    @Test
    void shouldEscapeWhatATerminalWouldActOn()
    {
        assertThat(ReverbStat.printable("plain name:1/2")).isEqualTo("plain name:1/2");
        assertThat(ReverbStat.printable("\u0085a\u001bb\u007fc\\d\u202ee\u2067"))
            .isEqualTo("\\x85a\\x1bb\\x7fc\\\\d\\u202ee\\u2067");
    }
}
