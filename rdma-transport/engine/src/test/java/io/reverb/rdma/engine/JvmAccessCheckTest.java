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
        final List<String> reports = runChild(null);
        // Two attempts each: the second must be as clear as the first (no NoClassDefFoundError from a poisoned class).
        final String expected = "THROWN java.lang.IllegalStateException: " + JvmAccessCheck.missingExportMessage();
        assertThat(reports).containsExactly(
            "engine " + expected, "server " + expected, "engine " + expected, "server " + expected);
        assertThat(JvmAccessCheck.missingExportMessage())
            .contains("--add-exports java.base/jdk.internal.misc=ALL-UNNAMED", "<argLine>",
                "Add-Exports: java.base/jdk.internal.misc", "JAVA_TOOL_OPTIONS=" + JvmAccessCheck.ADD_EXPORTS_JOINED);
    }

    @Test
    void shouldRunWhenTheFlagComesAsTheMessageSaysThroughJavaToolOptions() throws Exception
    {
        // The remedy the message names for any launcher, applied as written: the first uses then succeed.
        final List<String> reports = runChild(JvmAccessCheck.ADD_EXPORTS_JOINED);
        assertThat(reports).containsExactly("engine NOT-THROWN", "server NOT-THROWN", "engine NOT-THROWN", "server NOT-THROWN");
    }

    /** Runs {@link JvmAccessCheckChild} without the flag on its command line; returns its report lines. */
    private static List<String> runChild(final String javaToolOptions) throws Exception
    {
        final ProcessBuilder builder = new ProcessBuilder(
            System.getProperty("java.home") + "/bin/java",
            "-Xmx128m",
            "-Dreverb.shm.dir=" + EngineTestSupport.shmDirectory(),
            "-cp", System.getProperty("java.class.path"),
            JvmAccessCheckChild.class.getName(), EngineTestSupport.uniqueName("no-exports"))
            .redirectErrorStream(true);
        // Only what this test says reaches the child, whatever this machine's environment holds.
        builder.environment().remove("JAVA_TOOL_OPTIONS");
        builder.environment().remove("JDK_JAVA_OPTIONS");
        if (javaToolOptions != null)
        {
            builder.environment().put("JAVA_TOOL_OPTIONS", javaToolOptions);
        }
        final Process child = builder.start();
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        child.getInputStream().transferTo(out);
        assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("child exited").isTrue();
        final String output = out.toString(StandardCharsets.UTF_8);
        assertThat(output).as(output).contains("DONE");
        final List<String> reports = Arrays.stream(output.split("\n"))
            .filter(l -> l.startsWith("engine ") || l.startsWith("server ")).collect(Collectors.toList());
        assertThat(reports).as(output).hasSize(4);
        return reports;
    }
}
