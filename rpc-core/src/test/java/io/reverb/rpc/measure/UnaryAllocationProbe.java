package io.reverb.rpc.measure;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.sun.management.ThreadMXBean;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;
import reactor.core.publisher.Mono;

/**
 * Measures bytes allocated (all threads of the JVM) and time per unary 64-byte call through the generated-style
 * stub path. Not a test: run with
 * {@code java -cp <test classpath> io.reverb.rpc.measure.UnaryAllocationProbe [uri] [calls]}.
 * Over inproc the transport itself allocates a heap buffer per message (it is a test transport).
 */
public final class UnaryAllocationProbe
{
    /** The probes' method: a unary echo of {@link BytesValue}. */
    public static final MethodDescriptor<BytesValue, BytesValue> PING = MethodDescriptor.<BytesValue, BytesValue>newBuilder()
        .type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName("reverb.measure.Ping/Ping")
        .requestMarshaller((Marshaller<BytesValue>)ProtoMarshaller.of(BytesValue.getDefaultInstance()))
        .responseMarshaller((Marshaller<BytesValue>)ProtoMarshaller.of(BytesValue.getDefaultInstance()))
        .build();

    private UnaryAllocationProbe()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        final String uri = args.length > 0 ? args[0] : "inproc://probe";
        final int calls = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        final BytesValue payload = BytesValue.of(ByteString.copyFrom(new byte[62]));
        try (RpcServer server = RpcServer.builder(uri).addService(pingService()).build().start();
            RpcChannel channel = RpcChannel.builder(uri).build())
        {
            for (int round = 0; round < 3; round++)
            {
                measure("block()", calls, () ->
                {
                    for (int i = 0; i < calls; i++)
                    {
                        ClientCalls.unary(channel, PING, CallOptions.DEFAULT, payload).block(Duration.ofSeconds(10));
                    }
                });
                measure("chained", calls, () ->
                    Mono.defer(() -> ClientCalls.unary(channel, PING, CallOptions.DEFAULT, payload))
                        .repeat(calls - 1).then().block(Duration.ofMinutes(5)));
            }
        }
    }

    /**
     * @return the service answering {@link #PING} with its request.
     */
    public static ServiceDefinition pingService()
    {
        return ServiceDefinition.builder("reverb.measure.Ping").addMethod(PING, ServerCalls.unary(Mono::just)).build();
    }

    /**
     * Runs the calls and prints the time and the bytes allocated (by all threads) per call.
     *
     * @param name  what is measured, for the printed line.
     * @param calls how many calls the run makes.
     * @param run   makes the calls.
     */
    public static void measure(final String name, final int calls, final Runnable run)
    {
        final long bytesBefore = allocatedBytes();
        final long start = System.nanoTime();
        run.run();
        final long elapsed = System.nanoTime() - start;
        final long bytes = allocatedBytes() - bytesBefore;
        System.out.printf("%-11s %,d calls: %.2f us/call, %,d bytes allocated/call (all threads)%n",
            name, calls, elapsed / 1000.0 / calls, bytes / calls);
    }

    private static long allocatedBytes()
    {
        final ThreadMXBean mx = (ThreadMXBean)ManagementFactory.getThreadMXBean();
        final long[] ids = mx.getAllThreadIds();
        return Arrays.stream(mx.getThreadAllocatedBytes(ids)).filter(b -> b > 0).sum();
    }
}
