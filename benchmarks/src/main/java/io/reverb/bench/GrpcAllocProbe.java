package io.reverb.bench;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.sun.management.ThreadMXBean;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.MethodDescriptor.MethodType;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.reverb.grpc.ReverbChannelBuilder;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import reactor.core.publisher.Mono;

import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * Bytes allocated per unary 64 B call, summed over every thread of the JVM (client and server both run in it, so
 * the poller, Netty's event loops and the caller all count), how many times per call the calling thread waited
 * (parked: each is a wake-up by another thread, {@code ThreadInfo.getWaitedCount}), with the p50 and minimum of the
 * same calls: blocking calls one after the other, {@code directExecutor()} on grpc-java's channels and servers.
 * Allocation and waits are counted, not sampled, so they do not depend on the machine's load; the latencies do.
 *
 * <pre>
 * java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED -cp benchmarks/target/reverb-bench.jar \
 *     io.reverb.bench.GrpcAllocProbe [calls] [modes...]
 * </pre>
 *
 * Modes: {@code native} (Reverb's stubs over shm), {@code grpc} (grpc-java on Reverb over shm), {@code grpc-noretry}
 * (the same with {@code disableRetry()}), {@code netty} (grpc-java over Netty loopback), {@code netty-noretry} (the same
 * with {@code disableRetry()}). Default: all, 30000 calls
 * each after as many for warm-up.
 */
public final class GrpcAllocProbe
{
    private static final String SERVICE = "probe.Echo";
    private static final String METHOD = SERVICE + "/Unary";

    private GrpcAllocProbe()
    {
    }

    /**
     * @param args optional call count, then modes.
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception
    {
        int calls = 30_000;
        int first = 0;
        if (args.length > 0 && args[0].matches("\\d+"))
        {
            calls = Integer.parseInt(args[0]);
            first = 1;
        }
        final String[] modes = args.length > first ? Arrays.copyOfRange(args, first, args.length) :
            new String[] {"native", "grpc", "grpc-noretry", "netty"};
        for (final String mode : modes)
        {
            probe(mode, calls);
        }
        System.exit(0);
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's and Reverb's MethodDescriptor, CallOptions, stubs share names
    private static void probe(final String mode, final int calls) throws Exception
    {
        final BytesValue request = BytesValue.of(ByteString.copyFrom(new byte[64]));
        final String address = "shm://alloc-probe-" + mode + "-" + ProcessHandle.current().pid();
        final Runnable call;
        final AutoCloseable close;
        if ("native".equals(mode))
        {
            final MethodDescriptor<BytesValue, BytesValue> method = MethodDescriptor.<BytesValue, BytesValue>newBuilder()
                .fullMethodName(METHOD).type(MethodDescriptor.MethodType.UNARY)
                .requestMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
                .responseMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance())).build();
            final RpcServer server = RpcServer.builder(address).addService(ServiceDefinition.builder(SERVICE)
                .addMethod(method, io.reverb.rpc.stub.ServerCalls.unary(Mono::just)).build()).build().start();
            final RpcChannel channel = RpcChannel.builder(address).build();
            call = () -> io.reverb.rpc.stub.ClientCalls.unary(channel, method, CallOptions.DEFAULT, request).block();
            close = () ->
            {
                channel.close();
                server.close();
            };
        }
        else
        {
            final io.grpc.MethodDescriptor<BytesValue, BytesValue> method =
                io.grpc.MethodDescriptor.<BytesValue, BytesValue>newBuilder()
                    .setFullMethodName(METHOD).setType(MethodType.UNARY)
                    .setRequestMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance()))
                    .setResponseMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance())).build();
            final ServerServiceDefinition service = ServerServiceDefinition.builder(SERVICE).addMethod(method,
                ServerCalls.asyncUnaryCall((BytesValue r, io.grpc.stub.StreamObserver<BytesValue> o) ->
                {
                    o.onNext(r);
                    o.onCompleted();
                })).build();
            final boolean netty = mode.startsWith("netty");
            final ServerBuilder<?> serverBuilder = netty ?
                NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)) : ReverbServerBuilder.forAddress(address);
            final Server server = serverBuilder.directExecutor().addService(service).build().start();
            final ManagedChannelBuilder<?> channelBuilder = netty ?
                NettyChannelBuilder.forAddress((InetSocketAddress)server.getListenSockets().get(0)).usePlaintext() :
                ReverbChannelBuilder.forTarget(address);
            channelBuilder.directExecutor();
            if (mode.endsWith("-noretry"))
            {
                channelBuilder.disableRetry();
            }
            final ManagedChannel channel = channelBuilder.build();
            call = () -> ClientCalls.blockingUnaryCall(channel, method, io.grpc.CallOptions.DEFAULT, request);
            close = () ->
            {
                channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
                server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            };
        }
        final ThreadMXBean threads = (ThreadMXBean)ManagementFactory.getThreadMXBean();
        for (int i = 0; i < calls; i++)
        {
            call.run();
        }
        final long[] latency = new long[calls];
        final long caller = Thread.currentThread().getId();
        final long waitsBefore = threads.getThreadInfo(caller).getWaitedCount();
        final long before = allocated(threads);
        for (int i = 0; i < calls; i++)
        {
            final long start = System.nanoTime();
            call.run();
            latency[i] = System.nanoTime() - start;
        }
        final long after = allocated(threads);
        final long waits = threads.getThreadInfo(caller).getWaitedCount() - waitsBefore;
        Arrays.sort(latency);
        System.out.printf("%-13s %,7d B/call (all threads)   %5.2f waits/call (caller)   p50 %8.2f us   min %8.2f us" +
            "   (%d calls)%n", mode, (after - before) / calls, (double)waits / calls, latency[calls / 2] / 1000.0,
            latency[0] / 1000.0, calls);
        close.close();
    }

    // CHECKSTYLE.ON: InlineFullyQualifiedName

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
