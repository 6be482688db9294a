package io.reverb.bench.report;

import io.reverb.bench.load.RunResult;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class RoundMediansTest
{
    private static RunResult run(final String label, final String framework, final int round, final long nanos)
    {
        final RunResult r = FloorComparisonTest.run(label, framework, "BUSY", nanos);
        r.label = label + " #" + round;
        r.round = round;
        r.uri = r.uri + round;
        return r;
    }

    /** Three rounds in which the machine's speed drifts: round 2 is twice as slow for every target of the round. */
    private static List<RunResult> threeRounds()
    {
        return List.of(
            run("reverb shm busy", "reverb", 1, 3_000), run("floor engine rings busy", "floor", 1, 2_000),
            run("grpc-java netty", "grpc-java", 1, 300_000),
            run("reverb shm busy", "reverb", 2, 6_000), run("floor engine rings busy", "floor", 2, 4_000),
            run("grpc-java netty", "grpc-java", 2, 600_000),
            run("reverb shm busy", "reverb", 3, 4_000), run("floor engine rings busy", "floor", 3, 2_000),
            run("grpc-java netty", "grpc-java", 3, 200_000));
    }

    @Test
    void shouldPairRunsOnlyWithinTheirRound()
    {
        final List<RunResult> runs = threeRounds();

        final List<FloorComparison> floor = FloorComparison.of(runs);
        assertThat(floor).hasSize(3);
        for (final FloorComparison c : floor)
        {
            assertThat(c.floor().round).isEqualTo(c.run().round);
        }
        final List<Comparison> grpc = Comparison.against(runs);
        // every run of each round (Reverb's and the floor's) against that round's grpc-java run, not the others'
        assertThat(grpc).hasSize(6);
        for (final Comparison c : grpc)
        {
            assertThat(c.baseline().round).isEqualTo(c.run().round);
        }
        assertThat(floor.get(0).p50Times()).isCloseTo(1.5, within(0.01));
        assertThat(floor.get(2).p50Times()).isCloseTo(2.0, within(0.01));
    }

    @Test
    void shouldPrintEachPairsMedianOverTheRounds()
    {
        final String text = TextReport.write(threeRounds());

        assertThat(text).contains("Medians over 3 rounds");
        // floor: 1.50, 1.50, 2.00 -> median 1.50; grpc-java: 100, 100, 50 -> median 100
        assertThat(text).containsPattern("reverb shm busy +vs floor engine rings busy +p50 +1\\.50x the floor .*" +
            "p50 by round: 1\\.50, 1\\.50, 2\\.00");
        assertThat(text).containsPattern("reverb shm busy +vs grpc-java netty +p50 +100\\.0x lower .*" +
            "p50 by round: 100\\.0, 100\\.0, 50\\.0");
        // the same in the JSON and the HTML report
        final String json = JsonReport.write(threeRounds());
        assertThat(json).contains("\"roundMedians\"", "\"floor\" : \"floor engine rings busy\"", "\"p50\" : 1.500")
            .containsPattern("\"p50ByRound\" : \\[ 1\\.500\\d*, 1\\.500\\d*, 2\\.000\\d* \\]");
        assertThat(HtmlReport.write(threeRounds(), "t", "reverb-bench")).contains("Medians over 3 rounds",
            "1.50x the floor", "1.50, 1.50, 2.00");
    }

    @Test
    void shouldTakeTheMeanOfTheMiddleTwoForAnEvenCount()
    {
        assertThat(RoundMedians.median(List.of(4.0, 1.0, 3.0, 2.0), Double::doubleValue)).isEqualTo(2.5);
        assertThat(RoundMedians.median(List.of(7.0), Double::doubleValue)).isEqualTo(7.0);
    }

    @Test
    void shouldKeepRoundsThroughJsonAndPrintNoMediansForOneRound()
    {
        final List<RunResult> read = JsonReport.read(JsonReport.write(threeRounds()));

        assertThat(read).extracting(r -> r.round).containsExactly(1, 1, 1, 2, 2, 2, 3, 3, 3);
        assertThat(read.get(3).baseLabel()).isEqualTo("reverb shm busy");
        assertThat(FloorComparison.of(read)).hasSize(3);
        final List<RunResult> one = List.of(run("reverb shm busy", "reverb", 1, 3_000),
            run("floor engine rings busy", "floor", 1, 2_000));
        assertThat(TextReport.write(one)).contains("Against the floor").doesNotContain("Medians over");
        assertThat(JsonReport.write(one)).contains("\"roundMedians\" : [ ]");
    }
}
