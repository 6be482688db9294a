package io.reverb.rdma.provider.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.engine.Connection;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.EngineListener;
import io.reverb.rdma.engine.MessageClaim;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.verbs.VerbsConfig;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The connection engine, opened by scheme, over {@code tcp://127.0.0.1:0}: eager and rendezvous
 * messages (0 B .. 3 MB, across the eager limit) arrive in order with their content, and afterwards
 * every pooled buffer and credit is back on both sides. RNR retries are off, so a credit violation
 * would surface at once as an RNR error instead of being hidden by a retry.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpEngineTest
{
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(30);

    @ParameterizedTest
    @EnumSource(value = PollingMode.class, names = {"ADAPTIVE", "EVENT"})
    void shouldDeliverEagerAndRendezvousMessagesAndGetEveryBufferBack(final PollingMode mode) throws Exception
    {
        try (RdmaEngine server = RdmaEngine.open("tcp", config(mode).name("tcp-server"));
            RdmaEngine client = RdmaEngine.open("tcp", config(mode).name("tcp-client")))
        {
            final BlockingQueue<byte[]> received = new ArrayBlockingQueue<>(100);
            final AtomicReference<Connection> serverSide = new AtomicReference<>();
            final EngineListener listener = server.listen("127.0.0.1:0", c ->
            {
                c.setHandler((buffer, offset, length) ->
                {
                    final byte[] bytes = new byte[length];
                    buffer.getBytes(offset, bytes);
                    received.add(bytes);
                });
                serverSide.set(c);
            });
            assertThat(listener.address()).startsWith("127.0.0.1:").doesNotEndWith(":0");
            final Connection connection = client.connect(listener.address());
            connection.setHandler((buffer, offset, length) -> { });
            await("accepted", () -> serverSide.get() != null);

            final MessageClaim claim = new MessageClaim();
            final int[] sizes = {0, 1, 100, 1023, 1024, 1025, 100_000, 3_000_000, 7, 1024};
            for (int i = 0; i < sizes.length; i++)
            {
                send(connection, claim, sizes[i], i);
            }
            for (int i = 0; i < sizes.length; i++)
            {
                final byte[] bytes = received.poll(30, TimeUnit.SECONDS);
                assertThat(bytes).as("message " + i).isNotNull();
                assertThat(bytes).as("message " + i).hasSize(sizes[i]);
                assertThat(check(new UnsafeBuffer(bytes), bytes.length, i)).as("content of message " + i).isTrue();
            }
            // 0, 1, 100 are certainly eager and 1025, 100_000, 3_000_000 certainly rendezvous.
            assertThat(connection.stats().eagerMessagesSent()).isGreaterThanOrEqualTo(3);
            assertThat(connection.stats().rendezvousMessagesSent()).isGreaterThanOrEqualTo(3);

            final Connection accepted = serverSide.get();
            await("credits and buffers back", () ->
                connection.poolBuffersInUse() == 0 && accepted.poolBuffersInUse() == 0 &&
                connection.pendingRendezvous() == 0 && accepted.pendingRendezvous() == 0 &&
                connection.creditsAvailable() + accepted.creditsOwed() == accepted.receiveSlots() &&
                accepted.creditsAvailable() + connection.creditsOwed() == connection.receiveSlots());
            assertThat(connection.stats().rnrErrors()).isZero();
            assertThat(accepted.stats().rnrErrors()).isZero();

            connection.close();
            await("server side closed", accepted::isClosed);
            assertThat(connection.isClosed()).isTrue();
        }
    }

    private static EngineConfig config(final PollingMode mode)
    {
        return new EngineConfig()
            .verbsConfig(VerbsConfig.defaults().withRnrRetryNanos(0).withConnectTimeoutNanos(TimeUnit.SECONDS.toNanos(20)))
            .pollingMode(mode)
            .receiveSlots(16)
            .sendSlots(16)
            .eagerLimit(1024)
            .maxInboundMessageSize(8 * 1024 * 1024)
            .maxOutboundMessageSize(8 * 1024 * 1024)
            .rendezvousPoolBytes(32L * 1024 * 1024)
            .closeTimeoutNanos(TimeUnit.SECONDS.toNanos(20));
    }

    private static void send(final Connection connection, final MessageClaim claim, final int length, final long seed)
    {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (true)
        {
            final int rc = connection.tryClaim(length, claim);
            if (rc == Connection.OK)
            {
                fill(claim.buffer(), claim.offset(), length, seed);
                claim.commit();
                return;
            }
            assertThat(Connection.resultName(rc)).as("tryClaim(" + length + ")").isEqualTo("BACK_PRESSURED");
            assertThat(System.nanoTime() - deadline).as("back-pressured too long sending " + length).isNegative();
            Thread.yield();
        }
    }

    private static void await(final String what, final BooleanSupplier condition) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (!condition.getAsBoolean())
        {
            assertThat(System.nanoTime() - deadline).as("timed out waiting for: " + what).isNegative();
            Thread.sleep(1);
        }
    }

    private static void fill(final MutableDirectBuffer buffer, final int offset, final int length, final long seed)
    {
        for (int i = 0; i < length; i++)
        {
            buffer.putByte(offset + i, pattern(seed, i));
        }
    }

    private static boolean check(final UnsafeBuffer buffer, final int length, final long seed)
    {
        for (int i = 0; i < length; i++)
        {
            if (buffer.getByte(i) != pattern(seed, i))
            {
                return false;
            }
        }
        return true;
    }

    private static byte pattern(final long seed, final int i)
    {
        long z = seed * 0x9E3779B97F4A7C15L + i;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        return (byte)(z ^ (z >>> 31));
    }
}
