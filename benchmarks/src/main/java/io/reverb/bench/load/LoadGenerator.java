package io.reverb.bench.load;

import com.google.protobuf.BytesValue;
import io.reverb.bench.EchoService;
import io.reverb.bench.target.CallObserver;
import io.reverb.bench.target.EchoClient;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

import java.io.PrintStream;
import java.time.Instant;
import java.util.Locale;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Drives an {@link EchoClient} and measures every call.
 *
 * <p><b>Closed loop</b> ({@code rps == 0}): {@code concurrency} lanes each keep one call
 * outstanding, issuing the next call from the completion of the previous one, on whatever
 * thread completes it (no hand-off to a load thread, which would add a thread wake-up to every
 * measured call). A call that completes synchronously is re-issued by a trampoline, not by
 * recursion.
 *
 * <p><b>Open loop</b> ({@code rps > 0}): a pacer thread schedules call {@code i} at
 * {@code start + i / rps} and issues it at that time if fewer than {@code concurrency} calls
 * are outstanding, otherwise as soon as one completes. Latency is measured from the
 * <em>intended</em> send time, so a stall delays and counts against every call scheduled behind
 * it (coordinated-omission correction, as in wrk2 and HdrHistogram's
 * {@code recordValueWithExpectedInterval}); the latency from the actual send is kept as
 * {@link RunResult#serviceTime} for comparison.
 */
public final class LoadGenerator
{
    private static final long PROGRESS_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long SPIN_BEFORE_SEND_NANOS = TimeUnit.MICROSECONDS.toNanos(50);

    private final EchoClient client;
    private final LoadSpec spec;
    private final PrintStream progressOut;
    private final String progressLabel;
    private final Recorder latency = new Recorder(3);
    private final Recorder serviceTime = new Recorder(3);
    private final AtomicLong completed = new AtomicLong();
    private final BytesValue request;

    /**
     * @param client        connected client.
     * @param spec          what to run.
     * @param progressOut   where progress lines go (stderr), used only when the spec asks for progress.
     * @param progressLabel prefix of progress lines.
     */
    public LoadGenerator(final EchoClient client, final LoadSpec spec, final PrintStream progressOut, final String progressLabel)
    {
        this.client = client;
        this.spec = spec;
        this.progressOut = progressOut;
        this.progressLabel = progressLabel;
        this.request = spec.kind() == CallKind.UNARY ?
            EchoService.payload(spec.payloadSize()) :
            new EchoService.StreamRequest(spec.streamMessages(), spec.payloadSize()).encode();
    }

    /**
     * Runs the load to its end and returns what was measured.
     *
     * @return the result; the caller fills in the descriptive fields (label, uri, server).
     * @throws InterruptedException if interrupted while waiting for calls.
     */
    public RunResult run() throws InterruptedException
    {
        final int lanes = spec.concurrency();
        final CountDownLatch done = new CountDownLatch(1);
        final long start = System.nanoTime();
        final long deadline = spec.totalCalls() > 0 ? Long.MAX_VALUE : start + spec.durationNanos();
        final Lane[] all = new Lane[lanes];
        final Thread pacer;
        if (spec.rps() > 0)
        {
            final ArrayBlockingQueue<Lane> idle = new ArrayBlockingQueue<>(lanes);
            for (int i = 0; i < lanes; i++)
            {
                all[i] = new Lane(idle, null, 0);
                idle.add(all[i]);
            }
            pacer = new Thread(() -> pace(idle, all, start, deadline, done), "reverb-bench-pacer");
            pacer.setDaemon(true);
            pacer.start();
        }
        else
        {
            pacer = null;
            final AtomicLong remaining = new AtomicLong(spec.totalCalls() > 0 ? spec.totalCalls() : Long.MAX_VALUE);
            final AtomicInteger running = new AtomicInteger(lanes);
            final Runnable laneDone = () ->
            {
                if (running.decrementAndGet() == 0)
                {
                    done.countDown();
                }
            };
            for (int i = 0; i < lanes; i++)
            {
                all[i] = new Lane(null, new ClosedLoop(remaining, deadline, laneDone), 0);
            }
            for (final Lane lane : all)
            {
                lane.next();
            }
        }

        final Histogram total = new Histogram(3);
        final Histogram totalService = new Histogram(3);
        Histogram interval = null;
        long lastReport = start;
        long lastCount = 0;
        while (!done.await(progressWait(start), TimeUnit.NANOSECONDS))
        {
            final long now = System.nanoTime();
            if (now - lastReport >= PROGRESS_INTERVAL_NANOS)
            {
                interval = latency.getIntervalHistogram(interval);
                total.add(interval);
                final long count = completed.get();
                if (spec.progress())
                {
                    progress(now - start, count, (count - lastCount) * 1e9 / (now - lastReport), interval);
                }
                lastReport = now;
                lastCount = count;
            }
        }
        final long end = System.nanoTime();
        if (pacer != null)
        {
            pacer.join();
        }
        total.add(latency.getIntervalHistogram());
        totalService.add(serviceTime.getIntervalHistogram());

        final RunResult result = new RunResult();
        result.kind = spec.kind().cliName();
        result.payloadSize = spec.payloadSize();
        result.streamMessages = spec.kind() == CallKind.UNARY ? 1 : spec.streamMessages();
        result.concurrency = lanes;
        result.rps = spec.rps();
        result.elapsedNanos = end - start;
        long messages = 0;
        for (final Lane lane : all)
        {
            messages += lane.messages;
        }
        result.messages = messages;
        final long[] statusCounts = new long[StatusCodes.COUNT + 1];
        for (final Lane lane : all)
        {
            for (int code = 0; code < statusCounts.length; code++)
            {
                statusCounts[code] += lane.statusCounts[code];
            }
        }
        long count = 0;
        for (int code = 0; code < statusCounts.length; code++)
        {
            final long n = statusCounts[code];
            if (n > 0)
            {
                result.statuses.put(code == StatusCodes.COUNT ? "OTHER" : StatusCodes.name(code), n);
                count += n;
            }
        }
        result.count = count;
        result.ok = statusCounts[0];
        result.latency = total;
        result.serviceTime = spec.rps() > 0 ? totalService : null;
        result.timestamp = Instant.now().toString();
        result.environment = "Java " + System.getProperty("java.version") + ", " + System.getProperty("os.arch") +
            ", " + Runtime.getRuntime().availableProcessors() + " CPUs";
        return result;
    }

    private static long progressWait(final long start)
    {
        return TimeUnit.MILLISECONDS.toNanos(100);
    }

    private void progress(final long elapsed, final long count, final double rate, final Histogram interval)
    {
        final String percentiles = interval.getTotalCount() == 0 ? "" : String.format(Locale.ROOT,
            "  p50 %s  p99 %s", Formats.micros(interval.getValueAtPercentile(50) / 1000.0),
            Formats.micros(interval.getValueAtPercentile(99) / 1000.0));
        progressOut.printf(Locale.ROOT, "[%s] %5.1fs  %,d calls  %,.0f calls/s%s%n",
            progressLabel, elapsed / 1e9, count, rate, percentiles);
        progressOut.flush();
    }

    private void pace(
        final ArrayBlockingQueue<Lane> idle, final Lane[] all, final long start, final long deadline, final CountDownLatch done)
    {
        final double intervalNanos = 1e9 / spec.rps();
        final long total = spec.totalCalls();
        try
        {
            for (long i = 0; total == 0 || i < total; i++)
            {
                final long intended = start + (long)(i * intervalNanos);
                if (intended >= deadline)
                {
                    break;
                }
                waitUntil(intended);
                final Lane lane = idle.take();
                lane.intendedStart = intended;
                lane.issue();
            }
            for (int i = 0; i < all.length; i++)
            {
                idle.take();
            }
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
        finally
        {
            done.countDown();
        }
    }

    private static void waitUntil(final long when)
    {
        long now;
        while ((now = System.nanoTime()) < when)
        {
            final long left = when - now;
            if (left > SPIN_BEFORE_SEND_NANOS)
            {
                LockSupport.parkNanos(left - SPIN_BEFORE_SEND_NANOS);
            }
            else
            {
                Thread.onSpinWait();
            }
        }
    }

    private record ClosedLoop(AtomicLong remaining, long deadline, Runnable laneDone)
    {
    }

    /**
     * One call outstanding at a time; its observer is reused for every call it makes.
     */
    private final class Lane implements CallObserver
    {
        private final ArrayBlockingQueue<Lane> idle;
        private final ClosedLoop loop;
        private final EchoClient.Caller caller;
        private final AtomicInteger wip = new AtomicInteger();
        private long intendedStart;
        private long sentAt;
        private long messages;
        private final long[] statusCounts = new long[StatusCodes.COUNT + 1];

        Lane(final ArrayBlockingQueue<Lane> idle, final ClosedLoop loop, final long intendedStart)
        {
            this.idle = idle;
            this.loop = loop;
            this.intendedStart = intendedStart;
            this.caller = client.newCaller(this);
        }

        /** Closed loop: issue calls until the run ends, trampolining synchronous completions. */
        void next()
        {
            if (wip.getAndIncrement() != 0)
            {
                return;
            }
            do
            {
                if (System.nanoTime() >= loop.deadline() || loop.remaining().getAndDecrement() <= 0)
                {
                    loop.laneDone().run();
                    return;
                }
                intendedStart = System.nanoTime();
                issue();
            }
            while (wip.decrementAndGet() != 0);
        }

        void issue()
        {
            sentAt = System.nanoTime();
            try
            {
                if (spec.kind() == CallKind.UNARY)
                {
                    caller.echo(request);
                }
                else
                {
                    caller.stream(request);
                }
            }
            catch (final RuntimeException ex)
            {
                onClose(2, ex);
            }
        }

        @Override
        public void onMessage()
        {
            messages++;
        }

        @Override
        public void onClose(final int statusCode, final Throwable error)
        {
            final long now = System.nanoTime();
            if (statusCode == 0)
            {
                latency.recordValue(now - intendedStart);
                serviceTime.recordValue(now - sentAt);
            }
            statusCounts[StatusCodes.slot(statusCode)]++;
            completed.incrementAndGet();
            if (loop != null)
            {
                next();
            }
            else
            {
                idle.add(this);
            }
        }
    }
}
