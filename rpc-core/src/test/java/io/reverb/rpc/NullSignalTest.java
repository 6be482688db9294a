package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Int64Value;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.publisher.Flux;

/**
 * A publisher that breaks Reactive Streams rule 2.13 (a null {@code onNext} or {@code onError}): the call it feeds
 * ends INTERNAL, naming the rule, instead of hanging until its deadline or sending something undefined; the publisher
 * gets the NullPointerException the rule asks for; and its subscription is cancelled where the rules allow it (within
 * {@code onNext}, never within {@code onError}: rule 2.3). Both sides: a server handler's responses and a client's
 * requests. The TCK ({@link ReactiveStreamsTckTest}) checks the exception alone.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class NullSignalTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final MethodDescriptor<Int64Value, Int64Value> NULL_RESPONSE = TestService.method("NullResponse",
        MethodDescriptor.MethodType.SERVER_STREAMING, Int64Value.getDefaultInstance(), Int64Value.getDefaultInstance());
    private static final MethodDescriptor<Int64Value, Int64Value> NULL_ERROR = TestService.method("NullError",
        MethodDescriptor.MethodType.SERVER_STREAMING, Int64Value.getDefaultInstance(), Int64Value.getDefaultInstance());
    private static final MethodDescriptor<Int64Value, Int64Value> COUNT = TestService.method("Count",
        MethodDescriptor.MethodType.CLIENT_STREAMING, Int64Value.getDefaultInstance(), Int64Value.getDefaultInstance());

    private final Broken serverSide = new Broken();
    private RpcServer server;
    private RpcChannel channel;

    /** A publisher that sends one signal, null where a value or an error belongs, and records what came of it. */
    private static final class Broken
    {
        final AtomicReference<Throwable> thrown = new AtomicReference<>();
        final AtomicBoolean cancelled = new AtomicBoolean();

        Publisher<Int64Value> publisher(final BiConsumer<Subscriber<? super Int64Value>, AtomicBoolean> signal)
        {
            return subscriber ->
            {
                final AtomicBoolean sent = new AtomicBoolean();
                subscriber.onSubscribe(new Subscription()
                {
                    @Override
                    public void request(final long n)
                    {
                        if (sent.compareAndSet(false, true))
                        {
                            try
                            {
                                signal.accept(subscriber, sent);
                            }
                            catch (final RuntimeException e)
                            {
                                thrown.set(e);
                            }
                        }
                    }

                    @Override
                    public void cancel()
                    {
                        cancelled.set(true);
                    }
                });
            };
        }
    }

    @BeforeEach
    void start()
    {
        final String uri = "inproc://null-signal-" + IDS.incrementAndGet();
        server = RpcServer.builder(uri).addService(ServiceDefinition.builder(TestService.SERVICE)
            .addMethod(NULL_RESPONSE, ServerCalls.serverStreaming(n ->
                Flux.from(serverSide.publisher((s, sent) -> s.onNext(null)))))
            .addMethod(NULL_ERROR, ServerCalls.serverStreaming(n ->
                Flux.from(serverSide.publisher((s, sent) -> s.onError(null)))))
            .addMethod(COUNT, ServerCalls.clientStreaming(requests -> requests.count().map(Int64Value::of)))
            .build()).build().start();
        channel = RpcChannel.builder(uri).build();
    }

    @AfterEach
    void stop()
    {
        channel.close();
        server.close();
    }

    @Test
    void aHandlerPublisherThatEmitsNullEndsTheCallInternal()
    {
        assertInternal(ClientCalls.serverStreaming(channel, NULL_RESPONSE, CallOptions.DEFAULT, Int64Value.of(1)),
            "onNext(null)");
        assertThat(serverSide.thrown.get()).isInstanceOf(NullPointerException.class);
        assertThat(serverSide.cancelled).as("cancelled within onNext").isTrue();
    }

    @Test
    void aHandlerPublisherThatFailsWithNullEndsTheCallInternal()
    {
        assertInternal(ClientCalls.serverStreaming(channel, NULL_ERROR, CallOptions.DEFAULT, Int64Value.of(1)),
            "onError(null)");
        assertThat(serverSide.thrown.get()).isInstanceOf(NullPointerException.class);
        assertThat(serverSide.cancelled).as("nothing called on the subscription after onError (rule 2.3)").isFalse();
    }

    @Test
    void aRequestPublisherThatEmitsNullFailsTheCallInternal()
    {
        final Broken client = new Broken();
        assertInternal(ClientCalls.clientStreaming(channel, COUNT, CallOptions.DEFAULT,
            Flux.from(client.publisher((s, sent) -> s.onNext(null)))).flux(), "onNext(null)");
        assertThat(client.thrown.get()).isInstanceOf(NullPointerException.class);
        assertThat(client.cancelled).as("cancelled within onNext").isTrue();
    }

    @Test
    void aRequestPublisherThatFailsWithNullFailsTheCallInternal()
    {
        final Broken client = new Broken();
        assertInternal(ClientCalls.clientStreaming(channel, COUNT, CallOptions.DEFAULT,
            Flux.from(client.publisher((s, sent) -> s.onError(null)))).flux(), "onError(null)");
        assertThat(client.thrown.get()).isInstanceOf(NullPointerException.class);
        assertThat(client.cancelled).as("nothing called on the subscription after onError (rule 2.3)").isFalse();
    }

    private static void assertInternal(final Flux<Int64Value> call, final String signal)
    {
        assertThatThrownBy(() -> call.blockLast(TIMEOUT))
            .isInstanceOfSatisfying(RpcException.class, e ->
            {
                assertThat(e.status().code()).isEqualTo(StatusCode.INTERNAL);
                assertThat(e.status().description()).contains(signal).contains("rule 2.13");
            });
    }
}
