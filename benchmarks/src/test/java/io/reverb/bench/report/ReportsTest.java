package io.reverb.bench.report;

import io.reverb.bench.load.RunResult;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ReportsTest
{
    private static RunResult run(final String label, final String framework, final String uri, final long baseNanos)
    {
        final RunResult r = new RunResult();
        r.label = label;
        r.framework = framework;
        r.uri = uri;
        r.server = "separate-process";
        r.kind = "unary";
        r.payloadSize = 64;
        r.concurrency = 1;
        r.latency = new Histogram(3);
        for (int i = 1; i <= 10_000; i++)
        {
            r.latency.recordValue(baseNanos + i);
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
    void shouldRoundTripRunsThroughJson()
    {
        final RunResult original = run("reverb \"shm\"", "reverb", "shm://x", 1_000);
        original.rps = 500;
        original.serviceTime = original.latency.copy();

        final List<RunResult> read = JsonReport.read(JsonReport.write(List.of(original)));

        assertThat(read).hasSize(1);
        final RunResult back = read.get(0);
        assertThat(back.label).isEqualTo(original.label);
        assertThat(back.count).isEqualTo(10_000);
        assertThat(back.rps).isEqualTo(500);
        assertThat(back.statuses).containsEntry("OK", 10_000L);
        assertThat(back.latency.getTotalCount()).isEqualTo(original.latency.getTotalCount());
        assertThat(back.latency.getValueAtPercentile(99.9)).isEqualTo(original.latency.getValueAtPercentile(99.9));
        assertThat(back.serviceTime.getTotalCount()).isEqualTo(10_000);
    }

    @Test
    void shouldCompareReverbWithTheGrpcNettyRunOfTheSameShape()
    {
        final RunResult reverb = run("reverb shm", "reverb", "shm://x", 1_000);
        final RunResult inproc = run("grpc-java inproc", "grpc-java", "grpc-inproc://x", 10_000);
        final RunResult netty = run("grpc-java netty", "grpc-java", "grpc://127.0.0.1:1", 100_000);

        final List<Comparison> comparisons = Comparison.against(List.of(reverb, inproc, netty));

        assertThat(comparisons).hasSize(1);
        assertThat(comparisons.get(0).baseline()).isSameAs(netty);
        assertThat(comparisons.get(0).p50Ratio()).isGreaterThan(10);
    }

    @Test
    void shouldWriteSelfContainedHtmlWithOnePlotLinePerRun()
    {
        final String html = HtmlReport.write(List.of(run("reverb shm", "reverb", "shm://x", 1_000),
            run("grpc-java <netty>", "grpc-java", "grpc://127.0.0.1:1", 100_000)), "t", "reverb-bench");

        assertThat(html).contains("<svg", "99.9%", "reverb shm", "grpc-java &lt;netty&gt;", "lower by");
        assertThat(html.split("<path d=", -1)).hasSize(3);
        assertThat(html).doesNotContain("src=", "href=", "<script", "<link");
    }

    @Test
    void shouldPlotAPayloadSweepWithOneLinePerTargetWhenRunsCoverSeveralSizes()
    {
        final List<RunResult> runs = new ArrayList<>();
        for (final int size : new int[]{64, 1024, 1 << 20})
        {
            final RunResult reverb = run("reverb shm", "reverb", "shm://x", 1_000);
            reverb.payloadSize = size;
            final RunResult grpc = run("grpc-java netty", "grpc-java", "grpc://127.0.0.1:1", 100_000);
            grpc.payloadSize = size;
            runs.add(reverb);
            runs.add(grpc);
        }

        final String html = HtmlReport.write(runs, "t", "reverb-bench");
        final String single = HtmlReport.write(runs.subList(0, 2), "t", "reverb-bench");

        assertThat(html).contains("Payload sweep", "1 MiB", "1 KiB", "64 B", "payload MB/s");
        // 6 percentile lines, then 2 sweep plots of one line per target
        assertThat(html.split("<path d=", -1)).hasSize(1 + 6 + 2 * 2);
        assertThat(single).doesNotContain("Payload sweep");
    }

    @Test
    void shouldWriteCsvWithAHeaderAndALinePerRun()
    {
        final String csv = CsvReport.write(List.of(run("a,b", "reverb", "shm://x", 1_000)));

        assertThat(csv.split("\n")).hasSize(2);
        assertThat(csv).startsWith(CsvReport.HEADER).contains("\"a,b\"");
    }

    @Test
    void shouldWriteTextWithPercentilesHistogramAndStatuses()
    {
        final String text = TextReport.write(List.of(run("reverb shm", "reverb", "shm://x", 1_000)));

        assertThat(text).contains("99.99 % in", "Response time histogram", "[OK]", "Throughput:");
    }
}
