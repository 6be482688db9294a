package io.reverb.bench;

import io.reverb.bench.load.RunResult;
import io.reverb.bench.report.JsonReport;
import io.reverb.bench.report.TextReport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ReverbBenchCliTest
{
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(final String... args) throws Exception
    {
        return ReverbBench.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String stdout()
    {
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void shouldRunAClosedLoopAndReportEveryCallAsJson() throws Exception
    {
        final int status = run("--uri", "grpc-inproc://cli-closed", "-n", "500", "-c", "4", "--warmup", "0",
            "--format", "json", "-q");

        assertThat(status).isZero();
        final List<RunResult> runs = JsonReport.read(stdout());
        assertThat(runs).hasSize(1);
        final RunResult r = runs.get(0);
        assertThat(r.count).isEqualTo(500);
        assertThat(r.ok).isEqualTo(500);
        assertThat(r.latency.getTotalCount()).isEqualTo(500);
        assertThat(r.server).isEqualTo("same-process");
        assertThat(r.framework).isEqualTo("grpc-java");
    }

    @Test
    void shouldRunAnOpenLoopMeasuredFromTheIntendedSendTime() throws Exception
    {
        final int status = run("--uri", "grpc-inproc://cli-open", "-n", "300", "--rps", "3000", "-c", "8",
            "--warmup", "0", "--format", "json", "-q");

        assertThat(status).isZero();
        final RunResult r = JsonReport.read(stdout()).get(0);
        assertThat(r.count).isEqualTo(300);
        assertThat(r.rps).isEqualTo(3000);
        assertThat(r.serviceTime).isNotNull();
        // Corrected latency can only be longer than the time from the actual send.
        assertThat(r.latency.getMaxValue())
            .isGreaterThanOrEqualTo(r.serviceTime.getMaxValue() - r.serviceTime.getMaxValue() / 100);
        // 300 calls at 3000/s take at least 0.1 s.
        assertThat(r.elapsedNanos).isGreaterThanOrEqualTo(99_000_000L);
    }

    @Test
    void shouldCarryOneMiBOnTheAeronAndTcpFloorsAndCountOnlyAnsweredCalls() throws Exception
    {
        // floor+aeron at 1 MiB once counted Aeron's refusal of every send as a finished call (1.46 M calls/s)
        final int status = run("--compare", "floor+aeron,floor+tcp", "--server", "same-process", "--payload", "64,1MiB",
            "-n", "40", "-c", "2", "--warmup", "0", "--format", "json", "-q");

        assertThat(status).isZero();
        final List<RunResult> runs = JsonReport.read(stdout());
        assertThat(runs).hasSize(4);
        for (final RunResult r : runs)
        {
            assertThat(r.framework).isEqualTo("floor");
            assertThat(r.count).as(r.label).isEqualTo(40);
            assertThat(r.ok).as(r.label + " " + r.payloadSize).isEqualTo(40);
        }
        assertThat(runs).extracting(r -> r.payloadSize).containsExactlyInAnyOrder(64, 64, 1 << 20, 1 << 20);
    }

    @Test
    void shouldRunTcpAndReverbInsideTls() throws Exception
    {
        // reverbs:// is reverb:// with TLS on its tcp connection: what bin/reverb-rdma-vm runs between two VMs to see
        // that it never moves to plaintext rdma (on one host without rdma it may only stay on tcp or take shm)
        final int status = run("--compare", "tcps://127.0.0.1:0,reverbs://127.0.0.1:0", "--server", "same-process",
            "-n", "50", "-c", "2", "--warmup", "0", "--format", "json", "-q");

        assertThat(status).as(err.toString(StandardCharsets.UTF_8)).isZero();
        final List<RunResult> runs = JsonReport.read(stdout());
        assertThat(runs).hasSize(2);
        assertThat(runs).allSatisfy(r -> assertThat(r.ok).as(r.label).isEqualTo(50));
        assertThat(runs.get(1).uri).startsWith("reverbs://");
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("fabric: ").doesNotContain("fabric: rdma");
    }

    @Test
    void shouldStreamAndCountEveryMessage() throws Exception
    {
        final int status = run("--uri", "grpc-inproc://cli-stream", "--kind", "server-streaming",
            "--stream-messages", "50", "-n", "20", "--warmup", "0", "--format", "csv", "-q");

        assertThat(status).isZero();
        final String[] lines = stdout().split("\n");
        assertThat(lines).hasSize(2);
        assertThat(lines[1]).contains("server-streaming,64,50,1,0.000,20,20,0,");
    }

    @Test
    void shouldStartTheServerInItsOwnProcessAndWriteAnHtmlReport(@TempDir final Path dir) throws Exception
    {
        final Path html = dir.resolve("report.html");
        final Path json = dir.resolve("runs.json");

        final int status = run("--compare", "grpc://127.0.0.1:0,grpc-inproc://cli-compare", "-n", "200",
            "--warmup", "0", "--format", "json", "-o", json.toString(), "--html", html.toString(), "-q");

        assertThat(status).isZero();
        final List<RunResult> runs = JsonReport.read(Files.readString(json));
        assertThat(runs).extracting(r -> r.server).containsExactly("separate-process", "same-process");
        assertThat(runs.get(0).uri).matches("grpc://127\\.0\\.0\\.1:[1-9][0-9]*");
        assertThat(runs).allSatisfy(r -> assertThat(r.ok).isEqualTo(200));
        assertThat(Files.readString(html)).contains("<svg", "grpc-java netty", "grpc-java inproc");

        out.reset();
        assertThat(run("report", json.toString(), "--format", "text")).isZero();
        assertThat(stdout()).contains("Side by side", "grpc-java netty", "grpc-java inproc");
    }

    @Test
    void shouldDriveReverbAndCompareItWithGrpcJava() throws Exception
    {
        final int status = run("--compare", "inproc://cli-reverb,grpc-inproc://cli-grpc", "--kind", "server-streaming",
            "--stream-messages", "10", "-n", "100", "-c", "2", "--warmup", "0", "-q");

        assertThat(status).isZero();
        assertThat(stdout()).contains("== reverb inproc", "== grpc-java inproc", "[OK]  100 responses",
            "vs grpc-java inproc", "lower");
    }

    @Test
    void shouldAlternateTheTargetsRoundByRoundAndPrintTheMedians() throws Exception
    {
        final int status = run("--compare", "inproc://cli-round,grpc-inproc://cli-round-grpc", "--rounds", "2",
            "-n", "200", "--warmup", "0", "--format", "json", "-q");

        assertThat(status).isZero();
        final List<RunResult> runs = JsonReport.read(stdout());
        // A B A B: each target once per round, in the order given
        assertThat(runs).extracting(r -> r.label).containsExactly("reverb inproc #1", "grpc-java inproc #1",
            "reverb inproc #2", "grpc-java inproc #2");
        assertThat(runs).extracting(r -> r.round).containsExactly(1, 1, 2, 2);
        assertThat(runs).allSatisfy(r -> assertThat(r.ok).isEqualTo(200));
        assertThat(TextReport.write(runs)).contains("Medians over 2 rounds",
            "reverb inproc #1             vs grpc-java inproc #1");
        assertThatThrownBy(() -> run("--rounds", "0")).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("--rounds");
    }

    @Test
    void shouldPrintTheIdleCpuResultOnceOnStdoutOnly() throws Exception
    {
        final int status = run("idle-cpu", "--uri", "shm://cli-idle-" + ProcessHandle.current().pid(), "--seconds", "1s");

        assertThat(status).isZero();
        assertThat(stdout().lines().filter(l -> l.contains("idle server process used"))).hasSize(1);
        assertThat(err.toString(StandardCharsets.UTF_8)).doesNotContain("idle server process used");
        if (Files.isDirectory(Path.of("/proc/self/task")))
        {
            // Linux: the same CPU split by the server's threads (ThreadCpuTest checks the arithmetic)
            assertThat(stdout()).containsPattern("the server's threads: Reverb [0-9.]+% .*, JVM [0-9.]+% ");
        }
        else
        {
            // no /proc: the split is left out rather than printed empty
            assertThat(stdout()).doesNotContain("the server's threads");
        }
    }

    @Test
    void shouldRejectUnknownOptionsAndConflictingLengths()
    {
        assertThatThrownBy(() -> run("--frobnicate")).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("--frobnicate");
        assertThatThrownBy(() -> run("-n", "10", "-z", "1s")).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("not both");
        assertThatThrownBy(() -> run("--polling", "SOMETIMES")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shouldKeepRepeatedOptionsInOrderAndLetTheLastSingleValueWin()
    {
        final BenchOptions o = BenchOptions.parse(new String[]{
            "--uri", "shm://a", "--compare", "tcp://h:1,,grpc://h:2", "-u", "inproc://d", "-c", "2", "-c", "3",
            "a.json", "--input", "b.json", "--polling", "event,Adaptive", "--server-jvm-arg", "-Xmx1g",
            "--server-jvm-arg", "-Dx=y", "-n", "1_000", "-q", "--cell-duration", "2s", "--deadline", "250ms"});

        assertThat(o.uris).containsExactly("shm://a", "tcp://h:1", "grpc://h:2", "inproc://d");
        assertThat(o.concurrency).isEqualTo(3);
        assertThat(o.inputs).containsExactlyInAnyOrder("a.json", "b.json");
        assertThat(o.pollingModes).containsExactly("EVENT", "ADAPTIVE");
        assertThat(o.polling).isEqualTo("EVENT");
        assertThat(o.serverJvmArgs).containsExactly("-Xmx1g", "-Dx=y");
        assertThat(o.totalCalls).isEqualTo(1000);
        assertThat(o.progress).isFalse();
        assertThat(o.cellDurationNanos).isEqualTo(2_000_000_000L);
        assertThat(o.deadlineNanos).isEqualTo(250_000_000L);
        assertThat(BenchOptions.parse(new String[0]).progress).isTrue();
    }

    @Test
    void shouldPrintTheHelpTextWithEveryCommand() throws Exception
    {
        assertThat(run("--help")).isZero();

        assertThat(stdout()).startsWith("reverb-bench: RPC latency benchmarking")
            .contains("  reverb-bench load-matrix ", "--cell-duration", "  --polling MODES ", "  -q, --no-progress ");
    }

    @Test
    void shouldParseSizesDurationsAndCompareLists()
    {
        final BenchOptions o = BenchOptions.parse(new String[]{
            "--compare", "shm://a,grpc://127.0.0.1:0", "--payload", "64,4k,1MiB", "-z", "500ms", "--rps=1000",
            "--polling", "busy", "--server", "same-process"});

        assertThat(o.uris).containsExactly("shm://a", "grpc://127.0.0.1:0");
        assertThat(o.payloads).containsExactly(64, 4096, 1024 * 1024);
        assertThat(o.durationNanos).isEqualTo(500_000_000L);
        assertThat(o.rps).isEqualTo(1000);
        assertThat(o.polling).isEqualTo("BUSY");
        assertThat(o.server).isEqualTo(BenchOptions.ServerPlacement.SAME_PROCESS);
    }
}
