package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.WriteClaim;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A handler that blocks the poller thread is reported, once per stall, and the engine keeps working. */
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
}
