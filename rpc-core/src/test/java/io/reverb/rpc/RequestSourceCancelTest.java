package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.stub.ClientCalls;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A unary or server-streaming call given its request as a {@code Mono} (the generated stubs' {@code m(Mono<Req>)}):
 * when the call is cancelled, or its deadline passes, while the request is still being produced (a token fetch, a
 * {@code Mono} on another scheduler), the request's subscription is cancelled too, as a single subscription would
 * be. The channel keeps the request to send it again on a retry; before, it kept the source running as well. With
 * and without a client interceptor (the channel's two paths).
 */
class RequestSourceCancelTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final long TIMEOUT_S = 20;

    private final TestService service = new TestService();
    private RpcServer server;
    private RpcChannel channel;

    private void start(final boolean intercepted)
    {
        final String uri = "inproc://request-source-" + IDS.incrementAndGet();
        server = RpcServer.builder(uri).addService(service).build().start();
        final RpcChannel.Builder builder = RpcChannel.builder(uri);
        if (intercepted)
        {
            builder.intercept(new ClientInterceptor()
            {
                @Override
                public <Q, R> Flux<R> interceptCall(final ClientCallContext call, final Flux<Q> requests,
                    final Next<Q, R> next)
                {
                    return next.call(requests);
                }
            });
        }
        channel = builder.build();
    }

    @AfterEach
    void close()
    {
        if (channel != null)
        {
            channel.close();
        }
        if (server != null)
        {
            server.close();
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldCancelAUnaryCallsRequestWhenTheCallIsCancelled(final boolean intercepted) throws Exception
    {
        start(intercepted);
        final CountDownLatch subscribed = new CountDownLatch(1);
        final CountDownLatch cancelled = new CountDownLatch(1);
        final Disposable call = ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT,
            Mono.<StringValue>never().doOnSubscribe(s -> subscribed.countDown()).doOnCancel(cancelled::countDown))
            .subscribe(r -> { }, t -> { });
        assertThat(subscribed.await(TIMEOUT_S, TimeUnit.SECONDS)).as("the request was asked for").isTrue();
        call.dispose();
        assertThat(cancelled.await(TIMEOUT_S, TimeUnit.SECONDS)).as("the request's source was cancelled").isTrue();
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldCancelAServerStreamingCallsRequestWhenItsDeadlinePasses(final boolean intercepted) throws Exception
    {
        start(intercepted);
        final CountDownLatch cancelled = new CountDownLatch(1);
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final CountDownLatch ended = new CountDownLatch(1);
        ClientCalls.serverStreaming(channel, TestService.RANGE, CallOptions.DEFAULT.withDeadlineAfter(
            Duration.ofMillis(200)), Mono.<Int32Value>never().doOnCancel(cancelled::countDown)).subscribe(r -> { }, t ->
            {
                failure.set(t);
                ended.countDown();
            }, ended::countDown);
        assertThat(ended.await(TIMEOUT_S, TimeUnit.SECONDS)).isTrue();
        assertThat(failure.get()).isInstanceOf(RpcException.class);
        assertThat(((RpcException)failure.get()).status().code()).isEqualTo(StatusCode.DEADLINE_EXCEEDED);
        assertThat(cancelled.await(TIMEOUT_S, TimeUnit.SECONDS)).as("the request's source was cancelled").isTrue();
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldStillSendTheRequestOnceAndAnswerIt(final boolean intercepted)
    {
        start(intercepted);
        final AtomicInteger subscriptions = new AtomicInteger();
        final Mono<StringValue> request = Mono.fromCallable(() ->
        {
            subscriptions.incrementAndGet();
            return StringValue.of("hello");
        });
        assertThat(ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT, request)
            .block(Duration.ofSeconds(TIMEOUT_S)).getValue()).isEqualTo("hello");
        assertThat(ClientCalls.serverStreaming(channel, TestService.RANGE, CallOptions.DEFAULT, Mono.just(
            Int32Value.of(3))).collectList().block(Duration.ofSeconds(TIMEOUT_S))).hasSize(3);
        assertThat(subscriptions.get()).isEqualTo(1);
    }
}
