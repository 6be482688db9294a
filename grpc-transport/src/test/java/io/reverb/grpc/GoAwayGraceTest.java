package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.util.concurrent.ListenableFuture;
import com.google.protobuf.ByteString;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.rpc.RpcServer;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * grpc-java's channel over Reverb when a server goes away gracefully and another takes its address a moment later.
 * The old server closes its listener before the replacement binds; grpc-java's subchannel answered a connect failing in
 * between with TRANSIENT_FAILURE and its backoff, failing every fail-fast call meanwhile (the fault suite's graceful
 * scenario over shm://: 830 calls "no shm listener"). Within the grace after a GOAWAY the transport tries again and the
 * calls wait; past it, a fail-fast call fails UNAVAILABLE as before. Over {@code inproc://}, where a connection to a name
 * nobody listens on fails at once.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class GoAwayGraceTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final long TIMEOUT_SECONDS = 20;
    private static final EchoRequest REQUEST =
        EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("x")).build();

    private final String uri = "inproc://grpc-goaway-grace-" + IDS.incrementAndGet();
    private final long defaultGrace = GoAwayGrace.graceNanos;
    private RpcServer old;
    private RpcServer replacement;
    private ManagedChannel channel;

    @AfterEach
    void tearDown() throws Exception
    {
        GoAwayGrace.graceNanos = defaultGrace;
        if (channel != null)
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();
        }
        for (final RpcServer server : new RpcServer[] {old, replacement})
        {
            if (server != null)
            {
                server.shutdown(Duration.ZERO);
                assertThat(server.awaitTermination(Duration.ofSeconds(TIMEOUT_SECONDS))).isTrue();
            }
        }
        AbstractReverbConformanceTest.assertReleased(uri);
    }

    /** A fail-fast call (grpc-java's default), with a deadline far beyond the grace. */
    private ListenableFuture<EchoReply> call()
    {
        return EchoGrpc.newFutureStub(channel).withDeadlineAfter(TIMEOUT_SECONDS, TimeUnit.SECONDS).unary(REQUEST);
    }

    /** The old server answers one call, then goes away gracefully; returns once the channel saw its GOAWAY. */
    private void connectThenShutDownTheOldServer() throws Exception
    {
        old = RpcServer.builder(uri).addService(new GracefulReplacementTest.CountingEcho()).build().start();
        channel = ReverbChannelBuilder.forTarget(uri).build();
        assertThat(call().get(TIMEOUT_SECONDS, TimeUnit.SECONDS).getPayload()).isEqualTo(REQUEST.getPayload());
        old.shutdown(Duration.ofSeconds(TIMEOUT_SECONDS)); // no call in flight: stops listening, sends GOAWAY, ends
        assertThat(old.awaitTermination(Duration.ofSeconds(TIMEOUT_SECONDS))).isTrue();
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
        while (channel.getState(false) == ConnectivityState.READY)
        {
            assertThat(System.nanoTime() - until).as("the channel saw the GOAWAY").isNegative();
            Thread.sleep(1);
        }
    }

    @Test
    void aFailFastCallMadeBeforeTheReplacementListensShouldWaitForItWithinTheGrace() throws Exception
    {
        // a grace far beyond what a loaded machine takes between the call and the replacement's start
        GoAwayGrace.graceNanos = TimeUnit.SECONDS.toNanos(15);
        connectThenShutDownTheOldServer();

        final ListenableFuture<EchoReply> early = call();
        // nothing listens yet: without the grace, grpc-java failed this call UNAVAILABLE after the first connect
        Thread.sleep(100);
        assertThat(early).as("waits while nobody listens").isNotDone();
        assertThat(channel.getState(false)).isEqualTo(ConnectivityState.CONNECTING);
        final GracefulReplacementTest.CountingEcho service = new GracefulReplacementTest.CountingEcho();
        replacement = RpcServer.builder(uri).addService(service).build().start();

        assertThat(early.get(TIMEOUT_SECONDS, TimeUnit.SECONDS).getPayload()).isEqualTo(REQUEST.getPayload());
        assertThat(service.handled.get()).as("run by the replacement").isEqualTo(1);
        assertThat(call().get(TIMEOUT_SECONDS, TimeUnit.SECONDS).getPayload()).isEqualTo(REQUEST.getPayload());
    }

    @Test
    void pastTheGraceWithNoReplacementAFailFastCallShouldFailUnavailableNotWaitForItsDeadline() throws Exception
    {
        GoAwayGrace.graceNanos = TimeUnit.MILLISECONDS.toNanos(200);
        connectThenShutDownTheOldServer();

        final long start = System.nanoTime();
        final Status status = failure(call());
        assertThat(status.getCode()).as("the connect failure: " + status).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(status.getDescription()).startsWith("cannot connect to " + uri);
        assertThat(System.nanoTime() - start).as("long before the call's deadline")
            .isLessThan(TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS) / 2);
        // the grace over, grpc-java backs off as before: the next fail-fast call fails too
        assertThat(failure(call()).getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    }

    private static Status failure(final ListenableFuture<EchoReply> call) throws Exception
    {
        try
        {
            call.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
        catch (final ExecutionException e)
        {
            assertThat(e.getCause()).isInstanceOf(StatusRuntimeException.class);
            return ((StatusRuntimeException)e.getCause()).getStatus();
        }
        throw new AssertionError("the call succeeded with no server listening");
    }
}
