package io.reverb.grpc;

import com.google.protobuf.ByteString;
import com.sun.management.ThreadMXBean;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Bytes allocated per grpc-java unary call over Reverb, client and server in this JVM, counted (never timed): every
 * thread's allocated bytes ({@link ThreadMXBean#getThreadAllocatedBytes}) around rounds of blocking calls over
 * {@code shm://} with {@code directExecutor()} on both sides and {@code disableRetry()}, the JMH benchmark's path.
 * The least of several rounds is taken (a round that met another thread's allocation, a test's leftover, counts
 * more), and the bound is generous: it holds whether or not C2 has compiled the path yet (without escape analysis a
 * call counted about 3.7 KB when this was written, about 3.0 KB once compiled; main before it about 4.1 and 3.4 KB),
 * and fails when a layer of objects per call comes back (grpc-java's retry layer alone is about 1.9 KB). The precise
 * figure is JMH's: {@code bin/reverb-bench jmh UnaryLatencyBenchmark -bm avgt -prof gc ...} (benchmarks/RESULTS.md).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AllocationPerCallTest
{
    /** Bytes per call, every thread of the JVM: see the class documentation for the margin. */
    private static final long BOUND = 4_800;
    private static final int WARM_UP = 3_000;
    private static final int ROUNDS = 5;
    private static final int CALLS_PER_ROUND = 1_000;

    private Server server;
    private ManagedChannel channel;
    private String address;

    @AfterEach
    void stop() throws Exception
    {
        if (channel != null)
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
        if (server != null)
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
        if (address != null)
        {
            AbstractReverbConformanceTest.assertReleased(address);
        }
    }

    @Test
    void aBlockingUnaryCallShouldAllocateLessThanTheBound() throws Exception
    {
        address = "shm://grpc-alloc-" + ProcessHandle.current().pid();
        server = ReverbServerBuilder.forAddress(address).addService(new GrpcEchoService()).directExecutor().build()
            .start();
        channel = ReverbChannelBuilder.forTarget(server.getListenSockets().get(0).toString()).directExecutor()
            .disableRetry().build();
        final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel);
        final EchoRequest request = EchoRequest.newBuilder().setPayload(ByteString.copyFrom(new byte[64])).build();
        for (int i = 0; i < WARM_UP; i++)
        {
            stub.unary(request);
        }
        final ThreadMXBean threads = (ThreadMXBean)ManagementFactory.getThreadMXBean();
        long least = Long.MAX_VALUE;
        for (int round = 0; round < ROUNDS; round++)
        {
            final long before = allocated(threads);
            for (int i = 0; i < CALLS_PER_ROUND; i++)
            {
                stub.unary(request);
            }
            least = Math.min(least, (allocated(threads) - before) / CALLS_PER_ROUND);
        }
        System.out.println("grpc-java unary call over shm://, blocking, directExecutor, no retry: " + least +
            " B/call (least of " + ROUNDS + " rounds of " + CALLS_PER_ROUND + ", every thread)");
        assertThat(least).as("bytes allocated per call, every thread").isLessThan(BOUND);
    }

    /** Every live thread's allocated bytes: a thread that ends meanwhile drops out (counts less, never more). */
    private static long allocated(final ThreadMXBean threads)
    {
        long sum = 0;
        for (final long bytes : threads.getThreadAllocatedBytes(threads.getAllThreadIds()))
        {
            if (bytes > 0)
            {
                sum += bytes;
            }
        }
        return sum;
    }
}
