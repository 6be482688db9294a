package io.reverb.bench.jmh;

import com.google.protobuf.BytesValue;
import io.reverb.bench.EchoService;
import org.openjdk.jmh.annotations.Benchmark;

/**
 * Unary 1 MiB echo (1 MiB each way), one call at a time: calls/s; multiply by 1 MiB for the
 * payload throughput in each direction.
 */
public class LargeEchoBenchmark extends JmhSettings
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
