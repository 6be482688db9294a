package io.reverb.rpc;

import com.google.protobuf.Int32Value;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.testing.Await;
import io.reverb.rpc.transport.inproc.InprocTransportProvider;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
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

    /**
     * A server handler that reduces its requests asks for all of them at once (REQUEST_N of Long.MAX_VALUE). When
     * the server then stops reading, the client asks its request publisher only for what the connection can take
     * (a window, and none while many frames wait unsent), instead of pulling the whole upload into frames it cannot
     * send; once the server reads again, every request arrives.
     */
    @Test
    void shouldPullAnUploadOnlyAsFastAsTheConnectionTakesIt() throws Exception
    {
        final int count = 1_000_000;
        final AtomicLong emitted = new AtomicLong();
        final String name = serverUri.substring("inproc://".length());
        final Flux<Int32Value> requests = Flux.range(0, count).doOnNext(v ->
        {
            emitted.incrementAndGet();
            if (v == 100)
            {
                InprocTransportProvider.freezeServer(name, true); // the server stops reading from here on
            }
        }).map(Int32Value::of);
        final AtomicReference<Object> result = new AtomicReference<>();
        ClientCalls.clientStreaming(channel, TestService.SUM, CallOptions.DEFAULT, requests)
            .subscribe(result::set, result::set);

        // the client stops asking once its frames wait unsent (time only bounds the wait for it to settle)
        long last = -1;
        final long settleBy = System.nanoTime() + TIMEOUT.toNanos();
        while (emitted.get() != last && System.nanoTime() < settleBy)
        {
            last = emitted.get();
            Thread.sleep(300);
        }
        Assertions.assertThat(emitted.get()).as("requests pulled while the server reads nothing")
            .isBetween(101L, count / 10L);
        Assertions.assertThat(result.get()).isNull();

        InprocTransportProvider.freezeServer(name, false);
        final long settleAt = System.nanoTime() + TIMEOUT.toNanos();
        while (result.get() == null && System.nanoTime() < settleAt)
        {
            Thread.sleep(20);
        }
        int sum = 0;
        for (int i = 0; i < count; i++)
        {
            sum += i;
        }
        Assertions.assertThat(result.get()).as("every request arrived once the server read again")
            .isEqualTo(Int32Value.of(sum));
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

    @Override
    protected boolean freezeClients(final String serverUri, final boolean frozen)
    {
        final String name = serverUri.substring("inproc://".length());
        if (!frozen)
        {
            // thawed only once the server closed its end (it leaves the registry then): a frozen client end whose
            // server end had gone stayed frozen, its call never failed and its buffers leaked (failed once in CI)
            Await.until("the server closed its end", TIMEOUT, () -> InprocTransportProvider.serverEnds(name) == 0);
        }
        return InprocTransportProvider.freezeClients(name, frozen) > 0;
    }
}
