package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.WriteClaim;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A handler that blocks the poller thread is reported, once per stall, and the engine keeps working; each report names
 * its cause (a blocking handler, a busy one, too few cores, or the JVM's garbage collection).
 */
class PollerWatchdogTest
{
    @Test
    void shouldReportADutyCycleThatOverrunsTheThresholdOncePerStall() throws Exception
    {
        final AtomicInteger handled = new AtomicInteger();
        final MessageHandler blocking = (buffer, offset, length) ->
        {
            try
            {
                Thread.sleep(buffer.getInt(offset)); // a handler that blocks its poller thread
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
            handled.incrementAndGet();
        };
        // A threshold far above what a loaded machine's scheduler or a young GC can stall a duty cycle for (a false
        // stall would break the exact count), and blocking sleeps four times longer still.
        final EngineConfig server = config(PollingMode.ADAPTIVE).pollerStallThresholdNanos(TimeUnit.MILLISECONDS.toNanos(250));
        try (EnginePair pair = new EnginePair(server, config(PollingMode.ADAPTIVE), blocking))
        {
            final WriteClaim claim = new WriteClaim();
            final int[] sleeps = {0, 1000, 0, 1000};
            for (int i = 0; i < sleeps.length; i++)
            {
                // One at a time: messages of one batch would be handled in one duty cycle.
                assertThat(pair.client.tryClaim(4, claim)).isEqualTo(Connection.OK);
                claimed(claim).putInt(claim.offset(), sleeps[i]);
                claim.commit();
                final int expected = i + 1;
                await("message " + i + " handled", () -> handled.get() == expected);
            }
            assertThat(pair.serverEngine.pollerStalls()).as("two stalls, each seen once").isEqualTo(2);
            assertThat(pair.clientEngine.pollerStalls()).isZero();
            assertQuiescent(pair.client, pair.server);
        }
    }

    @Test
    void shouldBlameGarbageCollectionNotAHandlerWhenItPausedMostOfTheStall()
    {
        final long ms = TimeUnit.MILLISECONDS.toNanos(1);
        // a 10 MiB message's array allocated on the poller started a 90 ms pause of a 105 ms duty cycle: the thread
        // ran little CPU (stopped), and is RUNNABLE again when the watchdog looks
        assertThat(PollerWatchdog.cause(Thread.State.RUNNABLE, 105 * ms, 10 * ms, 90 * ms))
            .startsWith("was stopped by garbage collection for 90 ms of that time")
            .contains("not a handler")
            .doesNotContain("oversubscribed");
        // the same while the poller still burns CPU after the pause: still the collector's
        assertThat(PollerWatchdog.cause(Thread.State.RUNNABLE, 105 * ms, 60 * ms, 60 * ms))
            .startsWith("was stopped by garbage collection for 60 ms");
    }

    @Test
    void shouldNameABlockingABusyAndAStarvedPollerWhenLittleOfTheStallWasCollection()
    {
        final long ms = TimeUnit.MILLISECONDS.toNanos(1);
        assertThat(PollerWatchdog.cause(Thread.State.TIMED_WAITING, 1000 * ms, 1 * ms, 5 * ms))
            .startsWith("is TIMED_WAITING: a handler is blocking the poller thread");
        assertThat(PollerWatchdog.cause(Thread.State.RUNNABLE, 300 * ms, 290 * ms, 0))
            .startsWith("is busy: a handler doing long work");
        assertThat(PollerWatchdog.cause(Thread.State.RUNNABLE, 300 * ms, 20 * ms, 0))
            .startsWith("is runnable but ran only 20 ms of that time:").contains("oversubscribed");
        // collection under half of it is named beside the starvation
        assertThat(PollerWatchdog.cause(Thread.State.RUNNABLE, 300 * ms, 20 * ms, 100 * ms))
            .startsWith("is runnable but ran only 20 ms of that time (garbage collection paused it for 100 ms):");
        // where the JVM measures no thread CPU time (-1), a runnable poller is called busy, as before
        assertThat(PollerWatchdog.cause(Thread.State.RUNNABLE, 300 * ms, -1, 0)).startsWith("is busy");
    }

    @Test
    void shouldCountTheCollectorsPausesButNotTheirConcurrentWork()
    {
        // G1 (JDK 20+ adds a concurrent-marking bean), ZGC and Shenandoah (cycles are concurrent, pauses are not),
        // and a collector that does not measure its time (-1)
        assertThat(PollerWatchdog.pauseMillis(List.of(collector("G1 Young Generation", 30),
            collector("G1 Old Generation", 7), collector("G1 Concurrent GC", 500)))).isEqualTo(37);
        assertThat(PollerWatchdog.pauseMillis(List.of(collector("ZGC Cycles", 800), collector("ZGC Pauses", 5))))
            .isEqualTo(5);
        assertThat(PollerWatchdog.pauseMillis(List.of(collector("Shenandoah Cycles", 900),
            collector("Shenandoah Pauses", 3), collector("PS Scavenge", -1)))).isEqualTo(3);
        // this JVM's own collectors: a count of milliseconds, never negative
        assertThat(PollerWatchdog.collectorPauseMillis()).isNotNegative();
    }

    /** A collector bean that reports a name and a time only. */
    private static GarbageCollectorMXBean collector(final String name, final long millis)
    {
        return (GarbageCollectorMXBean)Proxy.newProxyInstance(PollerWatchdogTest.class.getClassLoader(),
            new Class<?>[] {GarbageCollectorMXBean.class}, (proxy, method, args) ->
            {
                switch (method.getName())
                {
                    case "getName":
                        return name;
                    case "getCollectionTime":
                        return millis;
                    default:
                        throw new UnsupportedOperationException(method.getName());
                }
            });
    }
}
