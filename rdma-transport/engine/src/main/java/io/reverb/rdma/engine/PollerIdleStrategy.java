package io.reverb.rdma.engine;

import java.util.function.BooleanSupplier;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.NanoClock;
import org.agrona.concurrent.SystemNanoClock;

/**
 * What a {@link Poller} does after a duty cycle, given the work it did ({@link PollingMode}):
 * <ul>
 *   <li>BUSY: {@link Thread#onSpinWait()} and poll again.</li>
 *   <li>EVENT: arm every CQ, poll once more (a completion that raced the arming raises no event), then
 *       block on the completion channel ({@link Poller#armAndAwait()}).</li>
 *   <li>ADAPTIVE: spin for a budget of four times the recent mean gap between completions caught while
 *       spinning (clamped to [min, max]), then yield briefly, then arm and block like EVENT. Spinning
 *       continues only while it catches at least half of the idle periods (judged every {@value #WINDOW});
 *       otherwise the poller yields and then sleeps, and probes with one full-length spin per window, each probe that
 *       misses doubling the windows to the next one (up to {@value #MAX_PROBE_WINDOWS}). A poller that slept
 *       and found nothing sleeps again at once (an idle poller does not spin between its timed wake-ups).</li>
 * </ul>
 *
 * <p>Sleeps chain: when one side sleeps, its reply comes a wake-up late; a peer whose spin is shorter than that
 * sleeps too, its answer comes a wake-up late in turn, and so on, each round trip paying a wake-up (measured in
 * benchmarks/results/20261202-1615-tail/RESULTS.md). The idle period right after a poller was woken by work
 * therefore spins for the longest budget, so that it waits out its peer's wake-up as well: the chain breaks there. A
 * spin as long in every idle period would cost the cores an oversubscribed machine's descheduled peer needs (see
 * {@link EngineConfig#adaptiveSpin}); for the same
 * reason a spin ends early once the poller finds it was descheduled in the middle of it (two empty duty cycles
 * more than {@value #PREEMPTED_NANOS} ns apart).</p>
 *
 * <p>Probes back off because a probe can be what keeps the peer from running: when both pollers share one core
 * (a machine with fewer free cores than busy threads), spins miss, spinning stops, and the two answer each other
 * through the yield phase in a few microseconds; a probe then spins the whole max budget while the peer, queued
 * behind it on that core, cannot send the awaited message, and misses. One probe per window made 1 round trip in
 * 8 take the max budget (counted in
 * benchmarks/results/20261202-tail3/RESULTS.md).
 * Spinning resumes without a probe when a message is caught right after a yield that did not give the core away
 * (it returned within {@value #YIELD_KEPT_CORE_NANOS} ns): the peer answered from a core of its own, where a spin
 * pays (a yield that let a peer on this core run takes that peer's turn, microseconds).</p>
 * Agrona's own strategies ({@code BackoffIdleStrategy}, {@code SleepingIdleStrategy}) cannot block on a
 * completion channel or learn the gap between completions, hence this one. Poller thread only.
 */
final class PollerIdleStrategy implements IdleStrategy
{
    private static final int GAP_SHIFT = 3; // mean over ~8 gaps
    static final int WINDOW = 16;
    /** While not spinning, at most this many windows pass between two probes (the backoff's ceiling). */
    static final int MAX_PROBE_WINDOWS = 256;
    /**
     * A gap this long between two empty duty cycles of a spin means the poller thread was descheduled: the machine
     * has fewer free cores than busy threads, and the spin ends (an interrupt takes a few microseconds).
     */
    static final long PREEMPTED_NANOS = 20_000;
    /** A yield that returned this fast ran no other thread (a {@code sched_yield} alone is about 0.3 us). */
    static final long YIELD_KEPT_CORE_NANOS = 2_000;
    private static final int PHASE_SPIN = 0;
    private static final int PHASE_YIELD = 1;
    private static final int PHASE_SLEEP = 2;

    /** Arms, re-polls, blocks: true if the re-poll found work ({@link Poller#armAndAwait()}). */
    private final BooleanSupplier sleeper;
    /** Gives the core to another thread that wants it ({@link Thread#yield()}; tests model a peer on this core). */
    private final Runnable yielder;
    private final NanoClock clock;
    private final PollingMode mode;
    private final long minSpinNanos;
    private final long maxSpinNanos;
    private final long yieldNanos;

    private long lastWorkNanos;
    private long meanGapNanos;
    private long budgetNanos;
    private boolean wokeToWork;
    /** When the previous empty duty cycle of this idle period ended. */
    private long lastIdleNanos;
    private int phase = PHASE_SPIN;
    /** Whether the last yield of this idle period returned within {@link #YIELD_KEPT_CORE_NANOS}. */
    private boolean yieldKeptCore;
    private boolean spinning = true;
    private boolean idleStarted;
    private boolean probing;
    private int spinHits;
    private int idlePeriods;
    /** Windows from one probe to the next while not spinning: doubled by each probe that misses. */
    private int probeWindows = 1;
    /** Windows still to pass before the next probe. */
    private int windowsToProbe;

    PollerIdleStrategy(final Poller poller, final EngineConfig config)
    {
        this(poller::armAndAwait, Thread::yield, config, SystemNanoClock.INSTANCE);
    }

    /**
     * @param sleeper arms, re-polls and blocks; returns true if the re-poll found work.
     * @param yielder gives the core away ({@link Thread#yield()}).
     * @param config  the mode and the ADAPTIVE settings.
     * @param clock   the time (tests drive it).
     */
    PollerIdleStrategy(final BooleanSupplier sleeper, final Runnable yielder, final EngineConfig config,
        final NanoClock clock)
    {
        this.sleeper = sleeper;
        this.yielder = yielder;
        this.clock = clock;
        this.mode = config.pollingMode();
        this.minSpinNanos = config.adaptiveMinSpinNanos();
        this.maxSpinNanos = config.adaptiveMaxSpinNanos();
        this.yieldNanos = config.adaptiveYieldNanos();
    }

    @Override
    public void idle(final int workCount)
    {
        switch (mode)
        {
            case BUSY:
                if (workCount == 0)
                {
                    Thread.onSpinWait();
                }
                break;
            case EVENT:
                if (workCount == 0)
                {
                    sleep();
                }
                break;
            default:
                adaptiveIdle(workCount);
        }
    }

    @Override
    public void idle()
    {
        idle(0);
    }

    /** Starts afresh: as if work had just been done. */
    @Override
    public void reset()
    {
        lastWorkNanos = clock.nanoTime();
        phase = PHASE_SPIN;
        idleStarted = false;
    }

    @Override
    public String alias()
    {
        return "reverb-" + mode.name().toLowerCase();
    }

    private void adaptiveIdle(final int work)
    {
        final long now = clock.nanoTime();
        final long idle = now - lastWorkNanos;
        if (work > 0)
        {
            // Woken from a sleep by work: the reply this poller sends now leaves a wake-up late, so its peer, waiting
            // for it, may have gone to sleep as well, and the peer's answer will come a wake-up late in turn.
            wokeToWork = phase == PHASE_SLEEP;
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
                    probeWindows = 1;
                }
            }
            else if (phase == PHASE_YIELD && !spinning && yieldKeptCore)
            {
                // Not spinning, and the peer answered while this thread kept its core: a spin would have caught it.
                spinning = true;
                probing = false;
                probeWindows = 1;
                windowsToProbe = 0;
            }
            phase = PHASE_SPIN;
            idleStarted = false;
            lastWorkNanos = now;
            judgeWindow();
            return;
        }
        if (!idleStarted)
        {
            // The budget of this idle period, fixed at its start: a window judged during it changes the next one's.
            idleStarted = true;
            long budget = probing ? maxSpinNanos :
                spinning ? Math.max(minSpinNanos, Math.min(maxSpinNanos, meanGapNanos << 2)) : 0;
            if (wokeToWork && spinning)
            {
                // Wait out the peer's wake-up too, or both sides take turns sleeping (the sleeps chain).
                budget = Math.max(budget, maxSpinNanos);
            }
            wokeToWork = false;
            budgetNanos = budget;
        }
        else if (phase == PHASE_SPIN && now - lastIdleNanos > PREEMPTED_NANOS)
        {
            // This spinning thread did not run for a while: another thread needed the core (or a safepoint stopped
            // it). Spinning on would take the core from threads that may include the peer: stop the spin here.
            budgetNanos = Math.min(budgetNanos, idle);
        }
        lastIdleNanos = now;
        final long budget = budgetNanos;
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
            yielder.run();
            yieldKeptCore = clock.nanoTime() - now <= YIELD_KEPT_CORE_NANOS;
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
        if (probing)
        {
            // Spinning still does not pay (or this spin kept a peer sharing the core from answering): probe later.
            probeWindows = Math.min(probeWindows << 1, MAX_PROBE_WINDOWS);
            windowsToProbe = probeWindows - 1;
            probing = false;
        }
        judgeWindow();
    }

    /**
     * Every {@value #WINDOW} idle periods: keep spinning only if spins caught at least half of them (on an
     * oversubscribed machine a spinning poller steals the core its peer needs, and spins miss); when not
     * spinning, probe with a full-length spin at the start of a window, once per {@link #probeWindows} windows,
     * to notice that spinning pays again.
     */
    private void judgeWindow()
    {
        if (idlePeriods >= WINDOW)
        {
            spinning = spinHits * 2 >= idlePeriods;
            if (spinning)
            {
                probeWindows = 1;
                windowsToProbe = 0;
                probing = false;
            }
            else if (windowsToProbe > 0)
            {
                windowsToProbe--;
                probing = false;
            }
            else
            {
                probing = true;
            }
            spinHits = 0;
            idlePeriods = 0;
        }
    }

    private void sleep()
    {
        if (sleeper.getAsBoolean())
        {
            reset(); // the re-poll after arming found work
        }
    }
}
