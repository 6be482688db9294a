package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.disni.nativelib.NativeLibrary;
import io.reverb.rdma.verbs.TestScale;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * {@code bin/reverb-rdma-check} on hosts where rdma:// cannot run: one line with the exact reason, a report
 * file with the facts, a non-zero exit, and no native code loaded. The hardware path (conformance suite,
 * ping-pong, bench) needs an RDMA host and is not run here.
 */
class RdmaHostCheckTest
{
    private static final String LIBRARY = System.mapLibraryName("disni");

    @TempDir
    Path root;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private final AtomicBoolean nativeTouched = new AtomicBoolean();

    @Test
    void shouldExitNotReadyWithTheReasonOnOneLineOnThisMachine() throws IOException
    {
        // This machine, as it is: the sysfs, /dev and library path the real check looks at.
        final RdmaHostCheck.Host system = RdmaHostCheck.Host.system();
        final RdmaHostCheck.Host host = new RdmaHostCheck.Host(system.sysfsInfiniband(), system.rdmaCmDevice(),
            system.libraryPath(), system.sunNioChExported(), this::forbidNative, system.procLimits(),
            system.interfaces(), null);
        final String cause = DisniAvailability.probe(host.sysfsInfiniband(), host.rdmaCmDevice(), host.libraryPath(),
            host.sunNioChExported(), () -> { });
        final Path report = root.resolve("report.txt");

        final int exit = run(host, "--report", report.toString());

        if (cause == null)
        {
            // An RDMA host with libdisni: the NOT READY path does not apply (the native probe was forbidden).
            assertThat(exit).isEqualTo(RdmaHostCheck.EXIT_NOT_READY);
            return;
        }
        assertThat(exit).isEqualTo(RdmaHostCheck.EXIT_NOT_READY);
        assertThat(nativeTouched).as("libdisni is never loaded when a file-level check fails").isFalse();
        final List<String> lines = err.toString(StandardCharsets.UTF_8).lines().toList();
        assertThat(lines).hasSize(1);
        assertThat(lines.get(0))
            .startsWith("reverb-rdma-check: NOT READY: ")
            .contains(cause.substring(DisniAvailability.CAUSE_PREFIX.length()))
            .endsWith("(report: " + report + ")");
        assertThat(out.toString(StandardCharsets.UTF_8)).isEmpty();
        final String written = Files.readString(report);
        assertThat(written).contains("## facts").contains("memlock (ulimit -l): ").contains("libdisni: ")
            .contains("verdict: NOT READY: ");
    }

    @Test
    void shouldNameTheMissingDeviceAndLibraryAndWriteTheFacts() throws IOException
    {
        final Path report = root.resolve("r.txt");
        final int exit = run(fakeHost(), "--report", report.toString());

        assertThat(exit).isEqualTo(RdmaHostCheck.EXIT_NOT_READY);
        final String line = singleErrorLine();
        assertThat(line).startsWith("reverb-rdma-check: NOT READY: no RDMA device (")
            .contains("sysfs/class/infiniband is absent");
        if (NativeLibrary.bundledResource() == null)
        {
            assertThat(line).contains("no native half").contains(LIBRARY + " is not on java.library.path");
        }
        else
        {
            // The native half bundled in this artifact serves: no libdisni is needed.
            assertThat(line).doesNotContain("native half");
        }
        assertThat(Files.readString(report))
            .contains("RDMA devices: none")
            .contains("rdma_cm: " + root.resolve("dev/rdma_cm") + " absent (sudo modprobe rdma_ucm)")
            .contains("memlock (ulimit -l): soft 8388608, hard 8388608 bytes (registered memory is pinned")
            .contains("libdisni: not found on java.library.path")
            .contains("native half bundled in reverb-transport-rdma: ");
        assertThat(nativeTouched).isFalse();
    }

    @Test
    void shouldReportDevicesPortsGidsAndTheMissingRdmaCmNode() throws IOException
    {
        final Path port = Files.createDirectories(root.resolve("sysfs/class/infiniband/rxe0/ports/1"));
        Files.writeString(root.resolve("sysfs/class/infiniband/rxe0/node_type"), "1: CA\n");
        Files.writeString(root.resolve("sysfs/class/infiniband/rxe0/parent"), "eth0\n");
        Files.writeString(port.resolve("state"), "4: ACTIVE\n");
        Files.writeString(port.resolve("link_layer"), "Ethernet\n");
        Files.createDirectories(port.resolve("gids"));
        Files.writeString(port.resolve("gids/1"), "0000:0000:0000:0000:0000:ffff:0a00:0005\n");
        Files.createFile(Files.createDirectories(root.resolve("lib")).resolve(LIBRARY));
        final Path report = root.resolve("r.txt");

        final int exit = run(fakeHost(), "--report", report.toString());

        assertThat(exit).isEqualTo(RdmaHostCheck.EXIT_NOT_READY);
        assertThat(singleErrorLine()).startsWith("reverb-rdma-check: NOT READY: RDMA device(s) [rxe0] found but ")
            .contains("modprobe rdma_ucm");
        assertThat(Files.readString(report))
            .contains("device rxe0: RoCE (node_type 1: CA)")
            .contains("netdev eth0: [/10.0.0.5]")
            .contains("port 1: state 4: ACTIVE, phys_state ? (not usable: needs ACTIVE and LinkUp), link layer Ethernet")
            .contains("gid 1=0000:0000:0000:0000:0000:ffff:0a00:0005")
            .contains("libdisni: " + root.resolve("lib").resolve(LIBRARY) + " (used instead of the bundled one)");
    }

    @Test
    void shouldRefuseUnknownOptionsWithUsage()
    {
        assertThat(run(fakeHost(), "--bogus")).isEqualTo(RdmaHostCheck.EXIT_USAGE);
        assertThat(err.toString(StandardCharsets.UTF_8)).startsWith("reverb-rdma-check: unknown option --bogus")
            .contains("usage: reverb-rdma-check");
    }

    @Test
    void shouldLeaveTheBenchOutOnlyWhenAskedAndScaleItsServerStartOnASlowHost()
    {
        assertThat(RdmaHostCheck.parse(new String[0]).bench()).isTrue();
        assertThat(RdmaHostCheck.parse(new String[] {"--no-bench", "--duration", "3s"}).bench()).isFalse();
        // the VM sets REVERB_TEST_TIME_SCALE=10: the bench's server JVMs get 600 s to come up, not 60
        // (read by TestScale, the suites' own parser: a typo is an error that names the knob, not a silent 1)
        assertThat(TestScale.time(p -> null, e -> TestScale.TIME_ENV.equals(e) ? "10" : null)).isEqualTo(10);
        assertThat(TestScale.time(p -> TestScale.TIME_PROP.equals(p) ? "2.5" : null, e -> "10")).isEqualTo(2.5);
        assertThat(TestScale.time(p -> null, e -> null)).isEqualTo(1);
        assertThatThrownBy(() -> TestScale.time(p -> "fast", e -> null)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(TestScale.TIME_PROP).hasMessageContaining("fast");
        assertThatThrownBy(() -> TestScale.time(p -> null, e -> "0.5")).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(TestScale.TIME_ENV);
    }

    @Test
    void shouldReadSurefireCounts() throws IOException
    {
        final Path xml = root.resolve("TEST-x.xml");
        Files.writeString(xml, "<?xml version=\"1.0\"?>\n<testsuite name=\"x\" time=\"1\" tests=\"33\" errors=\"0\" " +
            "skipped=\"33\" failures=\"0\">\n</testsuite>\n");

        assertThat(RdmaHostCheck.surefireCounts(xml)).isEqualTo("tests 33, failures 0, errors 0, skipped 33");
        assertThat(RdmaHostCheck.surefireCounts(root.resolve("none.xml"))).startsWith("no report at ");
    }

    @Test
    void shouldReadTheLatencyTableFromEnginePingPongsOutputAndPrintMissingCellsAsDashes()
    {
        final List<String> output = List.of(
            "Reverb engine ping-pong over rdma, two processes, 64 B, 100000 round trips (+20000 warm-up); ...",
            "direct writes on, one-way payload not written (first 8 bytes only)",
            "mode        p50 us   p99 us  p99.9 us    max us    cpu/rt us   alloc/rt cli   alloc/rt srv  idle cpu%" +
                "  1MiB GB/s   alloc/1MiB",
            "BUSY          2.10     3.50      5.00     40.00         4.20            0.0            0.0     200.00" +
                "       9.80          0.0",
            "ADAPTIVE      2.30     4.10      6.00     50.00         3.10            0.0            0.0       1.00" +
                "       9.70          0.0");
        final List<LatencyTable.Cell> cells = new ArrayList<>(LatencyTable.parsePingPong("rdma", output));

        assertThat(cells).containsExactly(new LatencyTable.Cell("rdma", "BUSY", 2.10, 3.50),
            new LatencyTable.Cell("rdma", "ADAPTIVE", 2.30, 4.10));
        assertThat(LatencyTable.complete(cells)).isFalse();
        assertThat(tokens(LatencyTable.format(cells))).contains(List.of("BUSY", "2.10", "-", "3.50", "-"));
        cells.addAll(LatencyTable.parsePingPong("tcp", List.of("BUSY 11.5 20.25 x", "ADAPTIVE 12 30 y")));
        assertThat(LatencyTable.complete(cells)).isTrue();
        assertThat(tokens(LatencyTable.format(cells))).contains(List.of("ADAPTIVE", "2.30", "12.00", "4.10", "30.00"));
    }

    @Test
    void shouldDeriveTheRoceMtuAndTheMemlockItNeeds() throws IOException
    {
        assertThat(RdmaHostReadiness.roceMtu(1500)).isEqualTo(1024);
        assertThat(RdmaHostReadiness.roceMtu(9000)).isEqualTo(4096);
        assertThat(RdmaHostReadiness.roceMtu(4200)).isEqualTo(4096);
        assertThat(RdmaHostReadiness.roceMtu(4100)).isEqualTo(2048);
        assertThat(RdmaHostReadiness.roceMtu(300)).isZero();
        final long required = RdmaHostReadiness.requiredMemlockBytes();
        assertThat(required).isEqualTo(RdmaHostReadiness.defaultMemlockEstimate().total());
        final Path limits = root.resolve("limits-enough");
        Files.writeString(limits, "Max locked memory         " + required + "  " + required + "  bytes\n");
        assertThat(RdmaHostReadiness.memlockProblem(limits)).isNull();
        Files.writeString(limits, "Max locked memory         " + (required - 1) + "  unlimited  bytes\n");
        assertThat(RdmaHostReadiness.memlockProblem(limits)).contains("ulimit -l");
        assertThat(RdmaHostReadiness.memlockProblem(root.resolve("absent"))).contains("could not be read");
    }

    /**
     * The memlock estimate counts what an engine really pins (issue 37): besides the eager buffers, the QP's send and
     * receive queues and both CQs (the kernel pins the provider's ring buffers), every connection's rendezvous send
     * pool at its cap and the engine-wide receive budget at its default; a limit that held only the eager buffers and
     * the smallest receive budget (the old estimate) is too small.
     */
    @Test
    void shouldCountQueueRingsAndTheWholeRendezvousBudgetInTheMemlockEstimate() throws IOException
    {
        final EngineConfig config = new EngineConfig().conclude();
        final RdmaHostReadiness.MemlockEstimate estimate = RdmaHostReadiness.defaultMemlockEstimate();
        // 128 receive slots: send queue 132 -> 256 WQEs of 256 B (64 KiB), receive queue 128 x 64 B (8 KiB), two CQs
        // of 137 -> 256 CQEs x 64 B (16 KiB each), one doorbell page: 100 KiB per connection.
        assertThat(estimate.ringBytes()).isEqualTo(2 * (64 + 8 + 2 * 16 + 4) * 1024L);
        assertThat(estimate.eagerBytes()).isEqualTo(2 * config.eagerRegisteredBytesPerConnection());
        assertThat(estimate.sendPoolBytes()).isEqualTo(2 * config.rendezvousPoolBytes());
        assertThat(estimate.receiveBudget()).isEqualTo(config.rendezvousMemoryBytes()).isGreaterThanOrEqualTo(64L << 20);
        assertThat(estimate.total()).isEqualTo(estimate.eagerBytes() + estimate.ringBytes() + estimate.sendPoolBytes() +
            estimate.receiveBudget());
        assertThat(RdmaHostReadiness.memlockEstimate(new EngineConfig().receiveSlots(512).conclude(), 2).ringBytes())
            .as("rings grow with the slots").isGreaterThan(estimate.ringBytes());

        final long oldEstimate = 2 * config.eagerRegisteredBytesPerConnection() + (64L << 20);
        final Path limits = root.resolve("limits-old-estimate");
        Files.writeString(limits, "Max locked memory         " + oldEstimate + "  unlimited  bytes\n");
        assertThat(RdmaHostReadiness.memlockProblem(limits)).contains("QP/CQ rings").contains("rendezvous send pools")
            .contains("rendezvous receive budget").contains("ulimit -l unlimited");
    }

    /**
     * One pass rule for the conformance suite (issue 37): over a real device the emulation-only test (two devices in
     * one JVM) is excluded by its tag instead of skipping, which made every real host fail the check; over the
     * emulated device nothing is (its peer-process test runs with a peer in the same JVM). Discovery only: nothing
     * runs, no native code loads.
     */
    @Test
    void shouldExcludeTheEmulationOnlyTestsOverARealDeviceAndNothingOverTheEmulatedOne()
    {
        final Launcher launcher = LauncherFactory.create();
        final String real = DisniConformanceMain.excludedTag(false);
        final String emulated = DisniConformanceMain.excludedTag(true);
        assertThat(emulated).isNull();
        assertThat(DisniConformanceMain.excludedTests(launcher, real))
            .containsExactly("shouldConnectTwoHostsEachOnItsOwnDevice()");
        assertThat(DisniConformanceMain.excludedTests(launcher, emulated)).isEmpty();

        final List<String> onRealDevice = tests(launcher.discover(DisniConformanceMain.request(real)));
        assertThat(onRealDevice).contains("shouldFlushOutstandingReceivesWhenPeerProcessIsKilled()")
            .doesNotContain("shouldConnectTwoHostsEachOnItsOwnDevice()").hasSizeGreaterThanOrEqualTo(30);
        final List<String> onEmulatedDevice = tests(launcher.discover(DisniConformanceMain.request(emulated)));
        assertThat(onEmulatedDevice).contains("shouldConnectTwoHostsEachOnItsOwnDevice()",
            "shouldFlushOutstandingReceivesWhenPeerProcessIsKilled()").hasSize(onRealDevice.size() + 1);
    }

    private static List<String> tests(final TestPlan plan)
    {
        final List<String> names = new ArrayList<>();
        final List<TestIdentifier> todo = new ArrayList<>(plan.getRoots());
        while (!todo.isEmpty())
        {
            final TestIdentifier id = todo.remove(todo.size() - 1);
            if (id.isTest())
            {
                names.add(id.getDisplayName());
            }
            todo.addAll(plan.getChildren(id));
        }
        return names;
    }

    private static List<List<String>> tokens(final String table)
    {
        return table.lines().map(line -> List.of(line.trim().split("\\s+"))).toList();
    }

    private RdmaHostCheck.Host fakeHost()
    {
        try
        {
            final InetAddress eth0 = InetAddress.getByName("10.0.0.5");
            final Path limits = root.resolve("limits");
            Files.writeString(limits, "Limit                     Soft Limit           Hard Limit           Units\n" +
                "Max locked memory         8388608              8388608              bytes\n");
            return new RdmaHostCheck.Host(root.resolve("sysfs/class/infiniband"), root.resolve("dev/rdma_cm"),
                root.resolve("lib").toString(), true, this::forbidNative, limits,
                netdev -> "eth0".equals(netdev) ? List.of(eth0) : Collections.emptyList(),
                null);
        }
        catch (final IOException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    private void forbidNative()
    {
        nativeTouched.set(true);
        throw new AssertionError("libdisni must not be loaded");
    }

    private int run(final RdmaHostCheck.Host host, final String... args)
    {
        return RdmaHostCheck.run(args, host, new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String singleErrorLine()
    {
        final List<String> lines = err.toString(StandardCharsets.UTF_8).lines().toList();
        assertThat(lines).hasSize(1);
        return lines.get(0);
    }
}
