package io.reverb.bench.report;

import io.reverb.bench.load.RunResult;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class FloorComparisonTest
{
    /** A finished run whose every call took {@code nanos}; shared with {@link RoundMediansTest}. */
    static RunResult run(final String label, final String framework, final String polling, final long nanos)
    {
        final RunResult r = new RunResult();
        r.label = label;
        r.framework = framework;
        r.uri = "x://" + label.replace(' ', '-');
        r.server = "separate-process";
        r.kind = "unary";
        r.payloadSize = 64;
        r.concurrency = 1;
        r.polling = polling;
        r.latency = new Histogram(3);
        for (int i = 0; i < 10_000; i++)
        {
            r.latency.recordValue(nanos);
        }
        r.count = 10_000;
        r.ok = 10_000;
        r.messages = 10_000;
        r.elapsedNanos = 1_000_000_000L;
        r.statuses.put("OK", 10_000L);
        r.timestamp = "2026-01-01T00:00:00Z";
        r.environment = "test";
        return r;
    }

    @Test
    void shouldCompareEachReverbRunWithTheFloorOfTheSamePollingMode()
    {
        final RunResult shmBusy = run("reverb shm busy", "reverb", "BUSY", 3_000);
        final RunResult shmAdaptive = run("reverb shm adaptive", "reverb", "ADAPTIVE", 4_000);
        final RunResult floorBusy = run("floor engine rings busy", "floor", "BUSY", 2_000);
        final RunResult grpc = run("grpc-java netty", "grpc-java", "", 200_000);

        final List<FloorComparison> comparisons = FloorComparison.of(List.of(shmBusy, shmAdaptive, floorBusy, grpc));

        assertThat(comparisons).hasSize(1);
        assertThat(comparisons.get(0).run()).isSameAs(shmBusy);
        assertThat(comparisons.get(0).floor()).isSameAs(floorBusy);
        assertThat(comparisons.get(0).p50Times()).isCloseTo(1.5, within(0.01));
        assertThat(comparisons.get(0).p999Times()).isCloseTo(1.5, within(0.01));
    }

    @Test
    void shouldPrintTheRatioInTextJsonAndHtmlAndKeepItThroughAMerge()
    {
        final List<RunResult> runs = List.of(run("reverb shm busy", "reverb", "BUSY", 3_000),
            run("floor engine rings busy", "floor", "BUSY", 2_000));

        assertThat(TextReport.write(runs)).contains("Against the floor", "p50   1.50x the floor");
        final String json = JsonReport.write(runs);
        assertThat(json).contains("\"floorComparisons\"", "\"p50Times\" : 1.5");
        assertThat(HtmlReport.write(runs, "t", "reverb-bench")).contains("Reverb against the floor", "1.50x");
        // a report merged from JSON files compares the same runs
        assertThat(FloorComparison.of(JsonReport.read(json))).hasSize(1);
    }

    @Test
    void shouldPrintNothingWithoutAFloorRun()
    {
        final List<RunResult> runs = List.of(run("reverb shm busy", "reverb", "BUSY", 3_000));

        assertThat(TextReport.write(runs)).doesNotContain("Against the floor");
        assertThat(FloorComparison.of(runs)).isEmpty();
    }
}
