package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.TIMEOUT_MS;
import static io.reverb.rdma.engine.EngineTestSupport.await;
import static io.reverb.rdma.engine.EngineTestSupport.config;
import static io.reverb.rdma.engine.EngineTestSupport.send;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.WriteClaim;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Connections that share a poller take turns: one that received a burst delivers at most
 * {@link EngineConfig#messagesPerPoll(int)} messages per duty cycle, then the others get theirs (the compression
 * flood of the security issue: a thousand small STATUS frames in a few receives held a victim's response for
 * milliseconds). Counted, not timed: two connections' bursts are piled up while the poller is held in a third
 * connection's handler (over shm, where a posted SEND is in the receiver's ring), and the order of delivery
 * afterwards must never run more than the budget from one connection while the other has messages waiting.
 */
class PollerFairnessTest
{
    /** Within the credits a new connection starts with (its window grows as its receives come back). */
    private static final int BURST = 12;
    private static final int PER_POLL = 3;

    @Test
    void aBurstOnOneConnectionIsDeliveredInTurnsWithTheOthers() throws Exception
    {
        final CountDownLatch holding = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final List<Character> order = new ArrayList<>(); // the server's poller thread only, read after it is done
        final AtomicInteger delivered = new AtomicInteger();
        final AtomicInteger accepted = new AtomicInteger();
        final EngineConfig serverConfig = config(PollingMode.ADAPTIVE).messagesPerPoll(PER_POLL);
        try (EnginePair pair = new EnginePair(serverConfig, config(PollingMode.ADAPTIVE), c ->
        {
            final int index = accepted.getAndIncrement();
            if (index == 0)
            {
                c.setHandler((buffer, offset, length) ->
                {
                    holding.countDown();
                    await("released", () -> release.getCount() == 0);
                });
            }
            else
            {
                final char name = index == 1 ? 'A' : 'B';
                c.setHandler((buffer, offset, length) ->
                {
                    order.add(name);
                    delivered.incrementAndGet();
                });
            }
        }))
        {
            final Connection a = pair.clientEngine.connect(pair.listener.address());
            await("A accepted", () -> accepted.get() == 2);
            final Connection b = pair.clientEngine.connect(pair.listener.address());
            await("B accepted", () -> accepted.get() == 3);
            final WriteClaim claim = new WriteClaim();

            send(pair.client, claim, 64, 0); // the server's poller stops in this message's handler
            assertThat(holding.await(TIMEOUT_MS, TimeUnit.MILLISECONDS)).as("the poller is held").isTrue();
            for (int i = 0; i < BURST; i++)
            {
                send(a, claim, 64, i);
                send(b, claim, 64, i);
            }
            // posted (counted after the post): over shm a SEND is placed in the receiver's ring by its post
            await("both bursts are in the server's receive queues",
                () -> a.stats().eagerMessagesSent() == BURST && b.stats().eagerMessagesSent() == BURST);
            release.countDown();
            await("every message delivered", () -> delivered.get() == 2 * BURST);

            int longest = 0;
            int run = 0;
            char previous = 0;
            for (int i = 0; i < order.size(); i++)
            {
                final char c = order.get(i);
                run = c == previous ? run + 1 : 1;
                previous = c;
                final int othersLeft = (int)order.subList(i + 1, order.size()).stream().filter(o -> o != c).count();
                if (othersLeft > 0)
                {
                    longest = Math.max(longest, run);
                }
            }
            assertThat(longest).as("longest run of one connection's messages while the other's waited, in %s", order)
                .isLessThanOrEqualTo(PER_POLL);
            assertThat(order.stream().filter(o -> o == 'A').count()).isEqualTo(BURST);
            assertThat(pair.errors()).isEmpty();
        }
    }
}
