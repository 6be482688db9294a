package io.reverb.rdma.provider.disni;

import io.reverb.rdma.verbs.TestScale;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@link RdmaHostCheck}'s hardware path on a real host: each step a child JVM with a time limit. The conformance
 * suite runs from the shipped jars when they bundle it ({@value #CONFORMANCE_MAIN}, in {@code reverb-rdma-check.jar}:
 * no Maven, no network); otherwise, in a source checkout, through Maven. The latencies come from
 * {@code io.reverb.bench.pingpong.EnginePingPong} (benchmarks module, in the same jar), whose table rows are parsed
 * ({@link LatencyTable#parsePingPong}).
 */
final class ProcessHardwarePath implements RdmaHostCheck.HardwarePath
{
    /** The launcher of the conformance suite that the check's jar bundles (rdma-transport's test classes). */
    static final String CONFORMANCE_MAIN = "io.reverb.rdma.provider.disni.DisniConformanceMain";
    private static final String PING_PONG_MAIN = "io.reverb.bench.pingpong.EnginePingPong";
    /**
     * Factor for the ping-pong's round counts on a slow host (a VM under software emulation): the same measurement with
     * fewer round trips. System property, else environment variable {@value #ROUND_SCALE_ENV}; 0 < x <= 1, default 1;
     * read by {@link TestScale}, as the conformance suite's child JVM reads it.
     */
    static final String ROUND_SCALE_PROP = TestScale.ROUNDS_PROP;
    static final String ROUND_SCALE_ENV = TestScale.ROUNDS_ENV;
    /** The time-limit factor of the conformance suite (see {@code TestScale}): passed on to its child JVM. */
    static final String TIME_SCALE_PROP = TestScale.TIME_PROP;
    static final int PING_PONG_WARMUP = 20_000;
    static final int PING_PONG_MESSAGES = 100_000;
    /** 1 MiB messages of the ping-pong's one-way throughput phase (EnginePingPong's default). */
    static final int PING_PONG_THROUGHPUT = 2_000;

    private final Path root;
    private final String libraryDirectory;

    /**
     * @param root             the checkout or bundle root (for the Maven fallback), or null.
     * @param libraryDirectory libdisni's directory, for the children's LD_LIBRARY_PATH.
     */
    ProcessHardwarePath(final Path root, final String libraryDirectory)
    {
        this.root = root;
        this.libraryDirectory = libraryDirectory;
    }

    private static List<String> jvm(final String address)
    {
        final List<String> command = new ArrayList<>(List.of(Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
            "-D" + DisniVerbsProvider.LOCAL_ADDRESS_PROP + "=" + address,
            "-Dorg.slf4j.simpleLogger.log.com.ibm.disni=warn",
            "-cp", System.getProperty("java.class.path")));
        for (final String property : List.of(ROUND_SCALE_PROP, TIME_SCALE_PROP))
        {
            final String value = System.getProperty(property);
            if (value != null)
            {
                command.add(command.size() - 2, "-D" + property + "=" + value);
            }
        }
        return command;
    }

    /**
     * @param rounds a round count on a build machine.
     * @param scale  the round-count factor ({@link TestScale#rounds()}).
     * @return the count to run, at least 1.
     */
    static int scaled(final int rounds, final double scale)
    {
        return Math.max(1, (int)Math.round(rounds * scale));
    }

    /** @return whether the conformance suite is on this JVM's class path (the check's bundled jar). */
    static boolean conformanceBundled()
    {
        try
        {
            Class.forName(CONFORMANCE_MAIN, false, ProcessHardwarePath.class.getClassLoader());
            return true;
        }
        catch (final ClassNotFoundException | LinkageError ex)
        {
            return false;
        }
    }

    @Override
    public RdmaHostCheck.StepResult conformance(final String address)
    {
        final Map<String, String> env = Map.of("LD_LIBRARY_PATH", libraryDirectory);
        if (conformanceBundled())
        {
            final List<String> command = jvm(address);
            command.addAll(List.of(CONFORMANCE_MAIN, "--address", address + ":0"));
            final Path directory = root != null ? root : Paths.get("").toAbsolutePath();
            return new RdmaHostCheck.Step("conformance", command, directory, env, 1_800, null).run();
        }
        final List<String> command = List.of("mvn", "-B", "-Dstyle.color=never", "-pl", "rdma-transport/disni", "-am", "test",
            "-Dtest=DisniConformanceTest", "-Dsurefire.failIfNoSpecifiedTests=false",
            "-Dreverb.test.rdma.address=" + address + ":0");
        return new RdmaHostCheck.Step("conformance (Maven: this jar does not bundle the suite)", command, root, env, 1_800,
            root == null ? null : root.resolve("rdma-transport/disni/target/surefire-reports/" +
                "TEST-io.reverb.rdma.provider.disni.DisniConformanceTest.xml")).run();
    }

    @Override
    public RdmaHostCheck.LatencyRun latency(final String scheme, final String address)
    {
        final double scale;
        try
        {
            scale = TestScale.rounds();
        }
        catch (final IllegalArgumentException ex)
        {
            return new RdmaHostCheck.LatencyRun(List.of(),
                new RdmaHostCheck.StepResult(false, "not run: " + ex.getMessage(), ""));
        }
        final int warmup = scaled(PING_PONG_WARMUP, scale);
        final int messages = scaled(PING_PONG_MESSAGES, scale);
        final int throughput = scaled(PING_PONG_THROUGHPUT, scale);
        final List<String> command = jvm(address);
        command.addAll(List.of(PING_PONG_MAIN, "--scheme", scheme, "--address", address + ":0",
            "--modes", String.join(",", LatencyTable.MODES), "--warmup", Integer.toString(warmup),
            "--messages", Integer.toString(messages), "--throughput", Integer.toString(throughput)));
        final Path directory = root != null ? root : Paths.get("").toAbsolutePath();
        final RdmaHostCheck.StepResult result = new RdmaHostCheck.Step("ping-pong " + scheme, command, directory,
            Map.of("LD_LIBRARY_PATH", libraryDirectory), 900, null).run();
        // The scale goes into the summary (and so the report): figures from fewer rounds are not the usual ones.
        final String rounds = scale == 1 ? "" : String.format(Locale.ROOT,
            " (round trips scaled x%s by %s: warm-up %d, measured %d, throughput %d)", scale, ROUND_SCALE_ENV, warmup,
            messages, throughput);
        return new RdmaHostCheck.LatencyRun(LatencyTable.parsePingPong(scheme, result.outputTail().lines().toList()),
            new RdmaHostCheck.StepResult(result.passed(), result.summary() + rounds, result.outputTail()));
    }
}
