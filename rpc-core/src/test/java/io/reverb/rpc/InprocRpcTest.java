package io.reverb.rpc;

import com.google.protobuf.Int32Value;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.transport.inproc.InprocTransportProvider;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * The call suite over {@code inproc://}.
 */
class InprocRpcTest extends AbstractRpcTransportTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newServerUri()
    {
        return "inproc://rpc-test-" + IDS.incrementAndGet();
    }

    @Override
    protected boolean killServerConnections(final String serverUri)
    {
        return InprocTransportProvider.killConnections(serverUri.substring("inproc://".length())) > 0;
    }

    @Test
    void shouldExpireDeadlineOnInjectedVirtualTime() throws Exception
    {
        final VirtualTimeScheduler time = VirtualTimeScheduler.create();
        // keep-alive off: a jump of an hour of virtual time would run a PING's timeout right after the PING, before
        // the server (on real threads) could answer it, and end the call UNAVAILABLE instead
        final RpcChannel c = newChannel(serverUri, b -> b.timerScheduler(time).keepAlive(Duration.ZERO, Duration.ofSeconds(10)));
        StepVerifier.create(ClientCalls.serverStreaming(c, TestService.NEVER,
                CallOptions.DEFAULT.withDeadlineAfter(Duration.ofHours(1)), Int32Value.of(1)))
            .then(() -> awaitCallsStartedUnchecked(1))
            .then(() -> time.advanceTimeBy(Duration.ofHours(1)))
            .expectErrorSatisfies(t -> Assertions.assertThat(((RpcException)t).status().code())
                .isEqualTo(StatusCode.DEADLINE_EXCEEDED))
            .verify(TIMEOUT);
        // the client's CANCEL carries the reason: the server's handler is cancelled long before its own hour is up
        Assertions.assertThat(service.cancelled.await(TIMEOUT.toSeconds(),
            TimeUnit.SECONDS)).isTrue();
    }

    private void awaitCallsStartedUnchecked(final int n)
    {
        try
        {
            awaitCallsStarted(n);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    protected boolean freezeServer(final String serverUri, final boolean frozen)
    {
        InprocTransportProvider.freezeServer(serverUri.substring("inproc://".length()), frozen);
        return true;
    }
}
