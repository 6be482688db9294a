package io.reverb.rdma.engine;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
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
 */
final class PollerWatchdog implements Runnable
{
    /** Per poller, at most one report this often; the ones in between are counted. */
    static final long REPORT_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final Logger LOG = LoggerFactory.getLogger(PollerWatchdog.class);

    private final Poller[] pollers;
    private final long thresholdNanos;
    private final long[] seenCycle;
    private final long[] seenSince;
    private final long[] seenCpu;
    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
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
            boolean allAsleep = true;
            for (int i = 0; i < pollers.length; i++)
            {
                final long before = seenCycle[i];
                check(i, now);
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

    private void check(final int i, final long now)
    {
        final long cycle = pollers[i].cycleCount();
        if (cycle != seenCycle[i])
        {
            seenCycle[i] = cycle;
            seenSince[i] = now;
            seenCpu[i] = cpuNanos(pollers[i].thread());
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
        final String what;
        if (state != Thread.State.RUNNABLE)
        {
            what = "is " + state + ": a handler is blocking the poller thread, and every " +
                "connection it serves waits. Give the server an executor or scheduler (RpcServer.Builder.executor/" +
                "scheduler) for handlers that block.";
        }
        else if (cpu >= 0 && cpu < elapsed / 2)
        {
            what = "is runnable but ran only " + TimeUnit.NANOSECONDS.toMillis(cpu) + " ms of that time: the machine " +
                "has fewer free cores than busy threads (oversubscribed), and every connection of this poller waits.";
        }
        else
        {
            what = "is busy: a handler doing long work on the poller thread holds up every " +
                "connection it serves; move such work to an executor or scheduler.";
        }
        // A starved poller's stack says only where it was preempted: left out, the line stays one line.
        final boolean starved = state == Thread.State.RUNNABLE && cpu >= 0 && cpu < elapsed / 2;
        LOG.warn("poller thread {} has been in one duty cycle for {} ms and {}{}{}",
            poller.getName(), TimeUnit.NANOSECONDS.toMillis(elapsed), what, more, starved ? "" : " Its stack:" + stack);
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
