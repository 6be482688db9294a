package io.reverb.bench.fault;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The client side of the fault suite ({@code bin/fault-suite}): many callers, each making one call after the other
 * with a deadline, counting every call's outcome in the scenario that was current when it started.
 *
 * <p>It reads its orders from stdin, one per line, from the suite's script, which injects the faults:
 * <pre>
 * phase NAME steady|fault|graceful   a new scenario begins (the previous one is judged once its calls ended)
 * restored                          the server is reachable again (recovery is timed from here)
 * inflight FILE                     FILE lists the ids of calls running on the server when it began a graceful shutdown
 * end                               stop calling, judge the last scenario, close, check what was left behind
 * </pre>
 * It prints one {@code ROW} line per scenario and a {@code CLIENT} line (threads and registered buffers left after
 * the channel closed), and exits 0 if every rule held, 1 if one was broken, 2 on a usage error.
 *
 * <p>Usage: {@code FaultDriver --stack native|grpc-reverb|grpc-netty --uri URI [--callers 16] [--deadline-ms 1500]
 * [--pause-ms 20 (mean; 0..2x)] [--margin-ms 500] [--recovery-ms 5000] [--keepalive-ms 10000] [--keepalive-timeout-ms 5000]
 * [--graceful-no-failures true|false]}.
 */
public final class FaultDriver
{
    /** Printed once the callers run. */
    public static final String READY = "FAULT-DRIVER-READY";

    private final FaultStack.Client client;
    private final Duration deadline;
    private final long pauseNanos;
    private final PhaseStats.Rules rules;
    private final PrintStream out;
    private final ScheduledExecutorService scheduler =
        Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "fault-driver-scheduler"));
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, Call> outstanding = new ConcurrentHashMap<>();
    private final Map<Long, Integer> outcomes = new ConcurrentHashMap<>();
        private volatile PhaseStats current;
    private volatile boolean running = true;

    private record Call(PhaseStats phase, long startNanos)
    {
    }

    FaultDriver(final FaultStack.Client client, final Duration deadline, final Duration pause, final PhaseStats.Rules rules,
        final PrintStream out)
    {
        this.client = client;
        this.deadline = deadline;
        this.pauseNanos = pause.toNanos();
        this.rules = rules;
        this.out = out;
        this.current = new PhaseStats("start", PhaseStats.Kind.STEADY);
    }

    private static Thread daemon(final Runnable r, final String name)
    {
        final Thread thread = new Thread(r, name);
        thread.setDaemon(true);
        return thread;
    }

    /**
     * @param args see the class comment.
     * @throws Exception on an unexpected error.
     */
    public static void main(final String[] args) throws Exception
    {
        final Map<String, String> options;
        final FaultStack stack;
        try
        {
            options = FaultServer.options(args, List.of("--stack", "--uri", "--callers", "--deadline-ms", "--pause-ms",
                "--margin-ms", "--recovery-ms", "--keepalive-ms", "--keepalive-timeout-ms", "--graceful-no-failures"));
            stack = FaultStack.parse(FaultServer.required(options, "--stack"));
            FaultServer.required(options, "--uri");
        }
        catch (final IllegalArgumentException ex)
        {
            System.err.println("fault-driver: " + ex.getMessage());
            System.exit(2);
            return;
        }
        final String uri = options.get("--uri");
        final int callers = Integer.parseInt(options.getOrDefault("--callers", "16"));
        final Duration deadline = Duration.ofMillis(Long.parseLong(options.getOrDefault("--deadline-ms", "1500")));
        final Duration pause = Duration.ofMillis(Long.parseLong(options.getOrDefault("--pause-ms", "20")));
        final PhaseStats.Rules rules = new PhaseStats.Rules(
            TimeUnit.MILLISECONDS.toNanos(Long.parseLong(options.getOrDefault("--margin-ms", "500"))),
            TimeUnit.MILLISECONDS.toNanos(Long.parseLong(options.getOrDefault("--recovery-ms", "5000"))),
            Boolean.parseBoolean(options.getOrDefault("--graceful-no-failures", "true")));
        final FaultStacks.ClientSettings settings = new FaultStacks.ClientSettings(
            Duration.ofMillis(Long.parseLong(options.getOrDefault("--keepalive-ms", "10000"))),
            Duration.ofMillis(Long.parseLong(options.getOrDefault("--keepalive-timeout-ms", "5000"))));
        final PrintStream out = System.out;

        // A first channel makes a few calls and closes: what stays after it (process-wide pools) is the baseline
        // against which the suite's channel must leave nothing behind.
        try (FaultStack.Client warmup = FaultStacks.connect(stack, uri, settings))
        {
            int ok = 0;
            for (int i = 0; i < 600 && ok < 5; i++)
            {
                if (warmup.call(-1 - i, deadline).get(deadline.toMillis() + 10_000, TimeUnit.MILLISECONDS).code() == 0)
                {
                    ok++;
                }
                else
                {
                    Thread.sleep(100);
                }
            }
            if (ok < 5)
            {
                out.println("FAULT-DRIVER-ERROR the server did not answer 5 warm-up calls");
                System.exit(1);
            }
        }
        Thread.sleep(2_000);
        final ThreadCensus baseline = ThreadCensus.take();

        final FaultStack.Client client = FaultStacks.connect(stack, uri, settings);
        final FaultDriver driver = new FaultDriver(client, deadline, pause, rules, out);
        driver.start(callers);
        out.println(READY);
        out.flush();
        final boolean passed = driver.control(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));

        client.close();
        final List<String> threadsLeft = ThreadCensus.awaitLeftSince(baseline, 10_000);
        final long buffers = client.buffersInUse();
        final boolean clean = threadsLeft.isEmpty() && buffers <= 0;
        out.printf(Locale.ROOT, "CLIENT threads-left=%d%s buffers-in-use=%s %s%n", threadsLeft.size(),
            threadsLeft.isEmpty() ? "" : " " + threadsLeft, buffers < 0 ? "n/a" : Long.toString(buffers),
            clean ? "PASS" : "FAIL");
        out.flush();
        System.exit(passed && clean ? 0 : 1);
    }

    void start(final int callers)
    {
        for (int i = 0; i < callers; i++)
        {
            // spread the callers' first calls over one pause so they do not march in step
            scheduler.schedule(this::callOnce, pauseNanos * i / Math.max(1, callers), TimeUnit.NANOSECONDS);
        }
        scheduler.scheduleAtFixedRate(this::watch, 100, 100, TimeUnit.MILLISECONDS);
    }

    private void callOnce()
    {
        if (!running)
        {
            return;
        }
        final long id = ids.incrementAndGet();
        final PhaseStats phase = current;
        phase.callStarted();
        final long start = System.nanoTime();
        outstanding.put(id, new Call(phase, start));
        client.call(id, deadline).whenComplete((outcome, error) ->
        {
            final long end = System.nanoTime();
            final int status = error != null ? -1 : outcome.code();
            outcomes.put(id, status);
            phase.callEnded(status, start, end - start - deadline.toNanos(), end);
            if (status != PhaseStats.OK)
            {
                phase.failureSeen(status, error != null ? error.toString() : outcome.description());
            }
            outstanding.remove(id);
            if (running)
            {
                // a pause of 0..2x the mean: the callers drift apart instead of calling in step
                scheduler.schedule(this::callOnce, ThreadLocalRandom.current().nextLong(2 * pauseNanos + 1),
                    TimeUnit.NANOSECONDS);
            }
        });
    }

    /** Calls that have not ended count as running past their deadline as long as they run. */
    private void watch()
    {
        final long now = System.nanoTime();
        for (final Call call : outstanding.values())
        {
            call.phase().overrun(now - call.startNanos() - deadline.toNanos());
        }
    }

    /**
     * Follows the script's orders until {@code end}.
     *
     * @param orders the script's lines.
     * @return true if every scenario held.
     * @throws IOException if stdin fails.
     * @throws InterruptedException if interrupted.
     */
    boolean control(final BufferedReader orders) throws IOException, InterruptedException
    {
        out.println("ROW-HEADER " + PhaseStats.Verdict.header());
        final PhaseStats initial = current;
        final ExecutorService judge = Executors.newSingleThreadExecutor(r -> daemon(r, "fault-driver-judge"));
        final List<Future<Boolean>> verdicts = new ArrayList<>();
        String line;
        while ((line = orders.readLine()) != null)
        {
            final String[] words = line.trim().split("\\s+");
            switch (words[0])
            {
                case "phase" ->
                {
                    if (words.length != 3)
                    {
                        throw new IllegalArgumentException("phase NAME steady|fault|graceful, not: " + line);
                    }
                    final PhaseStats previous = current;
                    current = new PhaseStats(words[1], PhaseStats.Kind.valueOf(words[2].toUpperCase(Locale.ROOT)));
                    if (previous != initial)
                    {
                        // judged on its own thread: its last calls may take a deadline to end, orders keep coming
                        verdicts.add(judge.submit(() -> judge(previous)));
                    }
                }
                case "restored" -> current.restored(System.nanoTime());
                case "inflight" -> current.inflightAtShutdown(readIds(Path.of(words[1])));
                case "end" ->
                {
                    running = false;
                    final PhaseStats last = current;
                    verdicts.add(judge.submit(() -> judge(last)));
                    boolean passed = true;
                    for (final Future<Boolean> verdict : verdicts)
                    {
                        try
                        {
                            passed &= verdict.get();
                        }
                        catch (final ExecutionException ex)
                        {
                            throw new IllegalStateException("judging a scenario failed", ex.getCause());
                        }
                    }
                    judge.shutdown();
                    scheduler.shutdownNow();
                    return passed;
                }
                case "" ->
                {
                    // blank line
                }
                default -> throw new IllegalArgumentException("unknown order: " + line);
            }
        }
        throw new IOException("stdin ended before the order 'end'");
    }

    /** @return the scenario the driver's calls count in now (the last {@code phase} order it read), for tests */
    PhaseStats currentPhase()
    {
        return current;
    }

    /** Waits (bounded) for the scenario's calls to end, then prints its verdict. */
    private boolean judge(final PhaseStats phase) throws InterruptedException
    {
        final long end = System.nanoTime() + deadline.toNanos() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < end && outstanding.values().stream().anyMatch(c -> c.phase() == phase))
        {
            Thread.sleep(20);
        }
        watch();
        final PhaseStats.Verdict verdict = phase.verdict(rules, outcomes::get);
        synchronized (out)
        {
            out.println("ROW " + verdict.row());
            out.println("FAILURES " + phase.name() + " " + phase.failureSamples());
            out.flush();
        }
        return verdict.passed();
    }

    private static List<Long> readIds(final Path file) throws IOException
    {
        final List<Long> ids = new ArrayList<>();
        for (final String line : Files.readAllLines(file, StandardCharsets.UTF_8))
        {
            if (!line.isBlank())
            {
                ids.add(Long.parseLong(line.trim()));
            }
        }
        return ids;
    }
}
