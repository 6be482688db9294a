package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.assertQuiescent;
import static io.reverb.rdma.engine.EngineTestSupport.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.WriteClaim;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.agrona.DirectBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a handler sends while the poller delivers a connection's receives leaves at the end of that delivery, together
 * (as a read loop flushes once): twenty requests that arrive in one poll are answered in a few SENDs, not twenty.
 * Counted, not timed; every reply arrives, in order, and the ring and credits come back whole.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EngineReplyCoalescingTest
{
    @Test
    void shouldAnswerRequestsThatArriveTogetherInFewSendsOverShm() throws Exception
    {
        answerRequestsThatArriveTogether(EngineFabric.SHM);
    }

    @Test
    void shouldAnswerRequestsThatArriveTogetherInFewSendsOverTcp() throws Exception
    {
        answerRequestsThatArriveTogether(EngineFabric.TCP);
    }

    private static void answerRequestsThatArriveTogether(final EngineFabric fabric) throws Exception
    {
        final AtomicInteger refused = new AtomicInteger();
        final AtomicReference<Connection> serverSide = new AtomicReference<>();
        final AtomicInteger replies = new AtomicInteger();
        final AtomicInteger outOfOrder = new AtomicInteger();
        final MessageHandler clientHandler = new MessageHandler()
        {
            private long next;

            @Override
            public void onMessage(final DirectBuffer buffer, final int offset, final int length)
            {
                if (buffer.getLong(offset) != next++)
                {
                    outOfOrder.incrementAndGet();
                }
                replies.incrementAndGet();
            }
        };
        try (EnginePair pair = new EnginePair(fabric, EngineTestSupport.config(fabric, PollingMode.ADAPTIVE),
            EngineTestSupport.config(fabric, PollingMode.ADAPTIVE), c ->
            {
                serverSide.set(c);
                c.setHandler(new Echo(c, refused));
            }))
        {
            pair.client.setHandler(clientHandler);
            final WriteClaim claim = new WriteClaim();
            final int requests = 20;
            final Connection server = serverSide.get();
            server.pauseReceiving(true); // the requests pile up, then arrive in one poll
            for (int i = 0; i < requests; i++)
            {
                assertThat(pair.client.tryClaim(64, claim)).isEqualTo(Connection.OK);
                claim.buffer().putLong(claim.offset(), i);
                claim.commit();
            }
            final long sendsBefore = server.stats().sendsPosted();
            server.pauseReceiving(false);
            await("every reply", () -> replies.get() == requests);
            assertThat(outOfOrder.get()).as("replies out of order").isZero();
            assertThat(refused.get()).as("replies the server could not claim").isZero();
            assertQuiescent(pair.client, server);
            // one SEND for the replies (two if a credit return or the ring's end splits them), not one per reply
            assertThat(server.stats().sendsPosted() - sendsBefore).as("SENDs for %d replies", requests)
                .isLessThanOrEqualTo(4);
        }
    }

    /** Replies to each message with its first 8 bytes, from onMessage (the poller thread). */
    private static final class Echo implements MessageHandler
    {
        private final Connection connection;
        private final WriteClaim claim = new WriteClaim();
        private final AtomicInteger refused;

        Echo(final Connection connection, final AtomicInteger refused)
        {
            this.connection = connection;
            this.refused = refused;
        }

        @Override
        public void onMessage(final DirectBuffer buffer, final int offset, final int length)
        {
            if (connection.tryClaim(8, claim) != Connection.OK)
            {
                refused.incrementAndGet();
                return;
            }
            claim.buffer().putLong(claim.offset(), buffer.getLong(offset));
            claim.commit();
        }
    }
}
