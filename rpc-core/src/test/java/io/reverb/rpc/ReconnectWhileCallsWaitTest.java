package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A channel backing off after failed connects does not make callers sit out the whole backoff once the server is
 * back (issue 25, item 3's "calls succeed again soon"): while calls want a connection, the next attempt comes at most
 * {@code reconnectWhileCallsWait} (here 5 s) after the last failed one, although the backoff here is 20 s. Timers on
 * a virtual clock: counted, not timed.
 */
class ReconnectWhileCallsWaitTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final Duration BACKOFF = Duration.ofSeconds(20);
    /** Longer than the default 1 s, so that a loaded machine does not pass it in real time while the test sets up. */
    private static final Duration WHILE_CALLS_WAIT = Duration.ofSeconds(5);
    private static final MethodDescriptor<StringValue, StringValue> CALL = MethodDescriptor.<StringValue, StringValue>newBuilder()
        .type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Reconnect", "Call"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .build();

    private final String uri = "inproc://reconnect-" + IDS.incrementAndGet();
    private final VirtualTimeScheduler clock = VirtualTimeScheduler.create();
    private RpcServer server;
    private RpcChannel channel;

    @AfterEach
    void tearDown() throws InterruptedException
    {
        if (channel != null)
        {
            channel.close();
        }
        if (server != null)
        {
            server.shutdown(Duration.ZERO);
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
        clock.dispose();
    }

    private void startServer()
    {
        server = RpcServer.builder(uri).addService(ServiceDefinition.builder("reverb.test.Reconnect")
            .addMethod(CALL, ServerCalls.unary(Mono::just)).build()).build().start();
    }

    private Mono<StringValue> call(final CallOptions options)
    {
        return channel.newUnaryCall(CALL, options, StringValue.of("x"));
    }

    /** The channel tried once, failed (nothing listens), and backs off about 20 s (16-24 s with jitter). */
    private void failOnce()
    {
        channel = RpcChannel.builder(uri).reconnectBackoff(BACKOFF, Duration.ofMinutes(1))
            .reconnectWhileCallsWait(WHILE_CALLS_WAIT).timerScheduler(clock).build();
        final RpcException e = catchThrowableOfType(RpcException.class, () -> call(CallOptions.DEFAULT).block(TIMEOUT));
        assertThat(e.status().code()).isEqualTo(StatusCode.UNAVAILABLE);
    }

    @Test
    void aWaitingCallShouldNotSitOutTheBackoffOnceTheServerIsBack() throws Exception
    {
        failOnce();
        startServer();
        final CompletableFuture<StringValue> waiting = call(CallOptions.DEFAULT.withWaitForReady()).toFuture();
        clock.advanceTimeBy(WHILE_CALLS_WAIT.minusSeconds(1));
        assertThat(waiting).as("no attempt before 5 s after the failure").isNotDone();
        clock.advanceTimeBy(Duration.ofMillis(1001)); // 5 s: well inside the 16-24 s backoff
        assertThat(waiting.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(StringValue.of("x"));
    }

    @Test
    void failFastCallsDuringTheBackoffShouldBringTheNextAttemptForward()
    {
        failOnce();
        startServer();
        // still backing off: it fails fast, as in gRPC, but asks for an attempt
        final RpcException e = catchThrowableOfType(RpcException.class, () -> call(CallOptions.DEFAULT).block(TIMEOUT));
        assertThat(e.status().code()).isEqualTo(StatusCode.UNAVAILABLE);
        // the attempt starts on the (virtual) timer within 5 s: a fail-fast call made after that waits for it, or
        // finds the connection up; without the attempt it would fail fast again, the backoff being 16-24 s
        clock.advanceTimeBy(WHILE_CALLS_WAIT.plusMillis(1));
        assertThat(call(CallOptions.DEFAULT).block(TIMEOUT)).isEqualTo(StringValue.of("x"));
    }
}
