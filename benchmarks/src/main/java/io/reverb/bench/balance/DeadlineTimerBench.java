package io.reverb.bench.balance;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import io.reverb.bench.target.ReverbTarget;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import java.io.PrintStream;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * What per-call deadline timers cost under many outstanding calls: closed-loop unary echo calls over
 * {@code inproc://} (client and server in this JVM, so the timers are all that differs), every call with a deadline
 * (scheduled by the client, and by the server from the CALL frame's timeout, and cancelled when the call ends),
 * side by side in one run and alternated: rpc-core's timer wheel (the default) and a Reactor parallel scheduler
 * given to both channel and server (what deadlines used before).
 *
 * <pre>
 * java -cp reverb-bench.jar io.reverb.bench.balance.DeadlineTimerBench [-c 512] [-z 10] [--warmup-s 3] [--rounds 2]
 * </pre>
 */
public final class DeadlineTimerBench
{
    private DeadlineTimerBench()
    {
    }

    /**
     * @param args command line (see the class comment).
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception
    {
        final int concurrency = Integer.parseInt(arg(args, "-c", "512"));
        final int seconds = Integer.parseInt(arg(args, "-z", "10"));
        final int warmup = Integer.parseInt(arg(args, "--warmup-s", "3"));
        final int rounds = Integer.parseInt(arg(args, "--rounds", "2"));
        final PrintStream out = System.out;
        out.printf("%-10s %10s %10s %10s %10s %10s %8s%n", "timer", "calls/s", "p50 us", "p99 us", "p99.9 us", "max us",
            "errors");
        for (int round = 0; round < rounds; round++)
        {
            for (final String timer : new String[] {"wheel", "scheduler"})
            {
                run(timer, concurrency, warmup, seconds, out);
            }
        }
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

    private static void run(final String timer, final int concurrency, final int warmupS, final int seconds,
        final PrintStream out) throws InterruptedException
    {
        final String uri = "inproc://deadline-bench-" + timer + "-" + System.nanoTime();
        final Scheduler scheduler = timer.equals("wheel") ? null : Schedulers.newParallel("bench-deadline-timer");
        final RpcServer.Builder serverBuilder = RpcServer.builder(uri).addService(ReverbTarget.serviceDefinition());
        final RpcChannel.Builder channelBuilder = RpcChannel.builder(uri);
        if (scheduler != null)
        {
            serverBuilder.timerScheduler(scheduler);
            channelBuilder.timerScheduler(scheduler);
        }
        final RpcServer server = serverBuilder.build().start();
        final BytesValue request = BytesValue.newBuilder().setValue(ByteString.copyFrom(new byte[64])).build();
        try (RpcChannel channel = channelBuilder.build())
        {
            final ConcurrentHistogram histogram = new ConcurrentHistogram(TimeUnit.SECONDS.toNanos(10), 3);
            final AtomicLong errors = new AtomicLong();
            final long measureFrom = System.nanoTime() + TimeUnit.SECONDS.toNanos(warmupS);
            final long end = measureFrom + TimeUnit.SECONDS.toNanos(seconds);
            final CountDownLatch done = new CountDownLatch(concurrency);
            for (int i = 0; i < concurrency; i++)
            {
                loop(channel, request, histogram, errors, measureFrom, end, done);
            }
            done.await();
            final Histogram h = histogram;
            out.printf("%-10s %10.0f %10.1f %10.1f %10.1f %10.1f %8d%n", timer, h.getTotalCount() / (double)seconds,
                h.getValueAtPercentile(50) / 1000.0, h.getValueAtPercentile(99) / 1000.0,
                h.getValueAtPercentile(99.9) / 1000.0, h.getMaxValue() / 1000.0, errors.get());
            out.flush();
        }
        finally
        {
            server.shutdown(Duration.ZERO);
            server.awaitTermination(Duration.ofSeconds(10));
            if (scheduler != null)
            {
                scheduler.dispose();
            }
        }
    }

    private static void loop(final RpcChannel channel, final BytesValue request, final Histogram histogram,
        final AtomicLong errors, final long measureFrom, final long end, final CountDownLatch done)
    {
        final long t0 = System.nanoTime();
        if (t0 - end >= 0)
        {
            done.countDown();
            return;
        }
        channel.newUnaryCall(ReverbTarget.ECHO_METHOD, CallOptions.DEFAULT.withDeadlineAfter(Duration.ofSeconds(10)),
            request).subscribe(
                answer ->
                {
                    if (t0 - measureFrom >= 0)
                    {
                        histogram.recordValue(Math.min(System.nanoTime() - t0, histogram.getHighestTrackableValue()));
                    }
                    loop(channel, request, histogram, errors, measureFrom, end, done);
                },
                error ->
                {
                    errors.incrementAndGet();
                    loop(channel, request, histogram, errors, measureFrom, end, done);
                });
    }
}
