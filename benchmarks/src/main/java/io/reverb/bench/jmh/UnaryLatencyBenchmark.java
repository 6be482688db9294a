package io.reverb.bench.jmh;

import com.google.protobuf.BytesValue;
import io.reverb.bench.EchoService;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * Unary 64 B round trip, one call at a time through each framework's blocking API: average
 * time and sampled percentiles. Run with {@code -prof gc}: {@code gc.alloc.rate.norm} is the
 * bytes allocated per call, client and server together (both live in this JVM).
 */
@State(Scope.Benchmark)
@BenchmarkMode({Mode.AverageTime, Mode.SampleTime})
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-Xms1g", "-Xmx1g"})
public class UnaryLatencyBenchmark
{
    private final BytesValue request = EchoService.payload(64);

    /**
     * @param state the target.
     * @return the response (consumed by JMH).
     */
    @Benchmark
    public BytesValue unary64(final EchoTargetState state)
    {
        return state.client.blockingEcho(request);
    }
}
