package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.CompletionChannel;
import io.reverb.rdma.verbs.WorkCompletions;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A completion poller: one thread running an Agrona-{@code Agent}-style duty cycle over the CQs of
 * the connections it owns. {@link #doWork()} returns the work done; what happens when it is zero
 * depends on the {@link PollingMode}:
 * <ul>
 *   <li>BUSY: {@link Thread#onSpinWait()} and poll again.</li>
 *   <li>EVENT: arm every CQ, poll once more (a completion that raced the arming raises no event),
 *       then block on the completion channel.</li>
 *   <li>ADAPTIVE: spin for a budget of four times the recent mean gap between completions caught
 *       while spinning (clamped to [min, max]), then yield briefly, then arm and block like EVENT.
 *       Spinning continues only while it catches at least half of the idle periods (judged every
 *       16); otherwise the poller sleeps at once and probes with one full-length spin per window.</li>
 * </ul>
 * Every connection of a poller has its CQs bound to the poller's single completion channel.
 */
final class Poller implements Runnable
{
    private static final long MAX_SLEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    private static final int GAP_SHIFT = 3; // mean over ~8 gaps
    private static final int WINDOW = 16;
    private static final int PHASE_SPIN = 0;
    private static final int PHASE_YIELD = 1;
    private static final int PHASE_SLEEP = 2;

    private final RdmaEngine engine;
    private final CompletionChannel channel;
    private final PollingMode mode;
    private final WorkCompletions completions = new WorkCompletions(64);
    private final Thread thread;
    /** Duty cycles begun and ended (odd: one is running); written by the poller thread only. */
    private final AtomicLong cycle = new AtomicLong();
    private final long minSpinNanos;
    private final long maxSpinNanos;
    private final long yieldNanos;
    private volatile EngineConnection[] connections = new EngineConnection[0];
    private volatile boolean running = true;

    private long lastWorkNanos;
    private long meanGapNanos;
    private int phase = PHASE_SPIN;
    private boolean spinning = true;
    private boolean idleStarted;
    private boolean probing;
    private int spinHits;
    private int idlePeriods;

    // Counters: written by the poller thread only.
    long polls;
    long emptyPolls;
    long wakeups;
    long sleeps;

    Poller(final RdmaEngine engine, final CompletionChannel channel, final int index)
    {
        this.engine = engine;
        this.channel = channel;
        final EngineConfig config = engine.config();
        this.mode = config.pollingMode();
        this.minSpinNanos = config.adaptiveMinSpinNanos();
        this.maxSpinNanos = config.adaptiveMaxSpinNanos();
        this.yieldNanos = config.adaptiveYieldNanos();
        this.thread = new Thread(this, config.name() + "-poller-" + index);
        this.thread.setDaemon(true);
    }

    void start()
    {
        thread.start();
    }

    Thread thread()
    {
        return thread;
    }

    CompletionChannel channel()
    {
        return channel;
    }

    WorkCompletions completions()
    {
        return completions;
    }

    int connectionCount()
    {
        return connections.length;
    }

    PollingMode mode()
    {
        return mode;
    }

    synchronized void add(final EngineConnection connection)
    {
        final EngineConnection[] old = connections;
        final EngineConnection[] grown = new EngineConnection[old.length + 1];
        System.arraycopy(old, 0, grown, 0, old.length);
        grown[old.length] = connection;
        connections = grown;
        wakeup();
    }

    synchronized void remove(final EngineConnection connection)
    {
        final EngineConnection[] old = connections;
        for (int i = 0; i < old.length; i++)
        {
            if (old[i] == connection)
            {
                final EngineConnection[] shrunk = new EngineConnection[old.length - 1];
                System.arraycopy(old, 0, shrunk, 0, i);
                System.arraycopy(old, i + 1, shrunk, i, old.length - i - 1);
                connections = shrunk;
                return;
            }
        }
    }

    void wakeup()
    {
        channel.wakeup();
    }

    void stop()
    {
        running = false;
        wakeup();
    }

    void join(final long millis) throws InterruptedException
    {
        thread.join(millis);
    }

    /** Odd while a duty cycle runs; read by the {@link PollerWatchdog}. */
    long cycleCount()
    {
        return cycle.get();
    }

    /** @return completions processed and events handled in one pass over every connection. */
    int doWork()
    {
        cycle.lazySet(cycle.get() + 1);
        try
        {
            return pollConnections();
        }
        finally
        {
            cycle.lazySet(cycle.get() + 1);
        }
    }

    private int pollConnections()
    {
        final EngineConnection[] conns = connections;
        int work = 0;
        for (final EngineConnection connection : conns)
        {
            work += connection.poll(completions);
        }
        polls++;
        if (work == 0)
        {
            emptyPolls++;
        }
        return work;
    }

    @Override
    public void run()
    {
        lastWorkNanos = System.nanoTime();
        while (running)
        {
            try
            {
                final int work = doWork();
                switch (mode)
                {
                    case BUSY:
                        if (work == 0)
                        {
                            Thread.onSpinWait();
                        }
                        break;
                    case EVENT:
                        if (work == 0)
                        {
                            sleep();
                        }
                        break;
                    default:
                        adaptiveIdle(work);
                }
            }
            catch (final Throwable t)
            {
                if (running)
                {
                    engine.onError(new EngineException("poller " + thread.getName() + " caught an error", t));
                }
            }
        }
    }

    private void adaptiveIdle(final int work)
    {
        final long now = System.nanoTime();
        final long idle = now - lastWorkNanos;
        if (work > 0)
        {
            if (phase == PHASE_SPIN && idleStarted)
            {
                // Caught while spinning: the gap tells how long spinning must last.
                meanGapNanos += (idle - meanGapNanos) >> GAP_SHIFT;
                spinHits++;
                idlePeriods++;
                if (probing)
                {
                    spinning = true; // a probe paid off: spin again
                    probing = false;
                }
            }
            phase = PHASE_SPIN;
            idleStarted = false;
            lastWorkNanos = now;
            judgeWindow();
            return;
        }
        idleStarted = true;
        final long budget = probing ? maxSpinNanos :
            spinning ? Math.max(minSpinNanos, Math.min(maxSpinNanos, meanGapNanos << 2)) : 0;
        if (idle < budget)
        {
            Thread.onSpinWait();
        }
        else if (idle < budget + yieldNanos)
        {
            if (phase == PHASE_SPIN)
            {
                missed();
            }
            phase = PHASE_YIELD;
            Thread.yield();
        }
        else
        {
            if (phase == PHASE_SPIN)
            {
                missed();
            }
            phase = PHASE_SLEEP;
            sleep();
        }
    }

    private void missed()
    {
        idlePeriods++;
        probing = false;
        judgeWindow();
    }

    /**
     * Every {@value #WINDOW} idle periods: keep spinning only if spins caught at least half of them
     * (on an oversubscribed machine a spinning poller steals the core its peer needs, and spins
     * miss); when not spinning, probe once per window with a full-length spin to notice that
     * spinning pays again.
     */
    private void judgeWindow()
    {
        if (idlePeriods >= WINDOW)
        {
            spinning = spinHits * 2 >= idlePeriods;
            probing = !spinning;
            spinHits = 0;
            idlePeriods = 0;
        }
    }

    /**
     * Arm, re-poll, block.
     *
     * @return true if work or a completion event ended the sleep (not a time-out).
     */
    private boolean sleep()
    {
        final EngineConnection[] conns = connections;
        for (final EngineConnection connection : conns)
        {
            connection.arm();
        }
        if (doWork() > 0)
        {
            lastWorkNanos = System.nanoTime();
            phase = PHASE_SPIN;
            idleStarted = false;
            return true;
        }
        sleeps++;
        boolean woken = false;
        try
        {
            if (channel.await(MAX_SLEEP_NANOS) > 0)
            {
                wakeups++;
                woken = true;
            }
        }
        catch (final IOException ex)
        {
            if (running)
            {
                engine.onError(new EngineException("completion channel of " + thread.getName() + " failed", ex));
                running = false;
            }
        }
        for (final EngineConnection connection : connections)
        {
            connection.tick();
        }
        return woken;
    }
}
