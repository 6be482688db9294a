package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class JvmAccessCheckTest
{
    @Test
    void shouldPassInAJvmStartedWithTheFlag()
    {
        // Surefire's argLine carries the flag (root pom): the check must not get in the way.
        assertThat(JvmAccessCheck.isExported(JvmAccessCheckTest.class.getModule())).isTrue();
        JvmAccessCheck.requireAgronaAccess();
    }

    @Test
    void shouldNameTheFlagAndWhereToPutItOnEveryFirstUseWithoutTheFlag() throws Exception
    {
        final ProcessBuilder builder = new ProcessBuilder(
            System.getProperty("java.home") + "/bin/java",
            "-Xmx128m",
            "-Dreverb.shm.dir=" + EngineTestSupport.shmDirectory(),
            "-cp", System.getProperty("java.class.path"),
            JvmAccessCheckChild.class.getName(), EngineTestSupport.uniqueName("no-exports"))
            .redirectErrorStream(true);
        // The child must really run without the flag, whatever this machine's environment says.
        builder.environment().remove("JAVA_TOOL_OPTIONS");
        builder.environment().remove("JDK_JAVA_OPTIONS");
        final Process child = builder.start();
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        child.getInputStream().transferTo(out);
        assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("child exited").isTrue();
        final String output = out.toString(StandardCharsets.UTF_8);
        final List<String> reports = Arrays.stream(output.split("\n"))
            .filter(l -> l.startsWith("engine ") || l.startsWith("server ")).collect(Collectors.toList());

        assertThat(output).as(output).contains("DONE");
        // Two attempts each: the second must be as clear as the first (no NoClassDefFoundError from a poisoned class).
        assertThat(reports).as(output).hasSize(4);
        final String expected = "THROWN java.lang.IllegalStateException: " + JvmAccessCheck.missingExportMessage();
        assertThat(reports).as(output).containsExactly(
            "engine " + expected, "server " + expected, "engine " + expected, "server " + expected);
        assertThat(JvmAccessCheck.missingExportMessage())
            .contains("--add-exports java.base/jdk.internal.misc=ALL-UNNAMED", "<argLine>",
                "Add-Exports: java.base/jdk.internal.misc", "JAVA_TOOL_OPTIONS");
    }
}
