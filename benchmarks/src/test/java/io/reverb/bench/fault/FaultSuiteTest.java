package io.reverb.bench.fault;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The fault suite ({@code bin/fault-suite}) from Maven. Not part of the default build: it needs root (it creates
 * network namespaces) and takes about five minutes, so it is skipped, with the reason, unless asked for:
 * {@code mvn -pl benchmarks test -Dtest=FaultSuiteTest -Dreverb.faultSuite=true} as root (optionally
 * {@code -Dreverb.faultSuite.runs="native/tcp grpc-netty/tcp"}). It runs the script with this module's test class
 * path instead of the shaded jar, and fails if any scenario broke a rule.
 */
class FaultSuiteTest
{
    @Test
    @Timeout(value = 30, unit = TimeUnit.MINUTES)
    void shouldHoldEveryScenarioOfTheFaultSuite() throws Exception
    {
        final String notAsked = "the fault suite needs root and takes about five minutes, so the default build leaves " +
            "it out; run bin/fault-suite, or this test with -Dreverb.faultSuite=true as root";
        if (!Boolean.getBoolean("reverb.faultSuite"))
        {
            System.out.println("FaultSuiteTest skipped: " + notAsked); // surefire's log shows no assumption's reason
        }
        assumeTrue(Boolean.getBoolean("reverb.faultSuite"), notAsked);
        assumeTrue(isRoot(), "the fault suite needs root (it creates network namespaces and a veth pair)");
        assumeTrue(hasIp(), "the fault suite needs iproute2's 'ip' tool");
        final Path script = Path.of("").toAbsolutePath().getParent().resolve("bin/fault-suite");
        assertThat(script).exists();
        final List<String> command = new ArrayList<>(List.of(script.toString()));
        final String runs = System.getProperty("reverb.faultSuite.runs", "").trim();
        if (!runs.isEmpty())
        {
            command.addAll(List.of(runs.split("\\s+")));
        }
        final ProcessBuilder builder = new ProcessBuilder(command).inheritIO();
        builder.environment().put("FAULT_CLASSPATH", System.getProperty("java.class.path"));
        final Process suite = builder.start();
        assertThat(suite.waitFor()).as("bin/fault-suite's exit status (its table is above)").isZero();
    }

    private static boolean isRoot() throws IOException, InterruptedException
    {
        final Process id = new ProcessBuilder("id", "-u").redirectErrorStream(true).start();
        final String uid = new String(id.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        return id.waitFor() == 0 && "0".equals(uid);
    }

    private static boolean hasIp()
    {
        for (final String dir : System.getenv().getOrDefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").split(":"))
        {
            if (Files.isExecutable(Path.of(dir, "ip")))
            {
                return true;
            }
        }
        return Files.isExecutable(Path.of("/usr/sbin/ip")) || Files.isExecutable(Path.of("/sbin/ip"));
    }
}
