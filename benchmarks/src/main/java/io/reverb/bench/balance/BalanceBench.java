package io.reverb.bench.balance;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.google.protobuf.Int32Value;
import io.reverb.rpc.lb.BalancedChannel;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.ConnectivityState;
import io.reverb.rpc.lb.Subchannel;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import reactor.core.publisher.Mono;

/**
 * {@code reverb-bench balance}: several server processes behind one {@link RpcChannel} built with their addresses, one of them slow
 * (a fixed delay per call), closed-loop unary calls, p50/p99/p99.9 per load-balancing policy side by side.
 *
 * <pre>
 * reverb-bench balance [--transport shm|tcp] [--replicas 3] [--slow-delay-us 200] [--concurrency 8]
 *                      [--warmup-s 3] [--duration-s 10] [--policies round_robin,peak_ewma] [--payload 64]
 * </pre>
 *
 * The slow replica is the last one. Each policy gets a fresh channel to the same server processes.
 */
public final class BalanceBench
{
    private static final String SERVICE = "reverb.bench.Balance";
    private static final MethodDescriptor<BytesValue, Int32Value> CALL = MethodDescriptor.<BytesValue, Int32Value>newBuilder()
        .type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Call"))
        .requestMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(Int32Value.getDefaultInstance()))
        .build();
    private static final String READY = "BALANCE-SERVER-READY";

    private BalanceBench()
    {
    }

    /**
     * {@code BalanceBench server --uri U --id N --delay-us D}: serves until stdin closes.
     *
     * @param args command line.
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception
    {
        if (args.length > 0 && args[0].equals("server"))
        {
            serve(args);
            return;
        }
        System.exit(run(args, System.out, System.err));
    }

    private static String arg(final String[] args, final String name, final String fallback)
    {
        for (int i = 0; i + 1 < args.length; i++)
        {
            if (args[i].equals(name))
            {
                return args[i + 1];
            }
        }
        return fallback;
    }

    private static void serve(final String[] args) throws IOException
    {
        final String uri = arg(args, "--uri", null);
        final int id = Integer.parseInt(arg(args, "--id", "0"));
        final long delayUs = Long.parseLong(arg(args, "--delay-us", "0"));
        final Int32Value answer = Int32Value.of(id);
        final Duration delay = Duration.ofNanos(delayUs * 1000);
        final RpcServer server = RpcServer.builder(uri).addService(ServiceDefinition.builder(SERVICE)
            .addMethod(CALL, ServerCalls.unary(request -> delayUs == 0 ? Mono.just(answer) :
                Mono.delay(delay).thenReturn(answer)))
            .build()).build().start();
        System.out.println(READY + " " + server.address());
        System.out.flush();
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (in.readLine() != null)
        {
            // serve until the parent closes our stdin (or dies)
        }
        server.shutdown(Duration.ZERO);
    }

    /**
     * Runs the benchmark.
     *
     * @param args command line (see the class comment).
     * @param out  the results.
     * @param err  progress.
     * @return exit status.
     * @throws Exception on failure.
     */
    public static int run(final String[] args, final PrintStream out, final PrintStream err) throws Exception
    {
        final String transport = arg(args, "--transport", "shm");
        final int replicas = Integer.parseInt(arg(args, "--replicas", "3"));
        final long slowDelayUs = Long.parseLong(arg(args, "--slow-delay-us", "200"));
        final int concurrency = Integer.parseInt(arg(args, "--concurrency", "8"));
        final int warmupS = Integer.parseInt(arg(args, "--warmup-s", "3"));
        final int durationS = Integer.parseInt(arg(args, "--duration-s", "10"));
        final int payload = Integer.parseInt(arg(args, "--payload", "64"));
        final List<String> policies = Arrays.asList(arg(args, "--policies", "round_robin,peak_ewma").split(","));

        final List<Process> processes = new ArrayList<>();
        final List<String> uris = new ArrayList<>();
        try
        {
            for (int i = 0; i < replicas; i++)
            {
                final String uri = transport.equals("tcp") ? "tcp://127.0.0.1:0" :
                    "shm://reverb-balance-" + ProcessHandle.current().pid() + "-" + i;
                final long delay = i == replicas - 1 ? slowDelayUs : 0;
                final Process p = startServer(uri, i, delay);
                processes.add(p);
                uris.add(awaitReady(p));
            }
            err.println("replicas: " + uris + " (the last one delays each call by " + slowDelayUs + " us)");
            out.printf("%-12s %10s %10s %10s %10s %10s %10s %12s%n",
                "policy", "calls", "calls/s", "p50 us", "p99 us", "p99.9 us", "max us", "slow share");
            for (final String policy : policies)
            {
                final Result result = measure(uris, policy, concurrency, payload, warmupS, durationS, err);
                final Histogram h = result.histogram;
                out.printf("%-12s %10d %10.0f %10.1f %10.1f %10.1f %10.1f %11.2f%%%n", policy, h.getTotalCount(),
                    h.getTotalCount() / (double)durationS, h.getValueAtPercentile(50) / 1000.0,
                    h.getValueAtPercentile(99) / 1000.0, h.getValueAtPercentile(99.9) / 1000.0, h.getMaxValue() / 1000.0,
                    100.0 * result.perReplica.get(replicas - 1) / Math.max(1, h.getTotalCount()));
                out.flush();
            }
            return 0;
        }
        finally
        {
            for (final Process p : processes)
            {
                p.getOutputStream().close();
            }
            for (final Process p : processes)
            {
                if (!p.waitFor(10, TimeUnit.SECONDS))
                {
                    p.destroyForcibly();
                }
            }
        }
    }

    private record Result(Histogram histogram, AtomicLongArray perReplica)
    {
    }

    private static Result measure(final List<String> uris, final String policy, final int concurrency, final int payload,
        final int warmupS, final int durationS, final PrintStream err) throws InterruptedException
    {
        final BytesValue request = BytesValue.newBuilder().setValue(ByteString.copyFrom(new byte[payload])).build();
        try (RpcChannel channel = RpcChannel.builder(uris).loadBalancingPolicy(policy).build())
        {
            final long readyBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (((BalancedChannel)channel).subchannels().stream().filter(s -> s.state() == ConnectivityState.READY).count()
                < (policy.equals("pick_first") ? 1 : uris.size()) && System.nanoTime() < readyBy)
            {
                Thread.sleep(10);
            }
            final ConcurrentHistogram histogram = new ConcurrentHistogram(TimeUnit.SECONDS.toNanos(10), 3);
            final AtomicLongArray perReplica = new AtomicLongArray(uris.size());
            final AtomicLong errors = new AtomicLong();
            final long start = System.nanoTime();
            final long measureFrom = start + TimeUnit.SECONDS.toNanos(warmupS);
            final long end = measureFrom + TimeUnit.SECONDS.toNanos(durationS);
            final CountDownLatch done = new CountDownLatch(concurrency);
            for (int i = 0; i < concurrency; i++)
            {
                loop(channel, request, histogram, perReplica, errors, measureFrom, end, done);
            }
            done.await();
            if (errors.get() > 0)
            {
                err.println(policy + ": " + errors.get() + " calls failed");
            }
            final StringBuilder subchannels = new StringBuilder();
            for (final Subchannel s : ((BalancedChannel)channel).subchannels())
            {
                subchannels.append(' ').append(s.address()).append(' ').append(s.load());
            }
            err.println(policy + ":" + subchannels);
            return new Result(histogram, perReplica);
        }
    }

    private static void loop(final RpcChannel channel, final BytesValue request, final Histogram histogram,
        final AtomicLongArray perReplica, final AtomicLong errors, final long measureFrom, final long end,
        final CountDownLatch done)
    {
        final long t0 = System.nanoTime();
        if (t0 - end >= 0)
        {
            done.countDown();
            return;
        }
        channel.newUnaryCall(CALL, CallOptions.DEFAULT, request).subscribe(
            answer ->
            {
                final long t1 = System.nanoTime();
                if (t0 - measureFrom >= 0)
                {
                    histogram.recordValue(Math.min(t1 - t0, histogram.getHighestTrackableValue()));
                    perReplica.incrementAndGet(answer.getValue());
                }
                loop(channel, request, histogram, perReplica, errors, measureFrom, end, done);
            },
            error ->
            {
                errors.incrementAndGet();
                loop(channel, request, histogram, perReplica, errors, measureFrom, end, done);
            });
    }

    private static Process startServer(final String uri, final int id, final long delayUs) throws IOException
    {
        final List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + "/bin/java");
        command.add("--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED");
        command.add("-Xmx256m");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(BalanceBench.class.getName());
        command.addAll(List.of("server", "--uri", uri, "--id", Integer.toString(id), "--delay-us", Long.toString(delayUs)));
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    private static String awaitReady(final Process p) throws IOException
    {
        final BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = out.readLine()) != null)
        {
            if (line.startsWith(READY))
            {
                return line.substring(READY.length()).trim();
            }
        }
        throw new IOException("a balance server exited before it was ready (its error is above)");
    }
}
