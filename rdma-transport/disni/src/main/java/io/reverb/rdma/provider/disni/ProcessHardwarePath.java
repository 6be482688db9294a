package io.reverb.rdma.provider.disni;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
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
        return new ArrayList<>(List.of(Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
            "-D" + DisniVerbsProvider.LOCAL_ADDRESS_PROP + "=" + address,
            "-Dorg.slf4j.simpleLogger.log.com.ibm.disni=warn",
            "-cp", System.getProperty("java.class.path")));
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
        final List<String> command = jvm(address);
        command.addAll(List.of(PING_PONG_MAIN, "--scheme", scheme, "--address", address + ":0",
            "--modes", String.join(",", LatencyTable.MODES), "--warmup", "20000", "--messages", "100000"));
        final Path directory = root != null ? root : Paths.get("").toAbsolutePath();
        final RdmaHostCheck.StepResult result = new RdmaHostCheck.Step("ping-pong " + scheme, command, directory,
            Map.of("LD_LIBRARY_PATH", libraryDirectory), 900, null).run();
        return new RdmaHostCheck.LatencyRun(LatencyTable.parsePingPong(scheme, result.outputTail().lines().toList()),
            result);
    }
}
