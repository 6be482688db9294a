package io.reverb.bench.jmh;

import com.google.protobuf.BytesValue;
import io.reverb.bench.EchoService;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.OperationsPerInvocation;

/**
 * Server streaming, 64 B messages: one call streams {@link #MESSAGES} messages under the
 * framework's flow control; the score is messages per second.
 */
public class ServerStreamingBenchmark extends JmhSettings
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
