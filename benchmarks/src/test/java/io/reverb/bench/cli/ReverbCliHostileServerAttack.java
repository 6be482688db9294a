package io.reverb.bench.cli;

import io.reverb.rpc.RpcServer;
import io.reverb.services.reflection.ReflectionService;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Attack case for {@code bin/attack-suite} (issue 38): a hostile reflection server against reverb-cli, the CLI in a
 * child JVM under {@code -Xmx256m} (as {@code bin/reverb-cli} runs it: serial GC, C1), the servers in this JVM on
 * {@code tcp://127.0.0.1}. Each hostile answer must end the CLI with its exit code and an {@code ERROR:} line,
 * never an {@code OutOfMemoryError} or {@code StackOverflowError}, with no raw escape character on stdout or stderr.
 * The child logs its GCs; the largest heap occupancy before and after a collection is printed per scenario (the
 * measured bound, beside the configured 256 MiB). Held: every scenario as expected.
 */
class ReverbCliHostileServerAttack
{
    private static final Duration TIMEOUT = Duration.ofSeconds(120);
    private static final Pattern GC = Pattern.compile("(\\d+)M->(\\d+)M\\(");

    @TempDir
    Path dir;

    @Test
    void hostileReflectionServerAgainstReverbCliUnderXmx256m() throws Exception
    {
        final SoftAssertions softly = new SoftAssertions();

        // names with terminal escapes and a forged line; an error with escapes
        hostile(softly, HostileReflection.Mode.ESCAPES, 0, 0, "evil.Svc\\u001b]0;pwned", "list");
        hostile(softly, HostileReflection.Mode.ESCAPES, 0, CliException.CALL_FAILED, "no such symbol\\u001b]0;pwned",
            "describe", "evil.Svc");
        // 100,000 files importing each other in one answer (2.7 MB): refused by the count, no stack overflow
        hostile(softly, HostileReflection.Mode.DEEP_IMPORTS, 100_000, CliException.CALL_FAILED,
            "more than " + FileBuilder.MAX_FILES + " descriptor files", "describe", "evil.Svc");
        // a chain of 4,000 (under the count): refused by the depth
        hostile(softly, HostileReflection.Mode.DEEP_IMPORTS, 4_000, CliException.CALL_FAILED,
            "import more than " + FileBuilder.MAX_IMPORT_DEPTH + " files deep", "describe", "evil.Svc");
        // an import chain without end, each file fetched on its own
        hostile(softly, HostileReflection.Mode.ENDLESS_IMPORTS, 0, CliException.CALL_FAILED,
            "import more than " + FileBuilder.MAX_IMPORT_DEPTH + " files deep", "describe", "evil.Svc");
        // 300 imports of 1 MiB each: 300 MiB would not fit in the heap
        hostile(softly, HostileReflection.Mode.BIG_FILES, 300, CliException.CALL_FAILED,
            "MiB of descriptor files", "describe", "evil.Svc");
        // ten million responses to one reflection request
        hostile(softly, HostileReflection.Mode.FLOOD, 10_000_000, CliException.NO_CONNECTION,
            "more than one response", "list");
        // a server-streaming call without end (2^31 - 1 items) stops at the default --max-responses
        streamingFlood(softly);

        softly.assertAll();
    }

    private void hostile(final SoftAssertions softly, final HostileReflection.Mode mode, final int size,
        final int code, final String message, final String verb, final String... rest) throws Exception
    {
        final RpcServer server = RpcServer.builder("tcp://127.0.0.1:0").addService(new HostileReflection(mode, size))
            .build().start();
        try
        {
            final List<String> args = new ArrayList<>(List.of(verb, "tcp://127.0.0.1:" + server.port(),
                "--deadline", "60s"));
            args.addAll(List.of(rest));
            check(softly, mode + "(" + size + ") " + String.join(" ", args), args, code, message);
        }
        finally
        {
            server.shutdown();
            server.awaitTermination(TIMEOUT);
        }
    }

    private void streamingFlood(final SoftAssertions softly) throws Exception
    {
        final RpcServer server = ReflectionService.addTo(RpcServer.builder("tcp://127.0.0.1:0")
            .addService(new ShopFixture().nativeShop())).build().start();
        try
        {
            check(softly, "ListItems(2^31-1)", List.of("call", "tcp://127.0.0.1:" + server.port(),
                "reverb.bench.clitest.Shop/ListItems", "-d", "{\"count\": 2147483647, \"prefix\": \"\u001b[2J\"}",
                "--deadline", "120s"), CliException.CALL_FAILED,
                "more than " + ReverbCli.DEFAULT_MAX_RESPONSES + " responses");
        }
        finally
        {
            server.shutdown();
            server.awaitTermination(TIMEOUT);
        }
    }

    private void check(final SoftAssertions softly, final String scenario, final List<String> args, final int code,
        final String message) throws IOException, InterruptedException
    {
        final Path out = dir.resolve("out");
        final Path err = dir.resolve("err");
        final Path gcLog = dir.resolve("gc.log");
        final List<String> command = new ArrayList<>(List.of(Paths.get(System.getProperty("java.home"), "bin", "java")
                .toString(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xlog:gc:file=" + gcLog,
            "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
            "-cp", System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
            ReverbCli.class.getName()));
        command.addAll(args);
        final long start = System.nanoTime();
        final Process child = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile())
            .start();
        if (!child.waitFor(TIMEOUT.toSeconds(), TimeUnit.SECONDS))
        {
            child.destroyForcibly().waitFor();
            softly.fail(scenario + ": reverb-cli still ran after " + TIMEOUT);
            return;
        }
        final long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        final String stdout = Files.readString(out, StandardCharsets.UTF_8);
        final String stderr = Files.readString(err, StandardCharsets.UTF_8);
        final long[] heap = heap(gcLog);
        final String memory = heap[0] == 0 ? "no collection (the heap never filled its first young generation)" :
            "heap at most " + heap[0] + " MiB before a collection, " + heap[1] + " MiB live after one (of 256)";
        System.out.printf("%s: exit %d in %d ms, %s, stdout %d bytes, stderr: %s%n", scenario, child.exitValue(),
            millis, memory, stdout.length(),
            stderr.lines().filter(line -> line.startsWith("ERROR")).findFirst().orElse("-"));
        softly.assertThat(child.exitValue()).as(scenario + " exit code; stderr: " + stderr).isEqualTo(code);
        softly.assertThat(stderr).as(scenario + " stderr").doesNotContain("OutOfMemoryError", "StackOverflowError",
            "\u001b", "\u0007");
        softly.assertThat(stdout).as(scenario + " stdout").doesNotContain("\u001b", "\u0007");
        softly.assertThat(code == 0 ? stdout : stderr).as(scenario + " says why").contains(message);
    }

    /** @return the largest heap occupancy before and after a collection in the child's GC log, MiB. */
    private static long[] heap(final Path gcLog) throws IOException
    {
        final long[] max = new long[2];
        if (!Files.exists(gcLog))
        {
            return max;
        }
        for (final String line : Files.readAllLines(gcLog, StandardCharsets.UTF_8))
        {
            final Matcher matcher = GC.matcher(line);
            if (matcher.find())
            {
                max[0] = Math.max(max[0], Long.parseLong(matcher.group(1)));
                max[1] = Math.max(max[1], Long.parseLong(matcher.group(2)));
            }
        }
        return max;
    }
}
