package io.reverb.bench.stat;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.reverb.common.counters.CounterValue;
import io.reverb.common.counters.CountersDirectory;
import io.reverb.common.counters.CountersLayout;
import io.reverb.common.counters.LiveProcess;
import java.util.List;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.CountersReader;

/**
 * Fuzz target for the counters-file reader (issue 38): any bytes as the image of a counters file, read as
 * {@code reverb-stat} reads one (header check, then every counter), and printed as it prints them. Regression mode
 * runs the checked-in corpus in {@code mvn verify}; see FUZZING.md at the repository root to fuzz it for minutes.
 * (In this module, not reverb-common: Jazzer on a test classpath disturbs reverb-common's allocation test.)
 *
 * <p>What must hold: the reader refuses the header with a reason, or reads it within bounds: nothing thrown, the
 * command, labels and names no longer than their limits, no more counters than the file has records, and nothing
 * printed that a terminal would act on.
 */
class CountersFileFuzzTest
{
    @FuzzTest
    void readsAnyFile(final byte[] input)
    {
        final CountersDirectory.Entry entry = CountersDirectory.read(new UnsafeBuffer(input));
        if (entry.process() == null)
        {
            assertThat(entry.problem()).isNotEmpty();
            return;
        }
        final LiveProcess process = entry.process();
        process.pid();
        process.startTimeMillis();
        process.heartbeatMillis();
        assertThat(process.command().length()).isLessThanOrEqualTo(CountersLayout.MAX_COMMAND_LENGTH);
        assertPrintable(ReverbStat.printable(process.command()));
        final List<CounterValue> counters = process.counters();
        assertThat(counters.size()).isLessThanOrEqualTo((input.length - CountersLayout.HEADER_LENGTH) /
            (CountersReader.METADATA_LENGTH + CountersReader.COUNTER_LENGTH));
        for (final CounterValue counter : counters)
        {
            assertThat(counter.group().length()).isLessThanOrEqualTo(CountersReader.MAX_LABEL_LENGTH);
            assertThat(counter.name().length()).isLessThanOrEqualTo(CountersLayout.MAX_NAME_LENGTH);
            assertPrintable(ReverbStat.printable(counter.group()));
            assertPrintable(ReverbStat.printable(counter.name()));
            counter.kindName();
        }
    }

    private static void assertPrintable(final String text)
    {
        assertThat(text.chars().filter(c -> c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)).count())
            .as("control characters in %s", text).isZero();
    }
}
