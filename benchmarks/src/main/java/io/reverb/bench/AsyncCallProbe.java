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
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.ReverbChannelBuilder;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Mono;

import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import javax.management.ObjectName;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The path {@code reverb-bench}'s closed loop takes ({@code LoadGenerator} with grpc-java's async stub, see
 * {@code GrpcTarget}): one call outstanding, the next one issued from the completion callback of the last, on the
 * transport's thread, {@code directExecutor()} on grpc-java's channel and server; client and server in this JVM.
 * Counted over the measured calls, summed over every thread of the JVM: bytes allocated per call, CPU time per call,
 * and waits per call (a thread parked and was woken: {@code ThreadInfo.getWaitedCount}). With {@code ?polling=event}
 * the pollers never spin, so CPU per call is the work of a call plus its wake-ups, not spinning; with the default
 * adaptive polling CPU per call includes the pollers' spinning and says little. The p50 printed is not publishable
 * on a loaded machine.
 *
 * <pre>
 * java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED -cp benchmarks/target/reverb-bench.jar \
 *     io.reverb.bench.AsyncCallProbe [calls] [--query=polling=event] [--histogram] [--blocking] [modes...]
 * </pre>
 *
 * {@code --histogram} prints what one call allocates, by class, from the JVM's class histograms of every object in
 * the heap before and after (run it with {@code -XX:+UnlockExperimentalVMOptions -XX:+UseEpsilonGC -Xmx6g}: nothing
 * is collected, so nothing allocated is missed); {@code --blocking} makes the calls with the blocking stubs, from one
 * thread, one after the other (the JMH benchmark's and {@code GrpcAllocProbe}'s path).
 *
 * Modes: {@code native} (Reverb's stubs over shm), {@code grpc} (grpc-java on Reverb over shm), {@code grpc-noretry}
 * (the same with {@code disableRetry()}), {@code grpc-client} (grpc-java's channel on Reverb, a native server),
 * {@code grpc-server} (a native client, grpc-java's server on Reverb), {@code netty} (grpc-java over Netty loopback),
 * {@code netty-noretry} (the same with {@code disableRetry()}).
 * Default: native, grpc, grpc-noretry, netty; 50000 calls each after as many for warm-up.
 */
public final class AsyncCallProbe
{
    private static final String SERVICE = "probe.Echo";
    private static final String METHOD = SERVICE + "/Unary";
    /** Print what was allocated per call, by class (run with -XX:+UseEpsilonGC: no object may be collected). */
    private static boolean histogram;
    /** Blocking calls from the main thread, one after the other, instead of the async closed loop. */
    private static boolean blocking;

    private AsyncCallProbe()
    {
    }

    /** Issues one call; its end calls {@link Loop#ended}. */
    private interface Caller
    {
        void call(Loop loop);
    }

    /**
     * @param args optional call count, an optional {@code --query=...} for the shm URI, then modes.
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception
    {
        int calls = 50_000;
        String query = "";
        int first = 0;
        if (args.length > first && args[first].matches("\\d+"))
        {
            calls = Integer.parseInt(args[first]);
            first++;
        }
        if (args.length > first && args[first].startsWith("--query="))
        {
            query = "?" + args[first].substring("--query=".length());
            first++;
        }
        if (args.length > first && "--histogram".equals(args[first]))
        {
            histogram = true;
            first++;
        }
        if (args.length > first && "--blocking".equals(args[first]))
        {
            blocking = true;
            first++;
        }
        final String[] modes = args.length > first ? Arrays.copyOfRange(args, first, args.length) :
            new String[] {"native", "grpc", "grpc-noretry", "netty"};
        for (final String mode : modes)
        {
            probe(mode, calls, query);
        }
        System.exit(0);
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's and Reverb's MethodDescriptor, CallOptions, stubs share names
    private static void probe(final String mode, final int calls, final String query) throws Exception
    {
        final BytesValue request = BytesValue.of(ByteString.copyFrom(new byte[64]));
        final String address = "shm://async-probe-" + mode + "-" + ProcessHandle.current().pid() + query;
        final Caller caller;
        final AutoCloseable close;
        final InetSocketAddress[] nettyAddress = new InetSocketAddress[1];
        final MethodDescriptor<BytesValue, BytesValue> nativeMethod = MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .fullMethodName(METHOD).type(MethodDescriptor.MethodType.UNARY)
            .requestMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance())).build();
        final io.grpc.MethodDescriptor<BytesValue, BytesValue> grpcMethod =
            io.grpc.MethodDescriptor.<BytesValue, BytesValue>newBuilder()
                .setFullMethodName(METHOD).setType(MethodType.UNARY)
                .setRequestMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance()))
                .setResponseMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance())).build();
        final boolean netty = mode.startsWith("netty");
        // native and grpc-client: a native server; grpc-server: a native client
        final boolean nativeServer = "native".equals(mode) || "grpc-client".equals(mode);
        final boolean nativeClient = "native".equals(mode) || "grpc-server".equals(mode);
        final AutoCloseable closeServer;
        if (nativeServer)
        {
            final RpcServer server = RpcServer.builder(address).addService(ServiceDefinition.builder(SERVICE)
                .addMethod(nativeMethod, io.reverb.rpc.stub.ServerCalls.unary(Mono::just)).build()).build().start();
            closeServer = server::close;
        }
        else
        {
            final ServerServiceDefinition service = ServerServiceDefinition.builder(SERVICE).addMethod(grpcMethod,
                ServerCalls.asyncUnaryCall((BytesValue r, StreamObserver<BytesValue> o) ->
                {
                    o.onNext(r);
                    o.onCompleted();
                })).build();
            final ServerBuilder<?> serverBuilder = netty ?
                NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)) : ReverbServerBuilder.forAddress(address);
            final Server server = serverBuilder.directExecutor().addService(service).build().start();
            closeServer = () -> server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            if (netty)
            {
                nettyAddress[0] = (InetSocketAddress)server.getListenSockets().get(0);
            }
        }
        if (nativeClient)
        {
            final RpcChannel channel = RpcChannel.builder(address).build();
            caller = blocking ? loop ->
            {
                io.reverb.rpc.stub.ClientCalls.unary(channel, nativeMethod, CallOptions.DEFAULT, request).block();
                loop.ended(true);
            } : loop -> io.reverb.rpc.stub.ClientCalls.unary(channel, nativeMethod, CallOptions.DEFAULT, request)
                .subscribe(new BaseSubscriber<>()
                {
                    @Override
                    protected void hookOnComplete()
                    {
                        loop.ended(true);
                    }

                    @Override
                    protected void hookOnError(final Throwable throwable)
                    {
                        loop.ended(false);
                    }
                });
            close = () ->
            {
                channel.close();
                closeServer.close();
            };
        }
        else
        {
            final ManagedChannelBuilder<?> channelBuilder = netty ?
                NettyChannelBuilder.forAddress(nettyAddress[0]).usePlaintext() : ReverbChannelBuilder.forTarget(address);
            channelBuilder.directExecutor();
            if (mode.endsWith("-noretry"))
            {
                channelBuilder.disableRetry();
            }
            final ManagedChannel channel = channelBuilder.build();
            caller = blocking ? loop ->
            {
                ClientCalls.blockingUnaryCall(channel, grpcMethod, io.grpc.CallOptions.DEFAULT, request);
                loop.ended(true);
            } : loop -> ClientCalls.asyncUnaryCall(channel.newCall(grpcMethod, io.grpc.CallOptions.DEFAULT), request,
                loop.observer);
            close = () ->
            {
                channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
                closeServer.close();
            };
        }
        new Loop(caller, calls).run(); // warm-up
        final ThreadMXBean threads = (ThreadMXBean)ManagementFactory.getThreadMXBean();
        final Loop measured = new Loop(caller, calls);
        final long[] ids = threads.getAllThreadIds();
        final long bytesBefore = allocated(threads);
        final long cpuBefore = cpu(threads, ids);
        final long waitsBefore = waits(threads, ids);
        final Map<String, long[]> histogramBefore = histogram ? classHistogram() : null;
        final Map<String, Long> switchesBefore = contextSwitches();
        measured.run();
        final Map<String, Long> switchesAfter = contextSwitches();
        final Map<String, long[]> histogramAfter = histogram ? classHistogram() : null;
        final long waits = waits(threads, ids) - waitsBefore;
        final long cpu = cpu(threads, ids) - cpuBefore;
        final long bytes = allocated(threads) - bytesBefore;
        // the least disturbed tenth of the calls: on a loaded machine, other processes' time slices cost a thread
        // CPU time too (caches refilled), unevenly
        final Loop[] tenths = new Loop[10];
        long minCpu = Long.MAX_VALUE;
        for (int i = 0; i < tenths.length; i++)
        {
            tenths[i] = new Loop(caller, Math.max(1, calls / 10));
            final long start = cpu(threads, ids);
            tenths[i].run();
            minCpu = Math.min(minCpu, (cpu(threads, ids) - start) / tenths[i].latency.length);
        }
        Arrays.sort(measured.latency);
        System.out.printf("%-13s %,7d B/call   %,7d CPU ns/call (least of ten rounds after: %,7d)   %5.2f waits/call" +
            " (all threads)   p50 %8.2f us   (%d calls, %d failed)%n", mode, bytes / calls, cpu / calls, minCpu,
            (double)waits / calls, measured.latency[calls / 2] / 1000.0, calls, measured.failed.get());
        long switches = 0;
        final StringBuilder byThread = new StringBuilder();
        for (final Map.Entry<String, Long> e : switchesAfter.entrySet())
        {
            final long n = e.getValue() - switchesBefore.getOrDefault(e.getKey(), 0L);
            switches += n;
            if (n >= calls / 100)
            {
                byThread.append(String.format("  %s %.2f", e.getKey(), (double)n / calls));
            }
        }
        System.out.printf("              %5.2f context switches/call (voluntary, all threads):%s%n",
            (double)switches / calls, byThread);
        if (histogramAfter != null)
        {
            printHistogram(histogramBefore, histogramAfter, calls);
        }
        close.close();
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName

    /** A closed loop of one call at a time, each issued from the end of the last (trampolined). */
    private static final class Loop
    {
        private final Caller caller;
        private final long[] latency;
        private final CountDownLatch done = new CountDownLatch(1);
        private final AtomicInteger wip = new AtomicInteger();
        private final AtomicInteger failed = new AtomicInteger();
        private int issued;
        private long sentAt;
        private final StreamObserver<BytesValue> observer = new StreamObserver<>()
        {
            @Override
            public void onNext(final BytesValue value)
            {
            }

            @Override
            public void onError(final Throwable t)
            {
                ended(false);
            }

            @Override
            public void onCompleted()
            {
                ended(true);
            }
        };

        Loop(final Caller caller, final int calls)
        {
            this.caller = caller;
            this.latency = new long[calls];
        }

        void run() throws InterruptedException
        {
            next();
            if (!done.await(10, TimeUnit.MINUTES))
            {
                throw new IllegalStateException("calls did not end: " + issued + " issued");
            }
        }

        void ended(final boolean ok)
        {
            latency[issued - 1] = System.nanoTime() - sentAt;
            if (!ok)
            {
                failed.incrementAndGet();
            }
            next();
        }

        private void next()
        {
            if (wip.getAndIncrement() != 0)
            {
                return;
            }
            do
            {
                if (issued == latency.length)
                {
                    done.countDown();
                    return;
                }
                issued++;
                sentAt = System.nanoTime();
                caller.call(this);
            }
            while (wip.decrementAndGet() != 0);
        }
    }

    /**
     * @return voluntary context switches (the thread blocked and was woken) by thread (tid and name), from Linux's
     * /proc; empty elsewhere.
     */
    private static Map<String, Long> contextSwitches()
    {
        final Map<String, Long> byThread = new TreeMap<>();
        final File[] tasks = new File("/proc/self/task").listFiles();
        if (tasks == null)
        {
            return byThread;
        }
        for (final File task : tasks)
        {
            try
            {
                final String name = Files.readString(new File(task, "comm").toPath()).trim();
                for (final String line : Files.readAllLines(new File(task, "status").toPath()))
                {
                    if (line.startsWith("voluntary_ctxt_switches:"))
                    {
                        byThread.put(task.getName() + "/" + name,
                            Long.parseLong(line.substring(line.indexOf(':') + 1).trim()));
                    }
                }
            }
            catch (final IOException | RuntimeException e)
            {
                // the thread ended meanwhile
            }
        }
        return byThread;
    }

    /**
     * @return every object in the heap, live or not, by class: instances and bytes (the JVM's class histogram).
     */
    private static Map<String, long[]> classHistogram() throws Exception
    {
        final String text = (String)ManagementFactory.getPlatformMBeanServer().invoke(
            new ObjectName("com.sun.management:type=DiagnosticCommand"), "gcClassHistogram",
            new Object[] {new String[] {"-all"}}, new String[] {String[].class.getName()});
        final Map<String, long[]> byClass = new HashMap<>();
        for (final String line : text.split("\n"))
        {
            final String[] f = line.trim().split("\\s+");
            if (f.length >= 4 && f[0].endsWith(":"))
            {
                byClass.put(f[3], new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])});
            }
        }
        return byClass;
    }

    private static void printHistogram(final Map<String, long[]> before, final Map<String, long[]> after, final int calls)
    {
        final List<Map.Entry<String, long[]>> grown = new ArrayList<>();
        long total = 0;
        for (final Map.Entry<String, long[]> e : after.entrySet())
        {
            final long[] b = before.getOrDefault(e.getKey(), new long[2]);
            final long[] d = {e.getValue()[0] - b[0], e.getValue()[1] - b[1]};
            if (d[1] > 0)
            {
                total += d[1];
                grown.add(Map.entry(e.getKey(), d));
            }
        }
        grown.sort((x, y) -> Long.compare(y.getValue()[1], x.getValue()[1]));
        System.out.printf("              allocated per call, by class (%,d B in all):%n", total / calls);
        for (final Map.Entry<String, long[]> e : grown)
        {
            if (e.getValue()[1] >= calls / 2)
            {
                System.out.printf("              %7.2f  %,6d B  %s%n", (double)e.getValue()[0] / calls,
                    e.getValue()[1] / calls, e.getKey());
            }
        }
    }

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

    private static long cpu(final ThreadMXBean threads, final long[] ids)
    {
        long sum = 0;
        for (final long id : ids)
        {
            final long ns = threads.getThreadCpuTime(id);
            if (ns > 0)
            {
                sum += ns;
            }
        }
        return sum;
    }

    private static long waits(final ThreadMXBean threads, final long[] ids)
    {
        long sum = 0;
        for (final ThreadInfo info : threads.getThreadInfo(ids))
        {
            if (info != null)
            {
                sum += info.getWaitedCount();
            }
        }
        return sum;
    }
}
