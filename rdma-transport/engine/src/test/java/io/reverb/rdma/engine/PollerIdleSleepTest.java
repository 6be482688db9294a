package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.common.WriteClaim;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An idle poller sleeps without a time limit (no tick), so whoever gives a connection a deadline must wake it, and
 * the deadline must keep its sleeps timed until it is settled; an idle engine's watchdog parks, and still sees a stall
 * that begins once a poller wakes. Each test would hang (and time out) on a missed wake-up: they count and latch.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PollerIdleSleepTest
{
    /** Blocks the server's poller in its handler until released: it never answers a CLOSE meanwhile. */
    private final CountDownLatch entered = new CountDownLatch(1);
    private final CountDownLatch release = new CountDownLatch(1);
    private final AtomicInteger handled = new AtomicInteger();
    private final MessageHandler blockWhenAsked = (buffer, offset, length) ->
    {
        if (buffer.getInt(offset) == 1)
        {
            entered.countDown();
            try
            {
                release.await();
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }
        handled.incrementAndGet();
    };

    @Test
    void shouldWakeAPollerAsleepWithoutTimeLimitToWatchAGracefulClose() throws Exception
    {
        // The close cannot finish gracefully (the peer's poller is held), so only the close deadline ends it: the
        // poller must be woken by closeAsync, then sleep with a time limit until the deadline has passed.
        // A second: time enough for the woken poller to reach a timed sleep before the deadline on a loaded machine.
        final EngineConfig client = config(PollingMode.ADAPTIVE).closeTimeoutNanos(TimeUnit.SECONDS.toNanos(1));
        try (EnginePair pair = new EnginePair(config(PollingMode.ADAPTIVE), client, blockWhenAsked))
        {
            send(pair.client, 0);
            await("first message handled", () -> handled.get() == 1);
            send(pair.client, 1);
            assertThat(entered.await(60, TimeUnit.SECONDS)).as("the server's handler holds its poller").isTrue();
            final Poller poller = pair.clientEngine.poller(0);
            await(() -> "client poller asleep without a time limit (untimed " + poller.untimedSleeps() + ", timed " +
                poller.timedSleeps() + ")", poller::isAsleepUntimed);
            final long timedBefore = poller.timedSleeps();

            final CompletableFuture<Void> closed = pair.client.closeAsync();

            assertThatThrownBy(() -> closed.get(60, TimeUnit.SECONDS))
                .as("the close deadline was seen: the close failed rather than hung")
                .isInstanceOf(ExecutionException.class)
                .hasMessageContaining("graceful close");
            assertThat(poller.timedSleeps()).as("slept with a time limit while closing").isGreaterThan(timedBefore);
            release.countDown();
        }
        finally
        {
            release.countDown();
        }
    }

    @Test
    void shouldSleepWithoutTimeLimitOnceNoDeadlineIsLeft() throws Exception
    {
        try (EnginePair pair = new EnginePair(config(PollingMode.EVENT), config(PollingMode.EVENT), blockWhenAsked))
        {
            send(pair.client, 0);
            await("message handled", () -> handled.get() == 1);
            final Poller server = pair.serverEngine.poller(0);
            final Poller client = pair.clientEngine.poller(0);
            await("server poller asleep without a time limit", server::isAsleepUntimed);
            await("client poller asleep without a time limit", client::isAsleepUntimed);
            assertThat(((EngineConnection)pair.server).state()).isEqualTo(EngineConnection.STATE_CONNECTED);
            assertThat(((EngineConnection)pair.server).hasDeadline()).isFalse();
            assertQuiescent(pair.client, pair.server);
        }
    }

    @Test
    void shouldParkTheWatchdogWhilePollersSleepAndStillSeeAStallOnceOneWakes() throws Exception
    {
        // Far above what a loaded machine's scheduler or a young GC stalls a duty cycle for: only the handler's block
        // may count (it holds until the stall is seen, so a long threshold only makes the test wait longer).
        final EngineConfig server = config(PollingMode.ADAPTIVE).pollerStallThresholdNanos(TimeUnit.MILLISECONDS.toNanos(250));
        try (EnginePair pair = new EnginePair(server, config(PollingMode.ADAPTIVE), blockWhenAsked))
        {
            send(pair.client, 0);
            await("first message handled", () -> handled.get() == 1);
            final PollerWatchdog watchdog = pair.serverEngine.watchdog();
            await(() -> "the idle engine's watchdog parks (" + watchdog.dormancies() + " times)",
                () -> watchdog.dormancies() > 0 && pair.serverEngine.poller(0).isAsleep());
            assertThat(pair.serverEngine.pollerStalls()).isZero();

            send(pair.client, 1); // wakes the poller, which wakes the watchdog, then blocks in the handler
            assertThat(entered.await(60, TimeUnit.SECONDS)).isTrue();
            await("the stall seen by a watchdog that had parked", () -> pair.serverEngine.pollerStalls() == 1);
            release.countDown();
            await("second message handled", () -> handled.get() == 2);
            assertQuiescent(pair.client, pair.server);
        }
        finally
        {
            release.countDown();
        }
    }

    private static void send(final Connection connection, final int value)
    {
        final WriteClaim claim = new WriteClaim();
        assertThat(connection.tryClaim(4, claim)).isEqualTo(Connection.OK);
        claimed(claim).putInt(claim.offset(), value);
        claim.commit();
    }
}
