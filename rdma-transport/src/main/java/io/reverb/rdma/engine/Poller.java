package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.CompletionChannel;
import io.reverb.rdma.verbs.WorkCompletions;
import java.io.IOException;
import java.util.concurrent.TimeUnit;

/**
 * A completion poller: one thread running an Agrona-{@code Agent}-style duty cycle over the CQs of
 * the connections it owns. {@link #doWork()} returns the work done; what happens when it is zero
 * depends on the {@link PollingMode}:
 * <ul>
 *   <li>BUSY: {@link Thread#onSpinWait()} and poll again.</li>
 *   <li>EVENT: arm every CQ, poll once more (a completion that raced the arming raises no event),
 *       then block on the completion channel.</li>
 *   <li>ADAPTIVE: spin for a budget of four times the recent mean gap between productive cycles
 *       (clamped to [min, max]; gaps that spanned a sleep do not count), then yield for a while,
 *       then arm and block like EVENT. When work arrives soon after the poller went to sleep, the
 *       budget doubles: spinning a little longer would have caught it.</li>
 * </ul>
 * Every connection of a poller has its CQs bound to the poller's single completion channel.
 */
final class Poller implements Runnable
{
    private static final long MAX_SLEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    private static final int GAP_SHIFT = 3; // mean over ~8 gaps
    private static final int PHASE_SPIN = 0;
    private static final int PHASE_YIELD = 1;
    private static final int PHASE_SLEEP = 2;

    private final RdmaEngine engine;
    private final CompletionChannel channel;
    private final PollingMode mode;
    private final WorkCompletions completions = new WorkCompletions(64);
    private final Thread thread;
    private final long minSpinNanos;
    private final long maxSpinNanos;
    private final long yieldNanos;
    private volatile EngineConnection[] connections = new EngineConnection[0];
    private volatile boolean running = true;

    private long lastWorkNanos;
    private long meanGapNanos;
    private int phase = PHASE_SPIN;

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

    /** @return completions processed and events handled in one pass over every connection. */
    int doWork()
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
            // Only gaps caught while spinning say how long to spin: a gap that spanned yielding or a
            // sleep includes rescheduling and wake-up, and would talk the poller into spinning when
            // the peer is not running (or into sleeping for ever after).
            if (phase == PHASE_SPIN)
            {
                meanGapNanos += (idle - meanGapNanos) >> GAP_SHIFT;
            }
            phase = PHASE_SPIN;
            lastWorkNanos = now;
            return;
        }
        final long budget = Math.max(minSpinNanos, Math.min(maxSpinNanos, meanGapNanos << 2));
        if (idle < budget)
        {
            Thread.onSpinWait();
        }
        else if (idle < budget + yieldNanos)
        {
            if (phase == PHASE_SPIN)
            {
                // The spin missed: let the budget shrink towards the minimum while misses go on.
                meanGapNanos -= meanGapNanos >> 2;
                phase = PHASE_YIELD;
            }
            Thread.yield();
        }
        else
        {
            if (phase == PHASE_SPIN)
            {
                meanGapNanos -= meanGapNanos >> 2;
            }
            phase = PHASE_SLEEP;
            final long sleepStart = System.nanoTime();
            final boolean woken = sleep();
            if (woken && System.nanoTime() - sleepStart < budget)
            {
                // Work came within one more budget of giving up: spinning a little longer would have
                // caught it without a wake-up. Double the budget (up to the maximum).
                meanGapNanos = Math.min(maxSpinNanos >> 2, Math.max(meanGapNanos << 1, minSpinNanos >> 1));
            }
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
