package io.reverb.rpc.lb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.Int64Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * Deadline and cancellation through two hops: client -> front (whose handler calls back) -> back.
 */
class DeadlinePropagationTest
{
    /** How the front's handler calls back: through a balancing channel, or a plain single-address RpcChannel. */
    protected boolean plainChannel()
    {
        return false;
    }

    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    /** Long enough for two warm in-process hops to start on a loaded machine; the calls are meant to outlive it. */
    private static final Duration SHORT_DEADLINE = Duration.ofSeconds(2);
    private static final MethodDescriptor<StringValue, Int64Value> FRONT = method("Front");
    private static final MethodDescriptor<StringValue, Int64Value> BACK = method("Back");

    private final String backUri = "inproc://prop-back-" + IDS.incrementAndGet();
    private final String frontUri = "inproc://prop-front-" + IDS.incrementAndGet();
    private final CountDownLatch backCancelled = new CountDownLatch(1);
    private final CountDownLatch backStarted = new CountDownLatch(1);
    private final CountDownLatch frontCancelled = new CountDownLatch(1);
    private final CountDownLatch detachedAnswered = new CountDownLatch(1);
    private final AtomicInteger gatedCancelled = new AtomicInteger();
    private final Sinks.Empty<Void> gate = Sinks.empty();
    private RpcServer back;
    private RpcServer front;
    private BalancedChannel toBack;
    private RpcChannel plainToBack;
    private BalancedChannel toFront;

    private static MethodDescriptor<StringValue, Int64Value> method(final String name)
    {
        return MethodDescriptor.<StringValue, Int64Value>newBuilder().type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Prop", name))
            .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(Int64Value.getDefaultInstance()))
            .build();
    }

    private void start()
    {
        // back answers the deadline it sees (remaining ms, -1 for none); "hang" never answers
        back = RpcServer.builder(backUri).addService(ServiceDefinition.builder("reverb.test.Prop")
            .addMethod(BACK, ServerCalls.unary(request -> RpcContext.current().flatMap(ctx ->
            {
                if (request.getValue().equals("hang"))
                {
                    backStarted.countDown();
                    return Mono.<Int64Value>never().doOnCancel(backCancelled::countDown);
                }
                if (request.getValue().equals("gated"))
                {
                    backStarted.countDown();
                    return gate.asMono().thenReturn(Int64Value.of(7)).doOnCancel(gatedCancelled::incrementAndGet);
                }
                final Deadline d = ctx.deadline();
                return Mono.just(Int64Value.of(d == null ? -1 : d.timeRemaining().toMillis()));
            }))).build()).build().start();
        if (plainChannel())
        {
            plainToBack = RpcChannel.builder(backUri).build();
        }
        else
        {
            toBack = (BalancedChannel) RpcChannel.builder(List.of(backUri)).build();
        }
        // front forwards to back; "detached:" calls opt out of propagation
        front = RpcServer.builder(frontUri).addService(ServiceDefinition.builder("reverb.test.Prop")
            .addMethod(FRONT, ServerCalls.unary(request ->
            {
                if (request.getValue().startsWith("fire"))
                {
                    // fire-and-forget: the call to back is subscribed on its own, outside this handler's publisher
                    final boolean optOut = request.getValue().startsWith("fire-detached:");
                    final String forward = request.getValue().substring(request.getValue().indexOf(':') + 1);
                    final CallOptions options = optOut ? CallOptions.DEFAULT.withoutContextPropagation() :
                        CallOptions.DEFAULT;
                    final Mono<Int64Value> call = plainToBack != null ?
                        plainToBack.newUnaryCall(BACK, options, StringValue.of(forward)) :
                        toBack.newUnaryCall(BACK, options, StringValue.of(forward));
                    call.subscribe(answer -> detachedAnswered.countDown(), error -> { });
                    return Mono.<Int64Value>never().doOnCancel(frontCancelled::countDown);
                }
                final boolean detached = request.getValue().startsWith("detached:");
                final String forward = detached ? request.getValue().substring("detached:".length()) : request.getValue();
                final CallOptions options = detached ? CallOptions.DEFAULT.withoutContextPropagation() : CallOptions.DEFAULT;
                return plainToBack != null ? plainToBack.newUnaryCall(BACK, options, StringValue.of(forward)) :
                    toBack.newUnaryCall(BACK, options, StringValue.of(forward));
            })).build()).build().start();
        toFront = (BalancedChannel) RpcChannel.builder(List.of(frontUri)).build();
    }

    /**
     * Connects client to front and front to back with a call that has time to spare, so that a short deadline
     * afterwards covers only the calls' dispatch, not connecting (the back call must start before it expires).
     */
    private void warmBothHops()
    {
        assertThat(toFront.newUnaryCall(FRONT, CallOptions.DEFAULT.withDeadlineAfter(Duration.ofSeconds(30)),
            StringValue.of("x")).block(TIMEOUT).getValue()).isPositive();
    }

    @AfterEach
    void stop() throws InterruptedException
    {
        for (final BalancedChannel c : new BalancedChannel[] {toFront, toBack})
        {
            if (c != null)
            {
                c.close();
            }
        }
        if (plainToBack != null)
        {
            plainToBack.close();
        }
        for (final RpcServer s : new RpcServer[] {front, back})
        {
            if (s != null)
            {
                s.shutdown(Duration.ZERO);
                assertThat(s.awaitTermination(TIMEOUT)).isTrue();
            }
        }
    }

    @Test
    void shouldGiveTheSecondHopTheRemainingDeadline()
    {
        start();
        final long seen = toFront.newUnaryCall(FRONT, CallOptions.DEFAULT.withDeadlineAfter(Duration.ofSeconds(30)),
            StringValue.of("x")).block(TIMEOUT).getValue();
        assertThat(seen).isBetween(1L, 30_000L);
    }

    @Test
    void shouldKeepTheCallsOwnDeadlineWhenItOptsOut()
    {
        start();
        final long seen = toFront.newUnaryCall(FRONT, CallOptions.DEFAULT.withDeadlineAfter(Duration.ofSeconds(30)),
            StringValue.of("detached:x")).block(TIMEOUT).getValue();
        assertThat(seen).isEqualTo(-1L);
    }

    @Test
    void shouldExpireTheSecondHopWithTheFirstsDeadline() throws InterruptedException
    {
        start();
        warmBothHops();
        final RpcException e = catchThrowableOfType(RpcException.class, () ->
            toFront.newUnaryCall(FRONT, CallOptions.DEFAULT.withDeadlineAfter(SHORT_DEADLINE),
                StringValue.of("hang")).block(TIMEOUT));
        assertThat(e.status().code()).isEqualTo(StatusCode.DEADLINE_EXCEEDED);
        assertThat(backCancelled.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("back's handler cancelled").isTrue();
    }

    @Test
    void shouldCancelAFireAndForgetCallMadeInTheHandlerWhenTheClientCancels() throws InterruptedException
    {
        start();
        final Disposable call = toFront.newUnaryCall(FRONT, CallOptions.DEFAULT, StringValue.of("fire:hang")).subscribe();
        assertThat(backStarted.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        call.dispose();
        assertThat(frontCancelled.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("front's handler cancelled").isTrue();
        assertThat(backCancelled.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("back's handler cancelled").isTrue();
    }

    @Test
    void shouldCancelAFireAndForgetCallMadeInTheHandlerWhenTheDeadlinePasses() throws InterruptedException
    {
        start();
        warmBothHops();
        final RpcException e = catchThrowableOfType(RpcException.class, () -> toFront.newUnaryCall(FRONT,
            CallOptions.DEFAULT.withDeadlineAfter(SHORT_DEADLINE), StringValue.of("fire:hang")).block(TIMEOUT));
        assertThat(e.status().code()).isEqualTo(StatusCode.DEADLINE_EXCEEDED);
        assertThat(backCancelled.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("back's handler cancelled").isTrue();
    }

    @Test
    void shouldLetAFireAndForgetCallThatOptedOutOutliveTheCancelledCall() throws InterruptedException
    {
        start();
        final Disposable call = toFront.newUnaryCall(FRONT, CallOptions.DEFAULT, StringValue.of("fire-detached:gated"))
            .subscribe();
        assertThat(backStarted.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        call.dispose();
        assertThat(frontCancelled.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("front's handler cancelled").isTrue();

        gate.tryEmitEmpty(); // only now may back answer: the detached call was still there to receive it
        assertThat(detachedAnswered.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("detached call answered").isTrue();
        assertThat(gatedCancelled.get()).isZero();
    }

    @Test
    void shouldCancelTheSecondHopWhenTheClientCancels() throws InterruptedException
    {
        start();
        final Disposable call = toFront.newUnaryCall(FRONT, CallOptions.DEFAULT, StringValue.of("hang")).subscribe();
        assertThat(backStarted.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        call.dispose();
        assertThat(backCancelled.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("back's handler cancelled").isTrue();
    }
}
