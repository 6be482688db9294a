package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.reverb.rdma.engine.Connection;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.EngineListener;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.common.WriteClaim;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * {@code bin/reverb-rdma-check}'s whole hardware path, run before any real host runs it (issue 24, part 3): over a
 * fake sysfs tree (one RoCE port, ACTIVE with carrier, its GID table with types), a limits file, and the emulated
 * RDMA device of the test class path in place of the NIC. The check must say READY, run the conformance suite (the
 * same launcher the bundled jar runs, here in-process) and print the latency table on the console. The
 * measurements say nothing about RDMA speed (the device is a Java model); the conformance suite's pass rule is the
 * one of a real host (the cross-process case is excluded by its tag over the emulation, which lives in one JVM, and
 * nothing else may skip). Runs in the {@code rdma-emulated} Surefire execution.
 */
@Timeout(600)
class RdmaHostCheckEmulatedTest
{
    private static final String LIBRARY = System.mapLibraryName("disni");
    private static final int ROUND_TRIPS = 2_000;

    @TempDir
    Path root;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private Path fakeSysfs(final String state, final String physState) throws IOException
    {
        final Path port = Files.createDirectories(root.resolve("sys/class/infiniband/emu0/ports/1"));
        Files.writeString(root.resolve("sys/class/infiniband/emu0/node_type"), "1: CA\n");
        Files.writeString(port.resolve("state"), state + "\n");
        Files.writeString(port.resolve("phys_state"), physState + "\n");
        Files.writeString(port.resolve("link_layer"), "Ethernet\n");
        Files.writeString(port.resolve("rate"), "100 Gb/sec (4X EDR)\n");
        Files.createDirectories(port.resolve("gids"));
        Files.createDirectories(port.resolve("gid_attrs/types"));
        Files.createDirectories(port.resolve("gid_attrs/ndevs"));
        final String[][] gids = {
            {"0", "fe80:0000:0000:0000:0000:00ff:fe00:0001", "IB/RoCE v1"},
            {"1", "fe80:0000:0000:0000:0000:00ff:fe00:0001", "RoCE v2"},
            {"2", "0000:0000:0000:0000:0000:ffff:7f00:0001", "IB/RoCE v1"},
            {"3", "0000:0000:0000:0000:0000:ffff:7f00:0001", "RoCE v2"},
            {"4", "0000:0000:0000:0000:0000:0000:0000:0000", ""}};
        for (final String[] gid : gids)
        {
            Files.writeString(port.resolve("gids").resolve(gid[0]), gid[1] + "\n");
            Files.writeString(port.resolve("gid_attrs/types").resolve(gid[0]), gid[2] + "\n");
            Files.writeString(port.resolve("gid_attrs/ndevs").resolve(gid[0]), "emu0eth\n");
        }
        Files.createDirectories(root.resolve("sys/class/net/emu0eth"));
        Files.writeString(root.resolve("sys/class/net/emu0eth/mtu"), "1500\n");
        Files.createDirectories(root.resolve("dev"));
        Files.createFile(root.resolve("dev/rdma_cm"));
        Files.createFile(Files.createDirectories(root.resolve("lib")).resolve(LIBRARY));
        return root.resolve("sys/class/infiniband");
    }

    private Path limits(final String soft) throws IOException
    {
        final Path limits = root.resolve("limits");
        Files.writeString(limits, "Limit                     Soft Limit           Hard Limit           Units\n" +
            "Max locked memory         " + soft + "            unlimited            bytes\n");
        return limits;
    }

    private RdmaHostCheck.Host host(final Path sysfs, final Path limits, final RdmaHostCheck.HardwarePath hardware)
    {
        final InetAddress local = InetAddress.getLoopbackAddress();
        return new RdmaHostCheck.Host(sysfs, root.resolve("dev/rdma_cm"), root.resolve("lib").toString(), true,
            () ->
            {
                // In place of loading libdisni: the emulated device must be the one in use.
                final String cause = RdmaTestDevice.unavailabilityCause();
                if (cause != null)
                {
                    throw new IllegalStateException(cause);
                }
            }, limits, netdev -> "emu0eth".equals(netdev) ? List.of(local) : Collections.emptyList(), null, hardware);
    }

    @Test
    void shouldSayReadyRunTheConformanceSuiteAndPrintTheLatencyTableOverTheEmulatedDevice() throws Exception
    {
        assumeTrue(RdmaTestDevice.unavailabilityCause() == null, RdmaTestDevice.unavailabilityCause());
        final Path report = root.resolve("report.txt");
        final InProcess hardware = new InProcess();

        final int exit = RdmaHostCheck.run(new String[] {"--report", report.toString()},
            host(fakeSysfs("4: ACTIVE", "5: LinkUp"), limits("unlimited"), hardware),
            new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));

        final String console = out.toString(StandardCharsets.UTF_8);
        System.out.println(console);
        System.out.println(err.toString(StandardCharsets.UTF_8));
        assertThat(console).contains("verdict: READY")
            .contains("port 1: state 4: ACTIVE, phys_state 5: LinkUp (usable), link layer Ethernet")
            .contains("rate 100 Gb/sec (4X EDR), active MTU 1024 (emu0eth MTU 1500)")
            .contains("gid 2=0000:0000:0000:0000:0000:ffff:7f00:0001 type IB/RoCE v1 netdev emu0eth\n")
            .contains("gid 3=0000:0000:0000:0000:0000:ffff:7f00:0001 type RoCE v2 netdev emu0eth   <- rdma_cm uses " +
                "this one for 127.0.0.1")
            .contains("conformance suite: ")
            .contains(", failures 0, skipped 0")
            .doesNotContain("excluded"); // every test runs over the emulated device, the peer-process one too
        // The latency table, on the console: every cell measured.
        final List<String> table = console.lines().dropWhile(line -> !line.startsWith("64 B RTT")).limit(3).toList();
        assertThat(table).hasSize(3);
        assertThat(table.get(1)).startsWith("BUSY");
        assertThat(table.get(2)).startsWith("ADAPTIVE");
        assertThat(String.join("\n", table)).doesNotContain(" - ");
        assertThat(hardware.conformance).isNotNull();
        assertThat(hardware.conformance.getTotalFailureCount()).as(DisniConformanceMain.line(hardware.conformance)).isZero();
        assertThat(hardware.conformance.getTestsSucceededCount()).isGreaterThanOrEqualTo(30);
        assertThat(exit).as(err.toString(StandardCharsets.UTF_8)).isEqualTo(RdmaHostCheck.EXIT_OK);
        assertThat(Files.readString(report)).contains("## latency").contains("verdict: READY");
        assertThat(RdmaTestDevice.liveEmulatedObjects().values()).as("emulated objects left: " +
            RdmaTestDevice.liveEmulatedObjects()).allMatch(n -> n == 0);
    }

    @Test
    void shouldSayNotReadyForAPortWithoutCarrierOrTooLittleMemlockWithoutLoadingAnything() throws Exception
    {
        final Path sysfs = fakeSysfs("1: DOWN", "3: Disabled");
        final RdmaHostCheck.Host down = new RdmaHostCheck.Host(sysfs, root.resolve("dev/rdma_cm"),
            root.resolve("lib").toString(), true, () ->
            {
                throw new AssertionError("libdisni must not be loaded");
            }, limits("unlimited"), netdev -> List.of(InetAddress.getLoopbackAddress()), null, null);

        assertThat(RdmaHostCheck.run(new String[] {"--report", root.resolve("r1").toString()}, down,
            new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8)))
            .isEqualTo(RdmaHostCheck.EXIT_NOT_READY);
        assertThat(err.toString(StandardCharsets.UTF_8).lines().toList()).singleElement().asString()
            .startsWith("reverb-rdma-check: NOT READY: no ACTIVE RDMA port with carrier (emu0 port 1: state 1: DOWN, " +
                "phys_state 3: Disabled)");

        err.reset();
        Files.writeString(sysfs.resolve("emu0/ports/1/state"), "4: ACTIVE\n");
        Files.writeString(sysfs.resolve("emu0/ports/1/phys_state"), "5: LinkUp\n");
        final RdmaHostCheck.Host small = new RdmaHostCheck.Host(sysfs, root.resolve("dev/rdma_cm"),
            root.resolve("lib").toString(), true, () ->
            {
                throw new AssertionError("libdisni must not be loaded");
            }, limits("8388608"), netdev -> List.of(InetAddress.getLoopbackAddress()), null, null);
        assertThat(RdmaHostCheck.run(new String[] {"--report", root.resolve("r2").toString()}, small,
            new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8)))
            .isEqualTo(RdmaHostCheck.EXIT_NOT_READY);
        assertThat(err.toString(StandardCharsets.UTF_8).lines().toList()).singleElement().asString()
            .startsWith("reverb-rdma-check: NOT READY: the locked-memory limit (ulimit -l) is 8.0 MiB, but one engine")
            .contains("ulimit -l unlimited");
    }

    /** The hardware path in this JVM: the conformance suite through the bundled launcher, and engine ping-pongs. */
    private static final class InProcess implements RdmaHostCheck.HardwarePath
    {
        TestExecutionSummary conformance;

        @Override
        public RdmaHostCheck.StepResult conformance(final String address)
        {
            // The bundled jar's rule on a real host, unchanged: the tests that cannot run over this device are excluded
            // by tag (over the emulated device none), every other one must pass.
            final DisniConformanceMain.Run run = DisniConformanceMain.run();
            conformance = run.summary();
            return new RdmaHostCheck.StepResult(run.passed(), run.line(), "");
        }

        @Override
        public RdmaHostCheck.LatencyRun latency(final String scheme, final String address)
        {
            final List<LatencyTable.Cell> cells = new ArrayList<>();
            try
            {
                for (final String mode : LatencyTable.MODES)
                {
                    cells.add(pingPong(scheme, address, PollingMode.valueOf(mode)));
                }
                return new RdmaHostCheck.LatencyRun(cells, new RdmaHostCheck.StepResult(true,
                    ROUND_TRIPS + " round trips per mode, in-process", ""));
            }
            catch (final Exception ex)
            {
                return new RdmaHostCheck.LatencyRun(cells, new RdmaHostCheck.StepResult(false, ex.toString(), ""));
            }
        }

        private static LatencyTable.Cell pingPong(final String scheme, final String address, final PollingMode mode)
            throws Exception
        {
            final EngineConfig config = new EngineConfig().pollingMode(mode)
                .verbsConfig(VerbsConfig.defaults().withConnectTimeoutNanos(TimeUnit.SECONDS.toNanos(20)));
            try (RdmaEngine server = RdmaEngine.open(scheme, config.copy().name("check-server"));
                 RdmaEngine client = RdmaEngine.open(scheme, config.copy().name("check-client")))
            {
                final EngineListener listener = server.listen(address + ":0", c -> c.setHandler((buffer, offset, length) ->
                {
                    final WriteClaim echo = new WriteClaim();
                    if (c.tryClaim(length, echo) == Connection.OK)
                    {
                        echo.commit();
                    }
                }));
                final Connection connection = client.connect(listener.address());
                final AtomicReference<CountDownLatch> pong = new AtomicReference<>();
                connection.setHandler((buffer, offset, length) -> pong.get().countDown());
                final long[] rtt = new long[ROUND_TRIPS];
                final WriteClaim claim = new WriteClaim();
                for (int i = -200; i < ROUND_TRIPS; i++)
                {
                    final CountDownLatch latch = new CountDownLatch(1);
                    pong.set(latch);
                    final long start = System.nanoTime();
                    while (connection.tryClaim(64, claim) != Connection.OK)
                    {
                        Thread.onSpinWait();
                    }
                    claim.commit();
                    if (!latch.await(30, TimeUnit.SECONDS))
                    {
                        throw new IOException("no pong over " + scheme + ":// in 30 s");
                    }
                    if (i >= 0)
                    {
                        rtt[i] = System.nanoTime() - start;
                    }
                }
                connection.close();
                Arrays.sort(rtt);
                return new LatencyTable.Cell(scheme, mode.name(), rtt[ROUND_TRIPS / 2] / 1_000.0,
                    rtt[ROUND_TRIPS * 99 / 100] / 1_000.0);
            }
        }
    }
}
