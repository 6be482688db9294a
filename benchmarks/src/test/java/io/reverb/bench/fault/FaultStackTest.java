package io.reverb.bench.fault;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.BytesValue;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The suite's stacks over loopback tcp (no root needed): each serves the slow method, counts its handlers, and leaves
 * no registered buffer behind.
 */
class FaultStackTest
{
    @Test
    void shouldCarryTheCallIdAndTheClientsDeadline()
    {
        final BytesValue request = FaultStack.request(42, 0);
        assertThat(FaultStack.id(request)).isEqualTo(42);
        assertThat(FaultStack.clientDeadline(FaultStack.request(1, 1234))).isEqualTo(1234);
        assertThatThrownBy(() -> FaultStack.id(BytesValue.getDefaultInstance()))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("16 bytes, not 0");
        assertThat(FaultStack.parse("GRPC-Netty")).isEqualTo(FaultStack.GRPC_NETTY);
        assertThatThrownBy(() -> FaultStack.parse("okhttp")).isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @EnumSource(FaultStack.class)
    @Timeout(120)
    void shouldAnswerEveryCallAndLeaveNoBufferHeld(final FaultStack stack) throws Exception
    {
        final String uri = "tcp://127.0.0.1:" + freePort();
        final HandlerLedger ledger = new HandlerLedger();
        final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        final FaultStack.Server server = FaultStacks.startServer(stack, uri, Duration.ofMillis(5), ledger, timer);
        try (FaultStack.Client client = FaultStacks.connect(stack, uri,
            new FaultStacks.ClientSettings(Duration.ofSeconds(10), Duration.ofSeconds(5))))
        {
            final List<CompletableFuture<FaultStack.Outcome>> calls = new ArrayList<>();
            for (int i = 0; i < 50; i++)
            {
                calls.add(client.call(i, Duration.ofSeconds(30)));
            }
            for (final CompletableFuture<FaultStack.Outcome> call : calls)
            {
                assertThat(call.get(60, TimeUnit.SECONDS)).isEqualTo(FaultStack.Outcome.OK);
            }
        }
        finally
        {
            server.shutdown(Duration.ofSeconds(5));
            assertThat(server.awaitTermination(Duration.ofSeconds(30))).isTrue();
            timer.shutdownNow();
        }
        assertThat(ledger.describe())
            .isEqualTo("started=50 answered=50 cancelled=0 cancelled-unannounced=0 expiredAtStart=0 running=0");
        if (stack != FaultStack.GRPC_NETTY)
        {
            assertNoBuffersInUse(server);
        }
    }

    /**
     * The transport's buffers all come back: a connection's last ones may do so a moment after the server's
     * termination (its connections' closes end on their own threads), so this waits, bounded, before it asserts.
     */
    static void assertNoBuffersInUse(final FaultStack.Server server) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (server.buffersInUse() != 0 && System.nanoTime() - deadline < 0)
        {
            Thread.sleep(10);
        }
        assertThat(server.buffersInUse()).isZero();
    }

    @ParameterizedTest
    @EnumSource(FaultStack.class)
    @Timeout(120)
    void shouldEndACallPastItsDeadlineWithDeadlineExceeded(final FaultStack stack) throws Exception
    {
        final String uri = "tcp://127.0.0.1:" + freePort();
        final HandlerLedger ledger = new HandlerLedger();
        final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        final FaultStack.Server server = FaultStacks.startServer(stack, uri, Duration.ofSeconds(3), ledger, timer);
        try (FaultStack.Client client = FaultStacks.connect(stack, uri,
            new FaultStacks.ClientSettings(Duration.ofSeconds(10), Duration.ofSeconds(5))))
        {
            assertThat(client.call(1, Duration.ofMillis(300)).get(60, TimeUnit.SECONDS).code())
                .isEqualTo(PhaseStats.DEADLINE_EXCEEDED);
        }
        finally
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(Duration.ofSeconds(30))).isTrue();
            timer.shutdownNow();
        }
    }

    private static int freePort() throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0))
        {
            return socket.getLocalPort();
        }
    }
}
