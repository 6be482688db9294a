package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.assertQuiescent;
import static io.reverb.rdma.engine.EngineTestSupport.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.WriteClaim;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.DirectBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Over shm:// a SEND is complete when postSend returns ({@code QueuePair.completesAtPost()}): the engine posts its
 * message SENDs unsignaled and gives their ring space back at once, so a ping-pong puts nothing on the send CQ (before,
 * every SEND that emptied the ring, i.e. every one of a ping-pong, asked for a completion the poller then reaped).
 * Counted, not timed; the ring and the credits still come back whole.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmEngineCompletesAtPostTest
{
    @Test
    void shouldSendAPingPongWithoutOneSendCompletionAndGiveEveryByteOfTheRingBack() throws Exception
    {
        final AtomicInteger received = new AtomicInteger();
        final MessageHandler counter = new MessageHandler()
        {
            @Override
            public void onMessage(final DirectBuffer buffer, final int offset, final int length)
            {
                received.incrementAndGet();
            }
        };
        try (EnginePair pair = new EnginePair(EngineFabric.SHM, EngineTestSupport.config(EngineFabric.SHM,
            PollingMode.ADAPTIVE), EngineTestSupport.config(EngineFabric.SHM, PollingMode.ADAPTIVE), counter))
        {
            final WriteClaim claim = new WriteClaim();
            final int messages = 300;
            final long completionsBefore = pair.client.stats().sendCompletions();
            final long postedBefore = pair.client.stats().sendsPosted();
            for (int i = 0; i < messages; i++)
            {
                assertThat(pair.client.tryClaim(64, claim)).isEqualTo(Connection.OK);
                claim.buffer().putLong(claim.offset(), i);
                claim.commit();
                final int expected = i + 1;
                await("message " + i + " delivered", () -> received.get() == expected); // one in flight at a time
            }
            assertQuiescent(pair.client, pair.server);
            final ConnectionStats stats = pair.client.stats();
            assertThat(stats.sendsPosted() - postedBefore).as("SENDs posted").isGreaterThanOrEqualTo(messages);
            assertThat(stats.sendCompletions() - completionsBefore).as("send completions reaped for them").isZero();
            assertThat(pair.client.sendBytesInFlight()).as("ring bytes not given back").isZero();
        }
    }
}
