package io.reverb.bench.jmh;

import com.google.protobuf.BytesValue;
import io.reverb.bench.EchoService;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * Server streaming, 64 B messages: one call streams {@link #MESSAGES} messages under the
 * framework's flow control; the score is messages per second.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-Xms1g", "-Xmx1g"})
public class ServerStreamingBenchmark
{
    /** Messages per call. */
    public static final int MESSAGES = 1000;

    private final BytesValue request = new EchoService.StreamRequest(MESSAGES, 64).encode();

    /**
     * @param state the target.
     * @return messages received (consumed by JMH).
     */
    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public long stream64(final EchoTargetState state)
    {
        final long received = state.client.blockingStream(request);
        if (received != MESSAGES)
        {
            throw new IllegalStateException("expected " + MESSAGES + " messages, got " + received);
        }
        return received;
    }
}
