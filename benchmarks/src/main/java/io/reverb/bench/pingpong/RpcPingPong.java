package io.reverb.bench.pingpong;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.sun.management.ThreadMXBean;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import org.reactivestreams.Subscription;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Mono;

/**
 * Unary 64-byte RPC ping-pong between two processes through the generated-style stub path
 * ({@code ClientCalls.unary} with {@code ProtoMarshaller} over {@code BytesValue}): a benchmark, not a test.
 *
 * <p>It forks a server JVM (an echo service, handler {@code Mono::just}) and measures, one call in flight:
 * <ul>
 *   <li>{@code chained}: the next call is issued from the completion of the previous one, on the completing
 *       (transport) thread;</li>
 *   <li>{@code block}: a caller thread loops over {@code .block()}.</li>
 * </ul>
 * For each: p50/p99/p99.9/max of the call time (HdrHistogram), and bytes allocated per call over all threads of
 * the client JVM and of the server JVM (com.sun.management.ThreadMXBean).
 *
 * <p>Usage: {@code RpcPingPong [--uri shm://name[?polling=busy|adaptive|event]] [--warmup 50000] [--calls 200000]
 * [--rounds 1]}; run with {@code --add-exports java.base/jdk.internal.misc=ALL-UNNAMED}.
 */
public final class RpcPingPong
{
    private static final int PAYLOAD = 62; // 64 bytes serialized as BytesValue (tag + length + 62)

    static final MethodDescriptor<BytesValue, BytesValue> PING = MethodDescriptor.<BytesValue, BytesValue>newBuilder()
        .type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName("reverb.bench.Ping/Ping")
        .requestMarshaller((Marshaller<BytesValue>)ProtoMarshaller.of(BytesValue.getDefaultInstance()))
        .responseMarshaller((Marshaller<BytesValue>)ProtoMarshaller.of(BytesValue.getDefaultInstance()))
        .build();

    private RpcPingPong()
    {
    }

    /**
     * @param args see the class comment; {@code --serve <uri>} is the child's entry point.
     */
    public static void main(final String[] args)
    {
        System.exit(new CommandLine(new Options()).execute(args));
    }

    /** The command line (picocli). */
    @Command(name = "RpcPingPong", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Unary 64-byte RPC ping-pong between two processes: call time percentiles and allocation per call.")
    static final class Options implements Callable<Integer>
    {
        @Option(names = "--uri", paramLabel = "URI",
            description = "server address, e.g. shm://name?polling=busy (default: shm://rpcpingpong-<pid>)")
        String uri;

        @Option(names = "--warmup", paramLabel = "N", description = "warm-up calls per caller (default: ${DEFAULT-VALUE})")
        int warmup = 50_000;

        @Option(names = "--calls", paramLabel = "N", description = "measured calls per caller (default: ${DEFAULT-VALUE})")
        int calls = 200_000;

        @Option(names = "--rounds", paramLabel = "N", description = "rounds of both callers (default: ${DEFAULT-VALUE})")
        int rounds = 1;

        @Option(names = "--serve", hidden = true, paramLabel = "URI",
            description = "the child's entry point: run the echo server")
        String serve;

        @Override
        public Integer call() throws Exception
        {
            if (serve != null)
            {
                serve(serve);
            }
            else
            {
                measure(uri != null ? uri : "shm://rpcpingpong-" + ProcessHandle.current().pid(), warmup, calls, rounds);
            }
            return 0;
        }
    }

    private static void measure(final String uri, final int warmup, final int calls, final int rounds) throws Exception
    {
        System.out.printf(Locale.ROOT, "Reverb unary RPC ping-pong, two processes, %s, 64 B, %d calls (+%d warm-up); " +
            "%d cores, %s%n", uri, calls, warmup, Runtime.getRuntime().availableProcessors(),
            System.getProperty("java.vm.version"));
        final Process child = new ProcessBuilder(List.of(
            System.getProperty("java.home") + "/bin/java",
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-cp", System.getProperty("java.class.path"),
            RpcPingPong.class.getName(), "--serve", uri)).redirectErrorStream(true).start();
        final BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        final PrintWriter in = new PrintWriter(new OutputStreamWriter(child.getOutputStream(), StandardCharsets.UTF_8), true);
        String ready;
        do
        {
            ready = out.readLine(); // skips what the JVM may print first (e.g. "Picked up JAVA_TOOL_OPTIONS")
        }
        while (ready != null && !ready.startsWith("READY ") && !ready.startsWith("Exception"));
        if (ready == null || !ready.startsWith("READY "))
        {
            child.destroy();
            throw new IllegalStateException("server did not start: " + ready);
        }
        final BytesValue request = BytesValue.of(ByteString.copyFrom(new byte[PAYLOAD]));
        // the server's address names the endpoint; the polling mode asked for applies to the client as well
        final String address = ready.substring("READY ".length());
        final String query = URI.create(uri).getRawQuery();
        final String target = query == null || address.contains("?") ? address : address + "?" + query;
        System.out.println("server: " + address + ", client connects to " + target);
        try (RdmaEngine engine = clientEngine(target);
            RpcChannel channel = engine == null ? RpcChannel.builder(target).build() :
                RpcChannel.builder(target).transportOptions(EngineOptions.of(engine)).build())
        {
            System.out.printf(Locale.ROOT, "%-8s %8s %8s %9s %9s %14s %14s %15s%n",
                "caller", "p50 us", "p99 us", "p99.9 us", "max us", "alloc/call cli", "alloc/call srv", "sleeps/call cli");
            System.out.println("client engine: " + (engine == null ? "none (not an engine scheme: sleeps not counted)" :
                engine.config().name() + ", " + engine.config().pollingMode() + ", " + engine.pollerCount() + " poller(s)"));
            for (int round = 0; round < rounds; round++)
            {
                for (final boolean chained : new boolean[] {true, false})
                {
                    run(chained, channel, request, warmup, null);
                    final Histogram histogram = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
                    final long server0 = serverAllocated(in, out);
                    final long client0 = allocatedBytes();
                    final long sleeps0 = sleeps(engine);
                    run(chained, channel, request, calls, histogram);
                    final long client1 = allocatedBytes();
                    final long sleeps1 = sleeps(engine);
                    final long server1 = serverAllocated(in, out);
                    System.out.printf(Locale.ROOT, "%-8s %8.2f %8.2f %9.2f %9.1f %14d %14d %15.3f%n",
                        chained ? "chained" : "block()",
                        histogram.getValueAtPercentile(50) / 1000.0, histogram.getValueAtPercentile(99) / 1000.0,
                        histogram.getValueAtPercentile(99.9) / 1000.0, histogram.getMaxValue() / 1000.0,
                        (client1 - client0) / calls, (server1 - server0) / calls, (double)(sleeps1 - sleeps0) / calls);
                }
            }
        }
        finally
        {
            in.close();
            child.destroy();
            child.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static void run(final boolean chained, final RpcChannel channel, final BytesValue request, final int calls,
        final Histogram histogram) throws InterruptedException
    {
        if (chained)
        {
            final Chain chain = new Chain(channel, request, calls, histogram);
            chain.next();
            if (!chain.done.await(5, TimeUnit.MINUTES))
            {
                throw new IllegalStateException("chained calls did not finish");
            }
            if (chain.error != null)
            {
                throw new IllegalStateException("call failed", chain.error);
            }
            return;
        }
        final Duration timeout = Duration.ofSeconds(10);
        for (int i = 0; i < calls; i++)
        {
            final long start = System.nanoTime();
            ClientCalls.unary(channel, PING, CallOptions.DEFAULT, request).block(timeout);
            final long rtt = System.nanoTime() - start;
            if (histogram != null)
            {
                histogram.recordValue(Math.min(rtt, histogram.getHighestTrackableValue()));
            }
        }
    }

    /** Issues each call from the completion of the previous one, on the completing thread (one subscriber reused). */
    private static final class Chain implements CoreSubscriber<BytesValue>
    {
        final CountDownLatch done = new CountDownLatch(1);
        private final RpcChannel channel;
        private final BytesValue request;
        private final Histogram histogram;
        private int remaining;
        private long start;
        volatile Throwable error;

        Chain(final RpcChannel channel, final BytesValue request, final int calls, final Histogram histogram)
        {
            this.channel = channel;
            this.request = request;
            this.histogram = histogram;
            this.remaining = calls;
        }

        void next()
        {
            remaining--;
            start = System.nanoTime();
            ClientCalls.unary(channel, PING, CallOptions.DEFAULT, request).subscribe(this);
        }

        @Override
        public void onSubscribe(final Subscription s)
        {
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(final BytesValue value)
        {
        }

        @Override
        public void onError(final Throwable t)
        {
            error = t;
            done.countDown();
        }

        @Override
        public void onComplete()
        {
            final long rtt = System.nanoTime() - start;
            if (histogram != null)
            {
                histogram.recordValue(Math.min(rtt, histogram.getHighestTrackableValue()));
            }
            if (remaining > 0)
            {
                next();
            }
            else
            {
                done.countDown();
            }
        }
    }

    /**
     * @param uri the address the client connects to.
     * @return an engine for the client, opened here so that its poller counters can be read (the channel runs on it,
     *         with the address's {@code ?polling=} and {@code ?directWrite=}); null for a scheme without an engine.
     * @throws IOException if it cannot be opened.
     */
    private static RdmaEngine clientEngine(final String uri) throws IOException
    {
        final URI parsed = URI.create(uri);
        if (!List.of("shm", "tcp", "rdma").contains(parsed.getScheme()))
        {
            return null;
        }
        final EngineConfig config = new EngineConfig().name("rpcpingpong-client");
        final String query = parsed.getQuery() == null ? "" : parsed.getQuery();
        for (final String parameter : query.split("&"))
        {
            final int eq = parameter.indexOf('=');
            final String key = eq < 0 ? parameter : parameter.substring(0, eq);
            final String value = eq < 0 ? "" : parameter.substring(eq + 1);
            if ("polling".equalsIgnoreCase(key))
            {
                config.pollingMode(PollingMode.valueOf(value.toUpperCase(Locale.ROOT)));
            }
            else if ("directWrite".equalsIgnoreCase(key))
            {
                config.directWrite(Boolean.parseBoolean(value));
            }
        }
        return RdmaEngine.open(parsed.getScheme(), config);
    }

    private static long sleeps(final RdmaEngine engine)
    {
        if (engine == null)
        {
            return 0;
        }
        long n = 0;
        for (int i = 0; i < engine.pollerCount(); i++)
        {
            n += engine.pollerSleeps(i);
        }
        return n;
    }

    private static long serverAllocated(final PrintWriter in, final BufferedReader out) throws IOException
    {
        in.println("STATS");
        String line;
        do
        {
            line = out.readLine();
        }
        while (line != null && !line.startsWith("ALLOC ") && !line.startsWith("Exception"));
        if (line == null || !line.startsWith("ALLOC "))
        {
            throw new IllegalStateException("server: " + line);
        }
        return Long.parseLong(line.substring("ALLOC ".length()));
    }

    static long allocatedBytes()
    {
        final ThreadMXBean mx = (ThreadMXBean)ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (final long b : mx.getThreadAllocatedBytes(mx.getAllThreadIds()))
        {
            if (b > 0)
            {
                sum += b;
            }
        }
        return sum;
    }

    private static void serve(final String uri) throws Exception
    {
        try (RpcServer server = RpcServer.builder(uri)
            .addService(ServiceDefinition.builder("reverb.bench.Ping").addMethod(PING, ServerCalls.unary(Mono::just)).build())
            .build().start())
        {
            System.out.println("READY " + server.address());
            System.out.flush();
            final BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = commands.readLine()) != null)
            {
                if ("STATS".equals(line))
                {
                    System.out.println("ALLOC " + allocatedBytes());
                    System.out.flush();
                }
            }
        }
    }
}
