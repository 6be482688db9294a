package io.reverb.bench.jmh;

import com.google.protobuf.BytesValue;
import io.reverb.bench.EchoService;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;

import java.util.concurrent.TimeUnit;

/**
 * Unary 64 B round trip, one call at a time through each framework's blocking API: average
 * time and sampled percentiles. Run with {@code -prof gc}: {@code gc.alloc.rate.norm} is the
 * bytes allocated per call, client and server together (both live in this JVM).
 */
@BenchmarkMode({Mode.AverageTime, Mode.SampleTime})
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class UnaryLatencyBenchmark extends JmhSettings
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
