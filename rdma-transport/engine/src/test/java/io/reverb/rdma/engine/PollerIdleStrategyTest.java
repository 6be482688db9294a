package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import org.agrona.concurrent.NanoClock;
import org.junit.jupiter.api.Test;

/**
 * The polling modes' schedule, on a clock the test drives: one {@code idle(0)} per simulated microsecond, and the
 * sleeps (arm, re-poll, block) counted instead of timed.
 */
class PollerIdleStrategyTest
{
    private final FakeClock clock = new FakeClock();
    private int sleeps;
    private int yields;
    /** How long a yield takes on the driven clock: 0 runs no other thread; more lets a peer on this core run. */
    private long yieldTakesNanos;
    private boolean sleepFindsWork;

    @Test
    void shouldSleepWhenAnOrdinaryPeriodOutlastsItsSpin()
    {
        // Ordinary idle periods keep the short spin (20 us), then yield (a yielding thread holds no core another
        // thread wants), then sleep: a core held by a longer spin is a core the peer may need on an oversubscribed
        // machine.
        final EngineConfig config = new EngineConfig();
        final PollerIdleStrategy strategy = strategy(config);
        pingPong(strategy, 1_000, 2);
        yields = 0;
        idleFor(strategy, 45);
        assertThat(yields).as("yields while waiting 45 us: the spin ended at 20 us").isPositive();
        assertThat(sleeps).as("sleeps while waiting 45 us").isZero();
        idleFor(strategy, (int)TimeUnit.NANOSECONDS.toMicros(config.adaptiveYieldNanos()));
        assertThat(sleeps).as("sleeps once the yield phase is over too").isPositive();
    }

    @Test
    void shouldWaitOutThePeersWakeUpRightAfterBeingWokenByWork()
    {
        final EngineConfig config = new EngineConfig();
        final PollerIdleStrategy strategy = strategy(config);
        pingPong(strategy, 1_000, 2);
        final int normal = idleUntilSleep(strategy);
        // Woken by the peer's message: this side's reply leaves a wake-up late, so the peer may be asleep now and its
        // answer may come a wake-up late (about 35 us on a quiet small VM). It is caught spinning: no second sleep.
        // Before this rule the poller slept again at 30 us, and the sleeps chained from side to side.
        strategy.idle(1);
        sleeps = 0;
        idleFor(strategy, (int)TimeUnit.NANOSECONDS.toMicros(config.adaptiveMaxSpinNanos()) - 1);
        strategy.idle(1);
        assertThat(sleeps).as("sleeps while the peer woke up").isZero();
        // Then back to the usual budget.
        pingPong(strategy, 100, 2);
        assertThat(idleUntilSleep(strategy)).isEqualTo(normal);
    }

    @Test
    void shouldEndTheSpinWhenThePollerFindsItWasDescheduledInIt()
    {
        final EngineConfig config = new EngineConfig();
        final PollerIdleStrategy strategy = strategy(config);
        pingPong(strategy, 1_000, 2);
        final int normal = idleUntilSleep(strategy);
        strategy.idle(1);
        idleFor(strategy, 5);
        // The poller thread did not run for 30 us: the core is contended, spinning on takes it from others.
        clock.now += TimeUnit.NANOSECONDS.toNanos(PollerIdleStrategy.PREEMPTED_NANOS + 10_000);
        final int yieldMicros = (int)TimeUnit.NANOSECONDS.toMicros(config.adaptiveYieldNanos());
        assertThat(idleUntilSleep(strategy)).as("duty cycles from the gap to the sleep: the yield only")
            .isEqualTo(yieldMicros + 1);
        // A gap under the threshold (an interrupt) does not end the spin.
        strategy.idle(1);
        pingPong(strategy, 100, 2);
        idleFor(strategy, 5);
        clock.now += TimeUnit.NANOSECONDS.toNanos(PollerIdleStrategy.PREEMPTED_NANOS - 5_000);
        assertThat(idleUntilSleep(strategy) + 5 + 15).isEqualTo(normal);
    }

    @Test
    void shouldNotSpinLongerAfterWakingWhileSpinsMiss()
    {
        // Sparse work (1 ms apart, beyond any spin): once spinning stopped paying, waking to work does not buy a spin.
        final PollerIdleStrategy strategy = strategy(new EngineConfig());
        for (int period = 0; period < PollerIdleStrategy.WINDOW + 1; period++)
        {
            strategy.idle(1);
            idleUntilSleep(strategy);
            clock.now += TimeUnit.MILLISECONDS.toNanos(1);
        }
        strategy.idle(1);
        assertThat(idleUntilSleep(strategy)).as("idle microseconds before sleeping: the yield only")
            .isEqualTo((int)TimeUnit.NANOSECONDS.toMicros(new EngineConfig().adaptiveYieldNanos()));
    }

    @Test
    void shouldSpinOnceAfterWorkThenSleepWithoutSpinningBetweenTimedWakeUps()
    {
        final EngineConfig config = new EngineConfig();
        final PollerIdleStrategy strategy = strategy(config);
        pingPong(strategy, 100, 2);
        final int spun = idleUntilSleep(strategy);
        final long budget = TimeUnit.NANOSECONDS.toMicros(config.adaptiveMinSpinNanos() + config.adaptiveYieldNanos());
        assertThat(spun).as("idle microseconds before the first sleep").isEqualTo((int)budget);
        // Idle: every sleep times out (nothing comes); the poller sleeps again at once, it does not spin again.
        sleeps = 0;
        for (int i = 0; i < 1_000; i++)
        {
            strategy.idle(0);
        }
        assertThat(sleeps).as("sleeps in 1,000 idle calls after the first").isEqualTo(1_000);
    }

    @Test
    void shouldStopSpinningWhileSpinsMissAndProbeLessOftenWhileProbesMiss()
    {
        // Completions 1 ms apart, beyond the longest spin: after a window of misses the poller stops spinning, and
        // probes with one spin at the start of a window, the windows between probes doubling while probes miss:
        // windows 1, 3, 7, 15, 31 and 63 of the first 64. (Before a period's budget was fixed at its start, the
        // period in which a window was judged spun on for a probe's length as well: two spinning periods per window.)
        final EngineConfig config = new EngineConfig();
        final PollerIdleStrategy strategy = strategy(config);
        final int yieldMicros = (int)TimeUnit.NANOSECONDS.toMicros(config.adaptiveYieldNanos());
        final List<Integer> probedWindows = new ArrayList<>();
        for (int period = 0; period < 64 * PollerIdleStrategy.WINDOW; period++)
        {
            strategy.idle(1);
            final int before = idleUntilSleep(strategy);
            // Not spinning, a period still yields before it sleeps; a probe spins 50 us first.
            if (period >= PollerIdleStrategy.WINDOW && before > yieldMicros + 30)
            {
                assertThat(period % PollerIdleStrategy.WINDOW).as("a probe starts its window").isZero();
                probedWindows.add(period / PollerIdleStrategy.WINDOW);
            }
            clock.now += TimeUnit.MILLISECONDS.toNanos(1);
        }
        assertThat(probedWindows).containsExactly(1, 3, 7, 15, 31, 63);
    }

    @Test
    void shouldBackOffProbesThatKeepAPeerSharingTheCoreFromAnswering()
    {
        // The peer is queued behind this poller on its core: its message comes only once this poller yields, so a
        // spin never catches it and a probe holds it for the whole max budget. Once the backoff reached its ceiling,
        // one probe per MAX_PROBE_WINDOWS windows (one per window before: 1 round trip in 8 took the max budget when
        // both sides did so).
        final EngineConfig config = new EngineConfig();
        final PollerIdleStrategy strategy = strategy(config);
        final int maxSpin = (int)TimeUnit.NANOSECONDS.toMicros(config.adaptiveMaxSpinNanos());
        final int windows = PollerIdleStrategy.MAX_PROBE_WINDOWS;
        sharingTheCore(strategy, 2 * windows * PollerIdleStrategy.WINDOW, maxSpin);
        assertThat(sleeps).as("sleeps: the yield delivers every message").isZero();
        final int probes = sharingTheCore(strategy, 4 * windows * PollerIdleStrategy.WINDOW, maxSpin);
        assertThat(probes).as("probes in " + 4 * windows + " windows").isEqualTo(4);

        // The peer moves to a core of its own (answers 2 us into every idle period, while this poller yields without
        // giving its core away): spinning resumes, a full spin before the yield and the sleep again.
        pingPong(strategy, (windows + 1) * PollerIdleStrategy.WINDOW, 2);
        final int spun = idleUntilSleep(strategy);
        assertThat(spun).as("idle microseconds before sleeping: spin and yield")
            .isEqualTo((int)TimeUnit.NANOSECONDS.toMicros(config.adaptiveMinSpinNanos() + config.adaptiveYieldNanos()));
        // And the backoff starts over: sharing the core again, the first probes come a window or two apart (the
        // period right after that sleep spins for the max as well, to wait out the peer's wake-up: not counted).
        pingPong(strategy, 1, 2);
        assertThat(sharingTheCore(strategy, 4 * PollerIdleStrategy.WINDOW, maxSpin)).as("probes in 4 windows")
            .isEqualTo(2);
    }

    @Test
    void shouldSpinAgainAtOnceWhenThePeerAnswersBetweenYieldsThatKeptTheCore()
    {
        final EngineConfig config = new EngineConfig();
        final PollerIdleStrategy strategy = strategy(config);
        final int maxSpin = (int)TimeUnit.NANOSECONDS.toMicros(config.adaptiveMaxSpinNanos());
        sharingTheCore(strategy, 2 * PollerIdleStrategy.MAX_PROBE_WINDOWS * PollerIdleStrategy.WINDOW, maxSpin);
        final int yieldOnly = (int)TimeUnit.NANOSECONDS.toMicros(config.adaptiveYieldNanos());
        assertThat(idleUntilSleep(strategy)).as("not spinning: idle microseconds before sleeping").isEqualTo(yieldOnly);
        strategy.idle(1);
        idleUntilSleep(strategy);
        strategy.idle(1); // the after-wake period, spun for the max
        idleFor(strategy, 1);
        strategy.idle(1);
        // The peer now answers from another core: caught in the yield phase, 1 us in, the yields having run nothing
        // else. No probe is due for another MAX_PROBE_WINDOWS windows, yet the next period spins.
        idleFor(strategy, 1);
        strategy.idle(1);
        assertThat(idleUntilSleep(strategy)).as("idle microseconds before sleeping: spin and yield")
            .isEqualTo((int)TimeUnit.NANOSECONDS.toMicros(config.adaptiveMinSpinNanos()) + yieldOnly);
        // While the peer shares the core (each yield runs it, 5 us), a message caught after a yield does not.
        sharingTheCore(strategy, 2 * PollerIdleStrategy.WINDOW, maxSpin);
        assertThat(idleUntilSleep(strategy)).as("sharing the core again: not spinning").isEqualTo(yieldOnly);
    }

    /**
     * {@code periods} idle periods whose message comes with the poller's first yield (a peer queued behind it on
     * its core).
     *
     * @return the periods that spun for the max budget before yielding (probes)
     */
    private int sharingTheCore(final PollerIdleStrategy strategy, final int periods, final int maxSpinMicros)
    {
        int probes = 0;
        yieldTakesNanos = 5_000; // the peer's turn
        for (int period = 0; period < periods; period++)
        {
            strategy.idle(1);
            final int spun = idleUntilMoved(strategy, () -> yields, "the poller never yielded");
            if (spun >= maxSpinMicros)
            {
                probes++;
            }
        }
        yieldTakesNanos = 0;
        strategy.idle(1);
        return probes;
    }

    @Test
    void shouldStartAfreshWhenTheRepollAfterArmingFindsWork()
    {
        final PollerIdleStrategy strategy = strategy(new EngineConfig());
        pingPong(strategy, 100, 2);
        sleepFindsWork = true;
        final int first = idleUntilSleep(strategy);
        sleepFindsWork = false;
        // The re-poll found work: as after a duty cycle with work, a full spin comes before the next sleep.
        assertThat(idleUntilSleep(strategy)).isEqualTo(first);
    }

    @Test
    void shouldNeverSleepWhenBusyAndSleepAtEveryEmptyCycleWhenEvent()
    {
        final PollerIdleStrategy busy = strategy(new EngineConfig().pollingMode(PollingMode.BUSY));
        idleFor(busy, 10_000);
        assertThat(sleeps).isZero();
        final PollerIdleStrategy event = strategy(new EngineConfig().pollingMode(PollingMode.EVENT));
        idleFor(event, 100);
        event.idle(3);
        assertThat(sleeps).isEqualTo(100);
    }

    private PollerIdleStrategy strategy(final EngineConfig config)
    {
        final PollerIdleStrategy strategy = new PollerIdleStrategy(() ->
        {
            sleeps++;
            return sleepFindsWork;
        }, () ->
        {
            yields++;
            clock.now += yieldTakesNanos;
        }, config, clock);
        strategy.reset();
        return strategy;
    }

    /** {@code rounds} completions, each after {@code gapMicros} of empty duty cycles. */
    private void pingPong(final PollerIdleStrategy strategy, final int rounds, final int gapMicros)
    {
        for (int i = 0; i < rounds; i++)
        {
            idleFor(strategy, gapMicros);
            strategy.idle(1);
        }
    }

    private void idleFor(final PollerIdleStrategy strategy, final int micros)
    {
        for (int i = 0; i < micros; i++)
        {
            clock.now += 1_000;
            strategy.idle(0);
        }
    }

    /** @return empty duty cycles, one per microsecond, until the one that slept (included) */
    private int idleUntilSleep(final PollerIdleStrategy strategy)
    {
        return idleUntilMoved(strategy, () -> sleeps, "the poller never slept");
    }

    /**
     * @param counter the count to watch ({@link #sleeps} or {@link #yields}).
     * @param never   the failure's description if it does not move within a million cycles.
     * @return empty duty cycles, one per microsecond, until the one that moved {@code counter} (included)
     */
    private int idleUntilMoved(final PollerIdleStrategy strategy, final IntSupplier counter, final String never)
    {
        final int before = counter.getAsInt();
        int cycles = 0;
        while (counter.getAsInt() == before)
        {
            clock.now += 1_000;
            strategy.idle(0);
            cycles++;
            assertThat(cycles).as(never).isLessThan(1_000_000);
        }
        return cycles;
    }

    private static final class FakeClock implements NanoClock
    {
        long now = 1_000_000_000L;

        @Override
        public long nanoTime()
        {
            return now;
        }
    }
}
