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
 * Unary 1 MiB echo (1 MiB each way), one call at a time: calls/s; multiply by 1 MiB for the
 * payload throughput in each direction.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-Xms1g", "-Xmx1g"})
public class LargeEchoBenchmark
{
    /** Payload of each request and response. */
    public static final int SIZE = 1024 * 1024;

    private final BytesValue request = EchoService.payload(SIZE);

    /**
     * @param state the target.
     * @return the response (consumed by JMH).
     */
    @Benchmark
    public BytesValue unary1MiB(final EchoTargetState state)
    {
        return state.client.blockingEcho(request);
    }
}
