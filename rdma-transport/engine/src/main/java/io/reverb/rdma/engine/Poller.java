package io.reverb.rdma.engine;

import io.reverb.common.counters.CounterGroup;
import io.reverb.rdma.verbs.CompletionChannel;
import io.reverb.rdma.verbs.WorkCompletions;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.agrona.collections.ArrayUtil;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.AgentTerminationException;
import org.agrona.concurrent.status.AtomicCounter;

/**
 * A completion poller: an Agrona {@link Agent} whose duty cycle ({@link #doWork()}) polls the CQs of the
 * connections it owns, run on its own thread by an {@link AgentRunner} with a {@link PollerIdleStrategy}
 * (BUSY, EVENT or ADAPTIVE, see there) deciding what to do when a cycle found nothing. Every connection of
 * a poller has its CQs bound to the poller's single completion channel, on which {@link #armAndAwait()}
 * blocks.
 *
 * <p>A duty cycle that throws is reported to the engine's error handler and the poller carries on (the
 * runner never sees the exception); {@link #stop()} ends the runner with an {@link AgentTerminationException}.
 * {@link #cycleCount()} is odd while a duty cycle runs, for the {@link PollerWatchdog}.
 */
final class Poller implements Agent
{
    /**
     * The longest sleep while a connection has a deadline to watch (a graceful close, a grant given or held): the
     * connections {@link EngineConnection#tick() tick} at least this often then. A poller whose connections have no
     * deadline, and whose idle task has nothing left to do, sleeps until an event or a {@link #wakeup()}: an idle
     * engine's poller does not wake at all. Whoever gives a connection a deadline from another thread wakes its
     * poller ({@link EngineConnection#closeAsync()}); deadlines made on the poller thread are seen at its next sleep.
     */
    static final long MAX_SLEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /**
     * Runs of the idle task in one duty cycle while a granted rendezvous awaits its data (see
     * {@link #runIdleTask(EngineConnection[])}): bounds what other connections of this poller can wait for it (the
     * default marshaller's task prepares one 256 KiB array per run and at most 16 per thread).
     */
    static final int MAX_IDLE_RUNS_AWAITING_DATA = 16;
    /**
     * How often a poller that never sleeps (BUSY, or ADAPTIVE under steady load) still lets its connections
     * {@link EngineConnection#tick() tick}: a peer holding granted memory must be dropped, and a graceful close must
     * see its deadline, whatever the polling mode.
     */
    static final long TICK_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /** The clock is read once per this many duty cycles (a power of two minus one, as a mask). */
    private static final long TICK_CHECK_MASK = 1023;
    /** The idle task's clock is read once per this many duty cycles without work (as a mask; see runIdleTask). */
    private static final int IDLE_TASK_CHECK_MASK = 7;

    private final RdmaEngine engine;
    private final CompletionChannel channel;
    private final PollingMode mode;
    private final String roleName;
    private final WorkCompletions completions = new WorkCompletions(64);
    private final PollerIdleStrategy idleStrategy;
    private final AgentRunner runner;
    /** Duty cycles begun and ended (odd: one is running); written by the poller thread only. */
    private final AtomicLong cycle = new AtomicLong();
    private volatile Thread thread;
    private volatile EngineConnection[] connections = new EngineConnection[0];
    private volatile boolean running = true;
    /** When the connections last ticked; poller thread only. */
    private long lastTickNanos = System.nanoTime();

    // Counters, in the process's counters file: written by the poller thread only (stalls: by the watchdog's).
    final AtomicCounter polls;
    final AtomicCounter emptyPolls;
    final AtomicCounter wakeups;
    final AtomicCounter sleeps;
    final AtomicCounter stalls;

    /** {@link EngineConfig#idleTask(BooleanSupplier)}: run after duty cycles without work (this thread only). */
    private final BooleanSupplier idleTask;
    /** {@link EngineConfig#idleTaskDelayNanos(long)}: how long a poller finds no work before it runs its idle task. */
    private final long idleTaskDelayNanos;
    /** When the current run of duty cycles without work began; 0 while there is work (this thread only). */
    private long idleSinceNanos;
    /** The idle task's last run did something (it may have more to do): sleeps stay timed (this thread only). */
    private boolean idleTaskBusy;
    /**
     * The idle task found nothing to do since this poller's last work: it is not run (nor the clock read for it)
     * until work comes. What it prepares is used up only by work on this thread (this thread only).
     */
    private boolean idleTaskSettled;
    /** Duty cycles without work since the clock was last read for the idle task (this thread only). */
    private int idleTaskChecks;
    /**
     * The timeout of the sleep this poller is in ({@link CompletionChannel#NO_TIMEOUT}: none), or 0 while awake: the
     * {@link PollerWatchdog} has nothing to watch while it sleeps.
     */
    private volatile long asleepTimeout;
    /** Set by a {@link PollerWatchdog} that parks until a poller wakes; this poller then unparks it. */
    private volatile PollerWatchdog dormantWatchdog;
    // Sleeps without a time limit, and with one (a deadline or the idle task needed it): written by this thread only.
    private final AtomicLong untimedSleeps = new AtomicLong();
    private final AtomicLong timedSleeps = new AtomicLong();

    Poller(final RdmaEngine engine, final CompletionChannel channel, final int index, final CounterGroup counters)
    {
        this.polls = counters.counter("duty cycles");
        this.emptyPolls = counters.counter("empty duty cycles");
        this.sleeps = counters.counter("sleeps");
        this.wakeups = counters.counter("wake-ups");
        this.stalls = counters.counter("watchdog stalls");
        this.engine = engine;
        this.channel = channel;
        final EngineConfig config = engine.config();
        this.mode = config.pollingMode();
        this.roleName = config.name() + "-poller-" + index;
        this.idleStrategy = new PollerIdleStrategy(this, config);
        this.idleTask = config.idleTask();
        this.idleTaskDelayNanos = config.idleTaskDelayNanos();
        this.runner = new AgentRunner(idleStrategy, this::onRunnerError, null, this);
    }

    void start()
    {
        AgentRunner.startOnThread(runner, task ->
        {
            final Thread t = new Thread(task, roleName);
            t.setDaemon(true);
            thread = t;
            return t;
        });
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
        connections = ArrayUtil.add(connections, connection);
        connection.polled();
        wakeup();
    }

    synchronized void remove(final EngineConnection connection)
    {
        connections = ArrayUtil.remove(connections, connection);
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
        final Thread t = thread;
        if (t != null)
        {
            t.join(millis);
        }
    }

    @Override
    public String roleName()
    {
        return roleName;
    }

    @Override
    public void onStart()
    {
        idleStrategy.reset();
    }

    /** Odd while a duty cycle runs; read by the {@link PollerWatchdog}. */
    long cycleCount()
    {
        return cycle.get();
    }

    /**
     * One duty cycle: a pass over every connection.
     *
     * @return completions processed and events handled
     * @throws AgentTerminationException once {@link #stop()} was called
     */
    @Override
    public int doWork()
    {
        if (!running)
        {
            throw new AgentTerminationException();
        }
        try
        {
            return pollOnce();
        }
        catch (final Throwable t)
        {
            reportError(t);
            return 1; // poll again at once, as after work
        }
    }

    private int pollOnce()
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
        if (work != 0)
        {
            idleSinceNanos = 0;
            idleTaskSettled = false;
            idleTaskChecks = 0;
        }
        final long cycles = polls.incrementRelease() + 1;
        if (work == 0)
        {
            if (idleTask != null)
            {
                runIdleTask(conns);
            }
            emptyPolls.incrementRelease();
        }
        if ((cycles & TICK_CHECK_MASK) == 0)
        {
            final long now = System.nanoTime();
            if (now - lastTickNanos >= TICK_INTERVAL_NANOS)
            {
                tick(conns, now);
            }
        }
        return work;
    }

    /**
     * The idle task, once this poller has found no work for {@link #idleTaskDelayNanos}: not in the short waits of a
     * rendezvous (an RTS's CTS comes back within microseconds, and a task then would delay the message), but in the
     * longer ones (the peer writing or handling a large message). While one of its connections has granted a
     * rendezvous whose data has not arrived, at once and until the task has nothing left (at most
     * {@link #MAX_IDLE_RUNS_AWAITING_DATA} runs in this duty cycle): the peer is still writing (or, announced at its
     * claim, still serialising) that message, and what the task prepares (a large message's arrays) is needed when the
     * data lands. One run per duty cycle was not enough: the polling mode yields and parks between cycles (the task
     * is not work), and a 1 MiB echo over shm found only 29% of its arrays ready (4,107 of 14,208 per side, load 5-8);
     * what is not prepared then is allocated on the critical path anyway, so running the task here costs the message
     * nothing it would not have cost later. Not counted as work: the polling mode's spin, yield and park are unchanged.
     */
    private void runIdleTask(final EngineConnection[] conns)
    {
        // A spinning poller's empty duty cycles are short: a clock read in each (and the task's own check of having
        // nothing to do) took a third of a BUSY server poller's samples. The clock is read in every
        // IDLE_TASK_CHECK_MASK + 1st one (the delay is measured in microseconds, a cycle takes tens of nanoseconds),
        // and a task that found nothing to do waits for work.
        if (idleTaskSettled || (idleTaskChecks++ & IDLE_TASK_CHECK_MASK) != 0)
        {
            return;
        }
        final long now = System.nanoTime();
        if (idleSinceNanos == 0)
        {
            idleSinceNanos = now;
        }
        final boolean delayed = now - idleSinceNanos >= idleTaskDelayNanos;
        // the connections are scanned only where they were before (within the delay) or when the task has more to do
        final boolean awaiting = !delayed && awaitsGrantedData(conns);
        if (!delayed && !awaiting)
        {
            return;
        }
        boolean more = idleTask.getAsBoolean();
        if (more && (awaiting || awaitsGrantedData(conns)))
        {
            for (int runs = 1; more && runs < MAX_IDLE_RUNS_AWAITING_DATA; runs++)
            {
                more = idleTask.getAsBoolean();
            }
        }
        idleTaskBusy = more;
        idleTaskSettled = !more;
    }

    private static boolean awaitsGrantedData(final EngineConnection[] conns)
    {
        for (final EngineConnection connection : conns)
        {
            if (connection.awaitsGrantedData())
            {
                return true;
            }
        }
        return false;
    }

    /**
     * The poller stops for good (its channel failed, e.g. the verbs context was closed under it): its connections are
     * torn down now, on this thread, so that their buffers come back and their close futures complete instead of
     * waiting out the close timeout for a poller that is gone.
     */
    private void failConnections(final Throwable cause)
    {
        final EngineConnection[] conns = connections;
        for (final EngineConnection connection : conns)
        {
            connection.failLater(cause);
        }
        try
        {
            pollOnce();
        }
        catch (final Throwable t)
        {
            engine.onError(new EngineException("poller " + roleName + " failed tearing its connections down", t));
        }
    }

    private void tick(final EngineConnection[] conns, final long nowNanos)
    {
        lastTickNanos = nowNanos;
        for (final EngineConnection connection : conns)
        {
            connection.tick();
        }
    }

    private void reportError(final Throwable t)
    {
        if (running)
        {
            engine.onError(new EngineException("poller " + roleName + " caught an error", t));
        }
    }

    /** What escapes a duty cycle or the idle strategy (the runner's error handler). */
    private void onRunnerError(final Throwable t)
    {
        if (!(t instanceof AgentTerminationException))
        {
            reportError(t);
        }
    }

    /**
     * Arm, re-poll, block (at most {@value #MAX_SLEEP_NANOS} ns while a connection has a deadline or the idle task
     * more to do, else until an event or a {@link #wakeup()}), then let the connections check their deadlines.
     * Called by the idle strategy when it decides to sleep.
     *
     * @return true if the re-poll after arming found work (the poller did not block)
     */
    boolean armAndAwait()
    {
        final EngineConnection[] conns = connections;
        for (final EngineConnection connection : conns)
        {
            connection.arm();
        }
        // the re-poll is the last duty cycle before the sleep: its idle-task check reads the clock (not every empty
        // cycle's does), so that a task whose delay has passed runs before the poller sleeps, however few cycles
        // it spun
        idleTaskChecks = 0;
        try
        {
            if (pollOnce() > 0)
            {
                return true;
            }
        }
        catch (final Throwable t)
        {
            reportError(t);
            return true;
        }
        sleeps.incrementRelease();
        final long timeout = sleepTimeoutNanos(conns);
        final AtomicLong kind = timeout == CompletionChannel.NO_TIMEOUT ? untimedSleeps : timedSleeps;
        kind.lazySet(kind.get() + 1);
        asleepTimeout = timeout;
        try
        {
            if (channel.await(timeout) > 0)
            {
                wakeups.incrementRelease();
            }
        }
        catch (final IOException ex)
        {
            if (running)
            {
                final EngineException cause = new EngineException("completion channel of " + roleName + " failed", ex);
                engine.onError(cause);
                running = false;
                failConnections(cause);
            }
        }
        finally
        {
            asleepTimeout = 0;
            final PollerWatchdog watchdog = dormantWatchdog;
            if (watchdog != null)
            {
                // Dekker with the watchdog's going dormant: it publishes itself, then reads asleep.
                dormantWatchdog = null;
                watchdog.pollerWoke();
            }
        }
        tick(connections, System.nanoTime());
        return false;
    }

    /**
     * @return {@link #MAX_SLEEP_NANOS} if a connection has a deadline to watch or the idle task had something to do,
     *         else {@link CompletionChannel#NO_TIMEOUT}
     */
    private long sleepTimeoutNanos(final EngineConnection[] conns)
    {
        if (idleTaskBusy)
        {
            return MAX_SLEEP_NANOS;
        }
        for (final EngineConnection connection : conns)
        {
            if (connection.hasDeadline())
            {
                return MAX_SLEEP_NANOS;
            }
        }
        return CompletionChannel.NO_TIMEOUT;
    }

    /** @return true while this poller blocks in its channel (the watchdog's view). */
    boolean isAsleep()
    {
        return asleepTimeout != 0;
    }

    /** @return true while this poller sleeps without a time limit (tests). */
    boolean isAsleepUntimed()
    {
        return asleepTimeout == CompletionChannel.NO_TIMEOUT;
    }

    /**
     * The watchdog parks until a poller wakes (it saw them all asleep). Watchdog thread.
     *
     * @param watchdog the watchdog to unpark when this poller wakes, or null to clear.
     */
    void watchdogDormant(final PollerWatchdog watchdog)
    {
        dormantWatchdog = watchdog;
    }

    /** @return sleeps without a time limit so far (tests). */
    long untimedSleeps()
    {
        return untimedSleeps.get();
    }

    /** @return sleeps with a time limit so far: a deadline or the idle task needed ticks (tests). */
    long timedSleeps()
    {
        return timedSleeps.get();
    }
}
