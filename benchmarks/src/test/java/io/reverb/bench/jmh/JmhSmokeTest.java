package io.reverb.bench.jmh;

import io.reverb.bench.EchoService;
import io.reverb.bench.target.BenchServer;
import io.reverb.bench.target.EchoClient;
import io.reverb.bench.target.Target;
import io.reverb.bench.target.Targets;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

import java.net.URI;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs a very short profile of the JMH suite in this JVM: every benchmark on one fast target,
 * and the unary latency case on every target that works on this machine. No timing asserts:
 * it checks that each benchmark ran and produced a score. Runs last among the module's test
 * classes: a BUSY shm engine it opens spins until the test JVM exits.
 */
@Order(Integer.MAX_VALUE)
class JmhSmokeTest
{
    private static final String FULL_PROFILE_TARGET = "grpc-inproc";

    @Test
    void shouldProduceAResultForEveryBenchmarkAndEveryWorkingTarget() throws Exception
    {
        final List<String> targets = workingTargets();
        assertThat(targets).contains("grpc-netty", "grpc-inproc");

        final Collection<RunResult> all = new ArrayList<>(run(
            shortProfile()
                .include(UnaryLatencyBenchmark.class.getName())
                .param("target", targets.toArray(new String[0]))
                .build()));
        all.addAll(run(
            shortProfile()
                .include(UnaryThroughputBenchmark.class.getName())
                .include(LargeEchoBenchmark.class.getName())
                .include(ServerStreamingBenchmark.class.getName())
                .param("target", FULL_PROFILE_TARGET)
                .param("outstanding", "1", "16", "128")
                .build()));

        final Set<String> ran = new HashSet<>();
        for (final RunResult result : all)
        {
            final String benchmark = result.getParams().getBenchmark();
            final String target = result.getParams().getParam("target");
            final String mode = result.getParams().getMode().shortLabel();
            final String outstanding = result.getParams().getParam("outstanding");
            assertThat(result.getPrimaryResult().getSampleCount()).as(benchmark + " " + target).isPositive();
            assertThat(result.getPrimaryResult().getScore()).as(benchmark + " " + target).isPositive();
            ran.add(benchmark.substring(benchmark.lastIndexOf('.', benchmark.lastIndexOf('.') - 1) + 1) + " " + mode + " " +
                target + (outstanding == null ? "" : " " + outstanding));
        }
        final Set<String> expected = new HashSet<>();
        for (final String target : targets)
        {
            expected.add("UnaryLatencyBenchmark.unary64 avgt " + target);
            expected.add("UnaryLatencyBenchmark.unary64 sample " + target);
        }
        for (final String outstanding : List.of("1", "16", "128"))
        {
            expected.add("UnaryThroughputBenchmark.unary64 thrpt " + FULL_PROFILE_TARGET + " " + outstanding);
        }
        expected.add("LargeEchoBenchmark.unary1MiB thrpt " + FULL_PROFILE_TARGET);
        expected.add("ServerStreamingBenchmark.stream64 thrpt " + FULL_PROFILE_TARGET);
        assertThat(ran).containsExactlyInAnyOrderElementsOf(expected);
    }

    private static Collection<RunResult> run(final Options options) throws Exception
    {
        // A developer's own JMH run holds /tmp/jmh.lock; this smoke run asserts no timing, so sharing the machine is fine.
        System.setProperty("jmh.ignoreLock", "true");
        return new Runner(options).run();
    }

    private static OptionsBuilder shortProfile()
    {
        final OptionsBuilder builder = new OptionsBuilder();
        builder.forks(0)
            .warmupIterations(1).warmupTime(TimeValue.milliseconds(100))
            .measurementIterations(1).measurementTime(TimeValue.milliseconds(100))
            .shouldFailOnError(true);
        return builder;
    }

    /**
     * grpc-java targets always; Reverb targets whose transport is registered and answers a call
     * (a transport still under construction is reported and left out, not faked).
     */
    private static List<String> workingTargets()
    {
        final List<String> targets = new ArrayList<>();
        for (final String name : JmhTargets.ALL)
        {
            final URI uri = JmhTargets.uri(name);
            if (!name.startsWith("grpc") && !Targets.reverbTransportAvailable(uri.getScheme()))
            {
                System.out.println("JMH smoke test: leaving out " + name + ": no Reverb " + uri.getScheme() + ":// transport");
                continue;
            }
            final Target target = Targets.forUri(uri);
            try (BenchServer server = target.startServer(uri, JmhTargets.settings(name));
                EchoClient client = target.connect(URI.create(server.uri()), JmhTargets.settings(name)))
            {
                client.blockingEcho(EchoService.payload(64));
                targets.add(name);
            }
            catch (final Exception | LinkageError ex)
            {
                if (name.startsWith("grpc"))
                {
                    throw new AssertionError("grpc-java target " + name + " does not work", ex);
                }
                System.out.println("JMH smoke test: leaving out " + name + ": " + ex);
            }
        }
        return targets;
    }
}
