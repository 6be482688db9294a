package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.ConnectivityState;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.testing.Await;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A server that goes away gracefully closes its listener before a process taking its address binds: a fail-fast call
 * made in between used to fail with UNAVAILABLE, and so did every fail-fast call of the backoff after it (the fault
 * suite's graceful scenario over tcp://: 490-699 failed calls across a hand-over whose gap was 17 ms). Within the grace
 * after a GOAWAY the calls wait and the connector tries again every 20 ms; past it, they fail fast as before.
 * Over {@code inproc://}, where a connection to a name nobody listens on fails at once.
 */
class GoAwayGraceTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private final String uri = "inproc://goaway-grace-" + IDS.incrementAndGet();
    private final long defaultGrace = SubchannelConnector.goAwayGraceNanos;
    private RpcServer old;
    private RpcServer replacement;
    private RpcChannel channel;

    @AfterEach
    void tearDown() throws InterruptedException
    {
        SubchannelConnector.goAwayGraceNanos = defaultGrace;
        if (channel != null)
        {
            channel.close();
        }
        for (final RpcServer server : new RpcServer[] {old, replacement})
        {
            if (server != null)
            {
                server.shutdown(Duration.ZERO);
                assertThat(server.awaitTermination(TIMEOUT)).isTrue();
            }
        }
    }

    private static RpcServer server(final String uri, final TestService service)
    {
        return RpcServer.builder(uri).addService(service).build().start();
    }

    /** A fail-fast call (the default), with a deadline far beyond the grace. */
    private CompletableFuture<StringValue> call(final String text)
    {
        return channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT.withDeadlineAfter(TIMEOUT),
            StringValue.of(text)).toFuture();
    }

    /** The old server answers one call, then goes away gracefully; returns once the channel saw its GOAWAY. */
    private void connectThenShutDownTheOldServer() throws Exception
    {
        old = server(uri, new TestService());
        channel = RpcChannel.builder(uri).build();
        assertThat(call("before").get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(StringValue.of("before"));
        old.shutdown(TIMEOUT); // no call in flight: it stops listening, sends GOAWAY and ends
        assertThat(old.awaitTermination(TIMEOUT)).isTrue();
        Await.until("the channel saw the GOAWAY", TIMEOUT, () -> channel.state(false) != ConnectivityState.READY);
    }

    @Test
    void aFailFastCallMadeBeforeTheReplacementListensShouldWaitForItWithinTheGrace() throws Exception
    {
        // a grace far beyond what a loaded machine takes between the call and the replacement's start
        SubchannelConnector.goAwayGraceNanos = TimeUnit.SECONDS.toNanos(15);
        connectThenShutDownTheOldServer();

        final CompletableFuture<StringValue> early = call("in the gap");
        // nothing listens yet: before the grace, the first attempt failed this call at once
        Thread.sleep(50);
        assertThat(early).as("waits while nobody listens").isNotDone();
        assertThat(channel.state(false)).isEqualTo(ConnectivityState.CONNECTING);
        final TestService service = new TestService();
        replacement = server(uri, service);

        assertThat(early.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(StringValue.of("in the gap"));
        assertThat(service.callsStarted.get()).as("run by the replacement").isEqualTo(1);
        assertThat(call("after").get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(StringValue.of("after"));
    }

    @Test
    void pastTheGraceWithNoReplacementAFailFastCallShouldFailUnavailableNotWaitForItsDeadline() throws Exception
    {
        SubchannelConnector.goAwayGraceNanos = TimeUnit.MILLISECONDS.toNanos(200);
        connectThenShutDownTheOldServer();

        final CompletableFuture<StringValue> lost = call("nobody");
        final Throwable failure = lost.handle((v, e) -> e).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        assertThat(failure).isInstanceOf(RpcException.class);
        assertThat(((RpcException)failure).status().code()).as("the connect failure, long before the deadline")
            .isEqualTo(StatusCode.UNAVAILABLE);
        assertThat(((RpcException)failure).status().description()).startsWith("cannot connect to " + uri);
        // and, the grace over, the channel backs off as before: the next fail-fast call fails at once
        final Throwable next = call("again").handle((v, e) -> e).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        assertThat(((RpcException)next).status().code()).isEqualTo(StatusCode.UNAVAILABLE);
    }
}
