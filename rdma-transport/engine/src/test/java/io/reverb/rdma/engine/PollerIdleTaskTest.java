package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.common.WriteClaim;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * {@link EngineConfig#idleTask(BooleanSupplier)}: run by the engine's own poller threads once they find no work, at
 * once while a rendezvous they granted waits for its data ({@link EngineConfig#idleTaskDelayNanos(long)}), and kept
 * by {@link EngineConfig#copy()}.
 */
class PollerIdleTaskTest
{
    @Test
    void shouldRunTheIdleTaskOnThePollerThreadsOfAnIdleEngine() throws Exception
    {
        final AtomicInteger runs = new AtomicInteger();
        final Set<String> threads = ConcurrentHashMap.newKeySet();
        final BooleanSupplier task = () ->
        {
            threads.add(Thread.currentThread().getName());
            runs.incrementAndGet();
            return false;
        };
        final EngineConfig server = config(PollingMode.ADAPTIVE).idleTask(task); // EnginePair names it "server"
        try (EnginePair pair = new EnginePair(server, config(PollingMode.ADAPTIVE), (buffer, offset, length) -> { }))
        {
            await("the idle task ran", () -> runs.get() > 0);
            assertThat(threads).allSatisfy(name -> assertThat(name).startsWith("server-poller-"));
            assertQuiescent(pair.client, pair.server);
        }
    }

    /**
     * A task that found nothing to do is not run again until its poller has work: a spinning (BUSY) poller of an idle
     * engine ran it, and read the clock for it, in every empty duty cycle once the delay had passed. Counted, not
     * timed: over 10,000 empty duty cycles of an idle pair, a handful of runs (one per burst of work, the connection's
     * setup), where there was about one per cycle.
     */
    @Test
    void shouldNotRunATaskThatFoundNothingAgainBeforeThePollerHasWork() throws Exception
    {
        final AtomicInteger runs = new AtomicInteger();
        final EngineConfig server = config(PollingMode.BUSY).idleTask(() ->
        {
            runs.incrementAndGet();
            return false;
        });
        try (EnginePair pair = new EnginePair(server, config(PollingMode.BUSY), (buffer, offset, length) -> { }))
        {
            await("the idle task ran", () -> runs.get() > 0);
            final long empty = pair.serverEngine.pollerEmptyPolls(0);
            await("10,000 more empty duty cycles", () -> pair.serverEngine.pollerEmptyPolls(0) - empty >= 10_000);
            assertThat(runs.get()).as("runs of a task that finds nothing, over 10,000+ empty duty cycles").isLessThan(100);
            assertQuiescent(pair.client, pair.server);
        }
    }

    /**
     * With a delay no test outlives, the task runs only while the server awaits the data of a rendezvous it granted:
     * the client's large message is announced at its claim and held unwritten, so the server's poller finds no work
     * while it waits. Counted, not timed: never before the grant, at least once while it is open, never after the
     * data came (more small messages then change nothing).
     */
    @Test
    void shouldRunTheIdleTaskAtOnceWhileAGrantedRendezvousAwaitsItsData() throws Exception
    {
        final int large = 300_000;
        final int small = 64;
        final AtomicInteger runs = new AtomicInteger();
        final EngineConfig server = config(EngineFabric.TCP, PollingMode.ADAPTIVE).announceAtClaim(true)
            .idleTaskDelayNanos(TimeUnit.HOURS.toNanos(1))
            .idleTask(() ->
            {
                runs.incrementAndGet();
                return false;
            });
        final EngineConfig client = config(EngineFabric.TCP, PollingMode.ADAPTIVE).announceAtClaim(true);
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = new EnginePair(EngineFabric.TCP, server, client, recorder))
        {
            final WriteClaim claim = new WriteClaim();
            long seed = 0;
            for (int i = 0; i < 50; i++)
            {
                send(pair.client, claim, small, seed++);
            }
            await("small messages delivered", () -> recorder.count.get() == 50);
            assertThat(runs.get()).as("runs with nothing granted").isZero();

            assertThat(pair.client.tryClaim(large, claim)).isEqualTo(Connection.OK);
            assertThat(isRendezvous(claim)).isTrue();
            await("granted", () -> pair.server.pendingRendezvous() == 1 && pair.server.queuedRendezvousRequests() == 0);
            await("the idle task ran while the data was awaited", () -> runs.get() > 0);
            fill(claimed(claim), claim.offset(), large, seed++);
            claim.commit();
            await("large message delivered", () -> recorder.count.get() == 51);
            final int afterData = runs.get();

            for (int i = 0; i < 50; i++)
            {
                send(pair.client, claim, small, seed++);
            }
            await("more small messages delivered", () -> recorder.count.get() == 101);
            assertThat(runs.get()).as("runs after the data came").isEqualTo(afterData);
            assertThat(recorder.messages).allSatisfy(m -> assertThat(m[1]).as("intact").isEqualTo(1));
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.errors()).isEmpty();
        }
    }

    /**
     * While a granted rendezvous awaits its data, the task runs until it has nothing left within one duty cycle, at
     * most {@link Poller#MAX_IDLE_RUNS_AWAITING_DATA} times: what it prepares is needed when the data lands, and
     * between duty cycles the polling mode may yield or park. Counted by the duty cycle each run sees (the poller's
     * cycle counter, read on the poller thread): a task with 20 runs of work takes the cap in the first cycle, the
     * remaining 4 and the run that finds nothing in the second (one run per cycle before: groups of one).
     */
    @Test
    void shouldRunTheIdleTaskUntilItHasNothingLeftInOneDutyCycleWhileAGrantedRendezvousAwaitsItsData() throws Exception
    {
        final int large = 300_000;
        final int work = 20;
        final AtomicInteger runs = new AtomicInteger();
        final AtomicReference<RdmaEngine> serverEngine = new AtomicReference<>();
        final List<Long> cycleOfRun = new CopyOnWriteArrayList<>();
        final EngineConfig server = config(EngineFabric.TCP, PollingMode.ADAPTIVE).announceAtClaim(true)
            .idleTaskDelayNanos(TimeUnit.HOURS.toNanos(1))
            .idleTask(() ->
            {
                cycleOfRun.add(serverEngine.get().pollerPolls(0)); // one poller (the default): the engine's only one
                return runs.incrementAndGet() <= work;
            });
        final EngineConfig client = config(EngineFabric.TCP, PollingMode.ADAPTIVE).announceAtClaim(true);
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = new EnginePair(EngineFabric.TCP, server, client, recorder))
        {
            serverEngine.set(pair.serverEngine);
            assertThat(pair.serverEngine.pollerCount()).isEqualTo(1);
            final WriteClaim claim = new WriteClaim();
            assertThat(pair.client.tryClaim(large, claim)).isEqualTo(Connection.OK);
            assertThat(isRendezvous(claim)).isTrue();
            await("granted", () -> pair.server.pendingRendezvous() == 1 && pair.server.queuedRendezvousRequests() == 0);
            await("the task ran out of work", () -> runs.get() >= work + 1);
            fill(claimed(claim), claim.offset(), large, 0);
            claim.commit();
            await("large message delivered", () -> recorder.count.get() == 1);

            final List<Long> cycles = List.copyOf(cycleOfRun);
            final long first = cycles.get(0);
            final long second = cycles.get(Poller.MAX_IDLE_RUNS_AWAITING_DATA);
            assertThat(cycles.subList(0, Poller.MAX_IDLE_RUNS_AWAITING_DATA)).as("the cap, in the first cycle")
                .containsOnly(first);
            assertThat(second).isGreaterThan(first);
            assertThat(cycles.subList(Poller.MAX_IDLE_RUNS_AWAITING_DATA, work + 1))
                .as("the rest of its work and the run that found none, in the next cycle").containsOnly(second);
            assertThat(recorder.messages).allSatisfy(m -> assertThat(m[1]).as("intact").isEqualTo(1));
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldKeepTheIdleTaskInACopy()
    {
        final BooleanSupplier task = () -> false;
        assertThat(new EngineConfig().idleTask(task).copy().idleTask()).isSameAs(task);
        assertThat(new EngineConfig().idleTask()).isNull();
        assertThat(new EngineConfig().idleTaskDelayNanos()).isEqualTo(TimeUnit.MICROSECONDS.toNanos(10));
        assertThat(new EngineConfig().idleTaskDelayNanos(123).copy().idleTaskDelayNanos()).isEqualTo(123);
        assertThatThrownBy(() -> new EngineConfig().idleTaskDelayNanos(-1).conclude())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("idleTaskDelayNanos");
    }
}
