package io.reverb.common.counters;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.util.List;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.CountersReader;

/**
 * Fuzz target for the counters-file reader (issue 38): any bytes as the image of a counters file, read as
 * {@code reverb-stat} reads one (header check, then every counter). Regression mode runs the checked-in corpus in
 * {@code mvn verify}; see FUZZING.md at the repository root to fuzz it for minutes.
 *
 * <p>What must hold: the reader refuses the header with a reason, or reads it within bounds: nothing thrown, the
 * command, labels and names no longer than their limits, no more counters than the file has records.
 */
class CountersFileFuzzTest
{
    @FuzzTest
    void readsAnyFile(final byte[] input)
    {
        final Object parsed = CountersDirectory.parse(null, new UnsafeBuffer(input));
        if (parsed instanceof String)
        {
            assertThat((String)parsed).isNotEmpty();
            return;
        }
        final LiveProcess process = (LiveProcess)parsed;
        process.pid();
        process.startTimeMillis();
        process.heartbeatMillis();
        assertThat(process.command().length()).isLessThanOrEqualTo(CountersLayout.MAX_COMMAND_LENGTH);
        final List<CounterValue> counters = process.counters();
        assertThat(counters.size()).isLessThanOrEqualTo((input.length - CountersLayout.HEADER_LENGTH) /
            (CountersReader.METADATA_LENGTH + CountersReader.COUNTER_LENGTH));
        for (final CounterValue counter : counters)
        {
            assertThat(counter.group().length()).isLessThanOrEqualTo(CountersReader.MAX_LABEL_LENGTH);
            assertThat(counter.name().length()).isLessThanOrEqualTo(CountersLayout.MAX_NAME_LENGTH);
            counter.kindName();
        }
    }
}
