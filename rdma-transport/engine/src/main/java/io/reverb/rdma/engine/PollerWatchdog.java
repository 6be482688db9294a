package io.reverb.rdma.engine;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes a blocked poller visible. Every poller of an engine serves many connections, so a handler that blocks
 * on the poller thread (a {@code Thread.sleep}, a {@code .block()}, a lock held elsewhere) freezes all of them.
 * This daemon samples each poller's duty-cycle counter a few times per threshold; a cycle that is still running
 * after the threshold is logged once, with the poller's stack (the culprit), at most once per
 * {@link #REPORT_INTERVAL_NANOS} per poller, with the number of stalls not logged since. Once every poller has
 * slept through a whole sampling period, it parks until one wakes (the poller unparks it), so an idle engine's
 * watchdog costs no wake-ups.
 *
 * <p>A duty cycle stopped by the JVM's garbage collection pauses (a large message's array allocated on the poller
 * can start one) is no handler's fault: when the collectors' pause time during the stall is at least half of it, the
 * report says so instead of blaming a handler or the machine's cores, and leaves the stack out.
 */
final class PollerWatchdog implements Runnable
{
    /** Per poller, at most one report this often; the ones in between are counted. */
    static final long REPORT_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final Logger LOG = LoggerFactory.getLogger(PollerWatchdog.class);
    /** The JVM's collectors (fixed for its life). */
    private static final List<GarbageCollectorMXBean> COLLECTORS = ManagementFactory.getGarbageCollectorMXBeans();

    private final Poller[] pollers;
    private final long thresholdNanos;
    private final long[] seenCycle;
    private final long[] seenSince;
    private final long[] seenCpu;
    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    /** Per poller, {@link #collectorPauseMillis()} when its current duty cycle was first seen. */
    private final long[] seenGc;
    private final long[] reportedCycle;
    private final long[] lastReport;
    private final int[] suppressed;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile long stallsDetected;
    private volatile long dormancies;

    PollerWatchdog(final String name, final Poller[] pollers, final long thresholdNanos)
    {
        this.pollers = pollers;
        this.seenGc = new long[pollers.length];
        this.thresholdNanos = thresholdNanos;
        this.seenCycle = new long[pollers.length];
        this.seenSince = new long[pollers.length];
        this.seenCpu = new long[pollers.length];
        this.reportedCycle = new long[pollers.length];
        this.lastReport = new long[pollers.length];
        this.suppressed = new int[pollers.length];
        Arrays.fill(reportedCycle, -1);
        this.thread = new Thread(this, name + "-poller-watchdog");
        this.thread.setDaemon(true);
    }

    void start()
    {
        thread.start();
    }

    void stop()
    {
        running = false;
        LockSupport.unpark(thread);
    }

    /** @return duty cycles found running longer than the threshold so far. */
    long stallsDetected()
    {
        return stallsDetected;
    }

    /** @return times this watchdog parked until a poller woke (all of them were asleep: nothing to watch). */
    long dormancies()
    {
        return dormancies;
    }

    /** A poller woke from a sleep while this watchdog was dormant. Poller thread. */
    void pollerWoke()
    {
        LockSupport.unpark(thread);
    }

    @Override
    public void run()
    {
        final long period = Math.max(TimeUnit.MILLISECONDS.toNanos(1), thresholdNanos / 4);
        while (running)
        {
            LockSupport.parkNanos(this, period);
            final long now = System.nanoTime();
            // read with the clock: a pause between the two readings would count against the wrong interval
            final long gcNow = collectorPauseMillis();
            boolean allAsleep = true;
            for (int i = 0; i < pollers.length; i++)
            {
                final long before = seenCycle[i];
                check(i, now, gcNow);
                // Asleep now, and no duty cycle since the last check: asleep for a whole period.
                allAsleep &= pollers[i].isAsleep() && seenCycle[i] == before;
            }
            if (allAsleep && running)
            {
                parkUntilAPollerWakes();
            }
        }
    }

    /**
     * Every poller has been asleep for a whole period: a duty cycle can only begin after one wakes, and a poller that
     * wakes unparks this watchdog ({@link Poller#armAndAwait()}), so park until then instead of checking sleeping
     * pollers several times per threshold (an idle engine's watchdog does not wake at all).
     */
    private void parkUntilAPollerWakes()
    {
        for (final Poller poller : pollers)
        {
            poller.watchdogDormant(this);
        }
        // Dekker with the poller: it clears asleep, then reads whether a watchdog is dormant; here the reverse.
        boolean allAsleep = true;
        for (final Poller poller : pollers)
        {
            allAsleep &= poller.isAsleep();
        }
        if (allAsleep)
        {
            dormancies++;
            // Once, not in a loop: the poller that woke cleared its link to this watchdog, so after any return (a
            // wake-up, stop(), or a spurious one) the checks resume and go dormant again only after a whole period.
            LockSupport.park(this);
        }
        for (final Poller poller : pollers)
        {
            poller.watchdogDormant(null);
        }
        // The cycles seen before the sleep stay: a poller that woke starts its cycles now, and they are timed from the
        // next check (as for a cycle that begins between two checks).
    }

    private void check(final int i, final long now, final long gcNow)
    {
        final long cycle = pollers[i].cycleCount();
        if (cycle != seenCycle[i])
        {
            seenCycle[i] = cycle;
            seenSince[i] = now;
            seenCpu[i] = cpuNanos(pollers[i].thread());
            seenGc[i] = gcNow;
            return;
        }
        if ((cycle & 1) == 0 || now - seenSince[i] < thresholdNanos || reportedCycle[i] == cycle)
        {
            return; // idle between cycles, not long yet, or this stall was handled
        }
        reportedCycle[i] = cycle;
        stallsDetected++;
        pollers[i].stalls.incrementRelease();
        if (lastReport[i] != 0 && now - lastReport[i] < REPORT_INTERVAL_NANOS)
        {
            suppressed[i]++;
            return;
        }
        lastReport[i] = now;
        final Thread poller = pollers[i].thread();
        final Thread.State state = poller.getState();
        final long elapsed = now - seenSince[i];
        final long cpu = seenCpu[i] < 0 ? -1 : cpuNanos(poller) - seenCpu[i];
        final StringBuilder stack = new StringBuilder();
        for (final StackTraceElement frame : poller.getStackTrace())
        {
            stack.append("\n\tat ").append(frame);
        }
        final int before = suppressed[i];
        suppressed[i] = 0;
        final String more = before > 0 ? " (" + before + " more since the last report)" : "";
        // both readings in whole ms, taken with the clock's: at most the stall (rounding aside)
        final long gc = Math.min(elapsed, TimeUnit.MILLISECONDS.toNanos(Math.max(0, gcNow - seenGc[i])));
        final String what = cause(state, elapsed, cpu, gc);
        // A starved or collected poller's stack says only where it was stopped: left out, the line stays one line.
        final boolean stackless = gc >= elapsed / 2 || state == Thread.State.RUNNABLE && cpu >= 0 && cpu < elapsed / 2;
        LOG.warn("poller thread {} has been in one duty cycle for {} ms and {}{}{}",
            poller.getName(), TimeUnit.NANOSECONDS.toMillis(elapsed), what, more, stackless ? "" : " Its stack:" + stack);
    }

    /**
     * What a stall report says of its cause.
     *
     * @param state   the poller thread's state when the stall was seen.
     * @param elapsed how long its duty cycle has run, ns.
     * @param cpu     the thread's CPU time in that while, ns, or -1 where the JVM does not measure it.
     * @param gc      the collectors' pause time in that while, ns.
     * @return the report's cause, worded for the one who reads the log.
     */
    static String cause(final Thread.State state, final long elapsed, final long cpu, final long gc)
    {
        if (gc >= elapsed / 2)
        {
            return String.format(Locale.ROOT, "was stopped by garbage collection for %d ms of that time (the JVM's " +
                "pauses, not a handler: -Xlog:gc shows them; fewer large allocations per message, e.g. a pooling " +
                "marshaller, or a larger or low-pause heap shortens them), and every connection of this poller waited.",
                TimeUnit.NANOSECONDS.toMillis(gc));
        }
        if (state != Thread.State.RUNNABLE)
        {
            return "is " + state + ": a handler is blocking the poller thread, and every " +
                "connection it serves waits. Give the server an executor or scheduler (RpcServer.Builder.executor/" +
                "scheduler) for handlers that block.";
        }
        if (cpu >= 0 && cpu < elapsed / 2)
        {
            // pauses that do not make half of the stall (or whose reading missed one: the counter moves in whole
            // pauses) are still named
            final long gcMillis = TimeUnit.NANOSECONDS.toMillis(gc);
            return "is runnable but ran only " + TimeUnit.NANOSECONDS.toMillis(cpu) + " ms of that time" +
                (gcMillis > 0 ? " (garbage collection paused it for " + gcMillis + " ms)" : "") + ": the machine " +
                "has fewer free cores than busy threads (oversubscribed), and every connection of this poller waits.";
        }
        return "is busy: a handler doing long work on the poller thread holds up every " +
            "connection it serves; move such work to an executor or scheduler.";
    }

    /**
     * @return milliseconds the JVM's collectors have paused the application so far: the sum over its collectors but
     * those that count concurrent work (ZGC's and Shenandoah's cycles, G1's concurrent marking on newer JDKs).
     */
    static long collectorPauseMillis()
    {
        return pauseMillis(COLLECTORS);
    }

    /**
     * @param collectors the JVM's collectors.
     * @return their pause time so far, ms (see {@link #collectorPauseMillis()}).
     */
    static long pauseMillis(final List<? extends GarbageCollectorMXBean> collectors)
    {
        long sum = 0;
        for (final GarbageCollectorMXBean collector : collectors)
        {
            final String name = collector.getName();
            final long time = collector.getCollectionTime();
            if (time > 0 && !name.contains("Cycles") && !name.contains("Concurrent"))
            {
                sum += time;
            }
        }
        return sum;
    }

    private long cpuNanos(final Thread thread)
    {
        try
        {
            return threads.isThreadCpuTimeSupported() ? threads.getThreadCpuTime(thread.getId()) : -1;
        }
        catch (final UnsupportedOperationException ex)
        {
            return -1;
        }
    }
}
