package io.reverb.rpc;

import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.CoreSubscriber;
import reactor.core.Fuseable;
import reactor.core.publisher.Mono;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * A unary handler's constant response ({@code Mono.just}, {@code Mono.empty}: Reactor's scalar publishers) is taken
 * without subscribing to it, as Reactor's own operators fuse scalars, and ends the call exactly as subscribing did.
 * Over {@code inproc://}; counted, not timed.
 */
class ScalarResponseTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final MethodDescriptor<StringValue, StringValue> CALL = MethodDescriptor.<StringValue, StringValue>newBuilder()
        .type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Scalar", "Call"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .build();

    private RpcServer server;
    private RpcChannel channel;

    /** A scalar publisher that counts its subscriptions (Mono.just is final). */
    private static final class CountingJust extends Mono<StringValue> implements Fuseable.ScalarCallable<StringValue>
    {
        final AtomicInteger subscribes = new AtomicInteger();
        final StringValue value;
        final RuntimeException failure;

        CountingJust(final StringValue value, final RuntimeException failure)
        {
            this.value = value;
            this.failure = failure;
        }

        @Override
        public void subscribe(final CoreSubscriber<? super StringValue> actual)
        {
            subscribes.incrementAndGet();
            (failure != null ? Mono.<StringValue>error(failure) : Mono.just(value)).subscribe(actual);
        }

        @Override
        public StringValue call()
        {
            if (failure != null)
            {
                throw failure;
            }
            return value;
        }
    }

    private StringValue call(final Function<StringValue, Mono<StringValue>> handler, final String request)
    {
        final String uri = "inproc://scalar-" + IDS.incrementAndGet();
        server = RpcServer.builder(uri)
            .addService(ServiceDefinition.builder("reverb.test.Scalar").addMethod(CALL, ServerCalls.unary(handler)).build())
            .build()
            .start();
        channel = RpcChannel.builder(uri).build();
        return ClientCalls.unary(channel, CALL, CallOptions.DEFAULT, StringValue.of(request)).block(TIMEOUT);
    }

    private Status failure(final Function<StringValue, Mono<StringValue>> handler)
    {
        final Throwable thrown = catchThrowable(() -> call(handler, "x"));
        assertThat(thrown).as("the call fails").isNotNull();
        final Status status = Status.fromThrowable(thrown);
        close();
        return status;
    }

    @AfterEach
    void close()
    {
        if (channel != null)
        {
            channel.close();
            channel = null;
        }
        if (server != null)
        {
            server.close();
            server = null;
        }
    }

    @Test
    void shouldAnswerWithAScalarResponseWithoutSubscribingToIt()
    {
        final CountingJust just = new CountingJust(StringValue.of("answer"), null);

        assertThat(call(request -> just, "question")).isEqualTo(StringValue.of("answer"));
        assertThat(just.subscribes.get()).isZero();
    }

    @Test
    void shouldEndAnEmptyScalarResponseAsAnEmptySubscribedOne()
    {
        final Status scalar = failure(request -> Mono.empty());
        final Status subscribed = failure(request -> Mono.<StringValue>empty().hide());

        assertThat(scalar.code()).isEqualTo(subscribed.code());
        assertThat(scalar.description()).isEqualTo(subscribed.description());
    }

    @Test
    void shouldFailAScalarThatThrowsAsTheSameErrorSubscribed()
    {
        final IllegalStateException boom = new IllegalStateException("boom");
        final Status scalar = failure(request -> new CountingJust(null, boom));
        final Status subscribed = failure(request -> Mono.<StringValue>error(boom).hide());

        assertThat(scalar.code()).isEqualTo(subscribed.code());
        assertThat(scalar.description()).isEqualTo(subscribed.description());
    }

    @Test
    void shouldFailMonoErrorAsTheSameErrorSubscribed()
    {
        // Mono.error is a scalar too (its call() throws); a status, a checked exception and an Error end as before
        for (final Throwable error : new Throwable[] {Status.NOT_FOUND.withDescription("none").asException(),
            new IOException("checked"), new AssertionError("an error")})
        {
            final Status scalar = failure(request -> Mono.error(error));
            final Status subscribed = failure(request -> Mono.<StringValue>error(error).hide());

            assertThat(scalar.code()).as("%s", error).isEqualTo(subscribed.code());
            assertThat(scalar.description()).as("%s", error).isEqualTo(subscribed.description());
        }
    }
}
