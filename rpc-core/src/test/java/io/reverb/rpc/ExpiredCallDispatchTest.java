package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.StringValue;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A call whose deadline passed before the server got round to dispatching it (issue 25, item 4: a server frozen by
 * SIGSTOP and thawed ran ~150 handlers for callers long gone) ends DEADLINE_EXCEEDED without its handler running.
 * The server's dispatch is held back by a latch in its handler executor, and its timers run on a virtual clock, so
 * the deadline passes at a chosen instant while the call waits for dispatch.
 */
class ExpiredCallDispatchTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    /** The calls' deadline: passes on the server's virtual clock only, never on the client's real one. */
    private static final Duration DEADLINE = Duration.ofMinutes(5);
    private static final MethodDescriptor<StringValue, StringValue> UNARY = method(MethodDescriptor.MethodType.UNARY);
    private static final MethodDescriptor<StringValue, StringValue> SERVER_STREAMING =
        method(MethodDescriptor.MethodType.SERVER_STREAMING);
    private static final MethodDescriptor<StringValue, StringValue> BIDI = method(MethodDescriptor.MethodType.BIDI_STREAMING);

    private final String uri = "inproc://expired-dispatch-" + IDS.incrementAndGet();
    private final CountDownLatch release = new CountDownLatch(1);
    private final AtomicInteger queued = new AtomicInteger();
    private final AtomicInteger handlers = new AtomicInteger();
    private final ExecutorService pool = Executors.newSingleThreadExecutor();
    private final VirtualTimeScheduler serverClock = VirtualTimeScheduler.create();
    /** The server's {@code reverb.server.calls.active}: calls it has read and not yet ended. */
    private final SimpleMeterRegistry serverMetrics = new SimpleMeterRegistry();
    private RpcServer server;
    private RpcChannel channel;

    private static MethodDescriptor<StringValue, StringValue> method(final MethodDescriptor.MethodType type)
    {
        return MethodDescriptor.<StringValue, StringValue>newBuilder()
            .type(type)
            .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Expired", type.name()))
            .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .build();
    }

    private void start()
    {
        start(true);
    }

    private void start(final boolean heldExecutor)
    {
        final RpcServer.Builder builder = RpcServer.builder(uri).addService(ServiceDefinition.builder("reverb.test.Expired")
                .addMethod(UNARY, ServerCalls.unary(r ->
                {
                    handlers.incrementAndGet();
                    return Mono.just(r);
                }))
                .addMethod(SERVER_STREAMING, ServerCalls.serverStreaming(r ->
                {
                    handlers.incrementAndGet();
                    return Flux.just(r);
                }))
                .addMethod(BIDI, ServerCalls.bidiStreaming(requests ->
                {
                    handlers.incrementAndGet();
                    return requests;
                }))
                .build())
            .timerScheduler(serverClock)
            .meterRegistry(serverMetrics);
        if (heldExecutor)
        {
            // every dispatch waits for the latch: the server is "frozen" between reading a call and running it
            builder.executor(task ->
            {
                queued.incrementAndGet();
                pool.execute(() ->
                {
                    try
                    {
                        release.await();
                    }
                    catch (final InterruptedException e)
                    {
                        Thread.currentThread().interrupt();
                    }
                    task.run();
                });
            });
        }
        server = builder.build().start();
        channel = RpcChannel.builder(uri).build();
    }

    @AfterEach
    void tearDown() throws InterruptedException
    {
        release.countDown();
        if (channel != null)
        {
            channel.close();
        }
        if (server != null)
        {
            server.shutdown(Duration.ZERO);
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
        pool.shutdownNow();
        serverClock.dispose();
    }

    private double activeServerCalls()
    {
        final Gauge active = serverMetrics.find("reverb.server.calls.active").gauge();
        return active == null ? 0 : active.value();
    }

    private void expireWhileHeldThenRelease(final Runnable call, final int calls)
    {
        // every call read by the server (its deadline timer set), none dispatched yet
        Await.until("the calls reached the server", TIMEOUT, () -> activeServerCalls() == calls);
        serverClock.advanceTimeBy(DEADLINE.plusMillis(1)); // the server's own deadline passes while dispatch is held
        release.countDown();
        call.run();
        // whatever was queued ran, and found the call over
        final CountDownLatch drained = new CountDownLatch(1);
        pool.execute(drained::countDown);
        Await.until("the held dispatches ran", TIMEOUT, () -> drained.getCount() == 0);
        assertThat(handlers.get()).as("handlers run for calls already past their deadline").isZero();
    }

    @Test
    void unaryCallExpiredBeforeDispatchShouldNotRunItsHandler()
    {
        start();
        final Mono<StringValue> result = channel.newUnaryCall(UNARY, CallOptions.DEFAULT.withDeadlineAfter(DEADLINE),
            StringValue.of("late")).cache();
        result.subscribe(v -> { }, e -> { });
        expireWhileHeldThenRelease(() ->
        {
            final RpcException e = catchThrowableOfType(RpcException.class, () -> result.block(TIMEOUT));
            assertThat(e.status().code()).isEqualTo(StatusCode.DEADLINE_EXCEEDED);
        }, 1);
    }

    @Test
    void streamingCallsExpiredBeforeDispatchShouldNotRunTheirHandlers()
    {
        start();
        final CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(DEADLINE);
        final Flux<StringValue> streaming = channel.newCall(SERVER_STREAMING, options, Mono.just(StringValue.of("s")))
            .cache();
        final Flux<StringValue> bidi = channel.newCall(BIDI, options, Flux.just(StringValue.of("b"))).cache();
        streaming.subscribe(v -> { }, e -> { });
        bidi.subscribe(v -> { }, e -> { });
        expireWhileHeldThenRelease(() ->
        {
            for (final Flux<StringValue> f : List.of(streaming, bidi))
            {
                final RpcException e = catchThrowableOfType(RpcException.class, () -> f.blockLast(TIMEOUT));
                assertThat(e.status().code()).isEqualTo(StatusCode.DEADLINE_EXCEEDED);
            }
        }, 2);
    }

    @Test
    void callWhoseDeadlinePassedBeforeItsCallFrameLeftShouldNotRunItsHandlerEvenDispatchedInline()
    {
        start(false); // handlers run on the transport's thread, as soon as the CALL is read
        // a client clock that jumps 10 minutes after the deadline was set and the call started (its third reading,
        // when the CALL frame is written): the call leaves with no time left
        final AtomicInteger readings = new AtomicInteger();
        final long base = System.nanoTime();
        final Deadline.Ticker jumping = () -> base + (readings.incrementAndGet() > 2 ? TimeUnit.MINUTES.toNanos(10) : 0);
        final Deadline deadline = Deadline.after(DEADLINE.toNanos(), TimeUnit.NANOSECONDS, jumping);

        final RpcException e = catchThrowableOfType(RpcException.class, () -> channel.newUnaryCall(UNARY,
            CallOptions.DEFAULT.withDeadline(deadline), StringValue.of("gone")).block(TIMEOUT));
        assertThat(e.status().code()).isEqualTo(StatusCode.DEADLINE_EXCEEDED);
        assertThat(e.status().description()).contains("before the call was dispatched");
        assertThat(handlers.get()).as("handler run for a call that left with no time left").isZero();
    }

    @Test
    void callWithTimeRemainingStillRunsItsHandlerAfterAHeldDispatch() throws Exception
    {
        start();
        final Mono<StringValue> result = channel.newUnaryCall(UNARY, CallOptions.DEFAULT.withDeadlineAfter(DEADLINE),
            StringValue.of("in time")).cache();
        result.subscribe(v -> { }, e -> { });
        Await.until("the call reached the server's dispatch", TIMEOUT, () -> queued.get() >= 1);
        serverClock.advanceTimeBy(DEADLINE.dividedBy(2)); // time passes, but less than the call's deadline
        release.countDown();
        assertThat(result.block(TIMEOUT)).isEqualTo(StringValue.of("in time"));
        assertThat(handlers.get()).isEqualTo(1);
        assertThat(pool.submit(() -> true).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
    }
}
