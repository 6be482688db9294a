package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.WriteClaim;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.agrona.DirectBuffer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Many messages outstanding, and handlers that send from the poller thread (as an RPC server answers
 * and a closed-loop client issues its next call): the poller must never wait on a queue only it drains.
 * Counted, not timed: every message is answered and every credit comes back. Over each fabric
 * ({@link ShmEngineLoadTest}, {@link TcpEngineLoadTest}).
 */
abstract class AbstractEngineLoadTest
{
    /**
     * @return the fabric the suite runs over.
     */
    abstract EngineFabric fabric();

    /** The suite's configuration over {@link #fabric()} (hides the shm-only one of EngineTestSupport). */
    EngineConfig config(final PollingMode mode)
    {
        return EngineTestSupport.config(fabric(), mode);
    }

    /** Sends from a handler (poller thread): never spins; what does not fit waits for onWritable. */
    static final class Responder implements MessageHandler
    {
        final WriteClaim claim = new WriteClaim();
        final AtomicLong backlog = new AtomicLong();
        final AtomicInteger received = new AtomicInteger();
        final AtomicInteger failures = new AtomicInteger();
        /** Answers the first {@code answered} messages received. */
        final long answered;
        /** Every {@code in} messages received are answered by {@code out} messages. */
        final int in;
        final int out;
        volatile long workNanos;
        final AtomicLong sent = new AtomicLong();
        volatile Connection connection;
        private final Runnable drain = this::drain;

        Responder(final long answered, final int in, final int out)
        {
            this.answered = answered;
            this.in = in;
            this.out = out;
        }

        @Override
        public void onMessage(final DirectBuffer buffer, final int offset, final int length)
        {
            final int r = received.incrementAndGet();
            if (workNanos > 0)
            {
                // A slow consumer: its poller finds many completions per pass, each returning credits.
                final long until = System.nanoTime() + workNanos;
                while (System.nanoTime() - until < 0)
                {
                    Thread.onSpinWait();
                }
            }
            if (r <= answered && r % in == 0)
            {
                backlog.addAndGet(out);
                drain();
            }
        }

        synchronized void drain()
        {
            while (backlog.get() > 0)
            {
                final int rc = connection.tryClaim(64, claim);
                if (rc == Connection.BACK_PRESSURED)
                {
                    connection.onWritable(drain);
                    return;
                }
                if (rc != Connection.OK)
                {
                    failures.incrementAndGet();
                    return;
                }
                claimed(claim).putLong(claim.offset(), sent.get());
                claim.commit();
                sent.incrementAndGet();
                backlog.decrementAndGet();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(PollingMode.class)
    void shouldAnswerEveryMessageWhenHandlersSendFromThePollerWithManyOutstanding(final PollingMode mode)
        throws Exception
    {
        // A unary call is several messages (call, message, half-close) answered by one: the client's
        // poller sends three messages for each one it receives, more than one poll pass reaps.
        final int calls = 1024;
        final int total = 100_000;
        // Default geometry (128 receive slots), as an RPC server and client use it.
        final EngineConfig serverConfig = config(mode).receiveSlots(120).sendSlots(128).eagerLimit(4096);
        final EngineConfig clientConfig = config(mode).receiveSlots(128).sendSlots(128).eagerLimit(4096);
        final Responder echo = new Responder(Long.MAX_VALUE, 3, 1);
        final Responder loop = new Responder(total - calls, 1, 3);
        try (EnginePair pair = new EnginePair(fabric(), serverConfig, clientConfig, c ->
        {
            echo.connection = c;
            c.setHandler(echo);
        }))
        {
            loop.connection = pair.client;
            loop.workNanos = 2_000;
            pair.client.setHandler(loop);
            // The opening burst from this thread; every later message is sent by a handler on a poller.
            loop.backlog.addAndGet(3L * calls);
            loop.drain();
            await("every message answered", () -> loop.received.get() == total ||
                !pair.errors().isEmpty() || echo.failures.get() + loop.failures.get() > 0);
            assertThat(pair.errors()).isEmpty();
            assertThat(echo.failures.get() + loop.failures.get()).isZero();
            assertThat(echo.received.get()).isEqualTo(3 * total);
            assertThat(loop.received.get()).isEqualTo(total);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().failedSends()).isZero();
        }
    }
}
