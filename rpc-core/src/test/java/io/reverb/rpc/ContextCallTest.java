package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * {@link RpcChannel#newUnaryCall(MethodDescriptor, CallOptions, Object, ClientCallContext)} and
 * {@link RpcChannel#newCall(MethodDescriptor, CallOptions, org.reactivestreams.Publisher, ClientCallContext)}: what the
 * server answered lands in the given context, with and without the channel's interceptors.
 */
class ContextCallTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final AtomicLong NAMES = new AtomicLong();
    private static final Metadata.Key<String> HEADER = Metadata.Key.of("x-header", Metadata.ASCII_STRING_MARSHALLER);
    private static final Metadata.Key<String> TRAILER = Metadata.Key.of("x-trailer", Metadata.ASCII_STRING_MARSHALLER);
    private static final Metadata.Key<String> SENT = Metadata.Key.of("x-sent", Metadata.ASCII_STRING_MARSHALLER);

    @Test
    void shouldRecordHeadersTrailersAndStatusOfUnaryCallWithoutInterceptors()
    {
        shouldRecordUnary(0);
    }

    @Test
    void shouldRecordHeadersTrailersAndStatusOfUnaryCallThroughInterceptors()
    {
        shouldRecordUnary(1);
    }

    @Test
    void shouldRecordTheEndOfStreamingCallAndFailedCall()
    {
        final String uri = "inproc://context-call-" + NAMES.incrementAndGet();
        try (RpcServer server = server(uri); RpcClientConnection channel = RpcClientConnection.create(RpcChannel.builder(uri)))
        {
            final ClientCallContext streaming = new ClientCallContext(TestService.RANGE, CallOptions.DEFAULT);
            StepVerifier.create(channel.newCall(TestService.RANGE, CallOptions.DEFAULT, Mono.just(Int32Value.of(3)), streaming))
                .expectNextCount(3).expectComplete().verify(TIMEOUT);
            assertThat(streaming.status().isOk()).isTrue();
            assertThat(streaming.trailers().get(TRAILER)).isEqualTo("t");

            final ClientCallContext failed = new ClientCallContext(TestService.ECHO, CallOptions.DEFAULT);
            StepVerifier.create(channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT,
                    StringValue.of("status:NOT_FOUND:gone"), failed))
                .expectError(RpcException.class).verify(TIMEOUT);
            assertThat(failed.status().code()).isEqualTo(StatusCode.NOT_FOUND);
            assertThat(failed.trailers().get(Metadata.Key.of("detail-bin", Metadata.BINARY_BYTE_MARSHALLER)))
                .containsExactly(1, 2, 3);
        }
    }

    @Test
    void shouldMakeNoEmptyMetadataForACallThatSendsAndReceivesNone()
    {
        final String uri = "inproc://context-none-" + NAMES.incrementAndGet();
        try (RpcServer server = RpcServer.builder(uri).addService(new TestService()).build().start();
            RpcClientConnection channel = RpcClientConnection.create(RpcChannel.builder(uri)))
        {
            final ClientCallContext context = new ClientCallContext(TestService.ECHO, CallOptions.DEFAULT);
            assertThat(context.requestMetadataToSend()).as("nothing to send, none made").isNull();
            assertThat(context.trailers()).as("not ended").isNull();
            StepVerifier.create(channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("a"), context))
                .expectNext(StringValue.of("a")).expectComplete().verify(TIMEOUT);
            assertThat(context.status().isOk()).isTrue();
            assertThat(context.requestMetadataToSend()).isNull();
            assertThat(context.receivedTrailers()).as("ended without trailers").isNull();
            // who asks gets an empty one, the same each time
            final Metadata trailers = context.trailers();
            assertThat(trailers).isNotNull();
            assertThat(trailers.isEmpty()).isTrue();
            assertThat(context.trailers()).isSameAs(trailers);
            assertThat(context.receivedTrailers()).isSameAs(trailers);

            // asked for before the call is sent (as an interceptor does): what is put there is what is sent
            final ClientCallContext asked = new ClientCallContext(TestService.ECHO, CallOptions.DEFAULT);
            final Metadata metadata = asked.requestMetadata();
            assertThat(asked.requestMetadata()).isSameAs(metadata);
            metadata.put(SENT, "x");
            assertThat(asked.requestMetadataToSend()).isSameAs(metadata);

            // the options' metadata is copied, not shared
            final Metadata options = new Metadata();
            options.put(SENT, "y");
            final ClientCallContext copied = new ClientCallContext(TestService.ECHO, CallOptions.DEFAULT.withMetadata(options));
            assertThat(copied.requestMetadataToSend()).isNotSameAs(options);
            assertThat(copied.requestMetadataToSend().get(SENT)).isEqualTo("y");
        }
    }

    @Test
    void shouldMakeTheServerCallsEmptyRequestMetadataOnlyWhenAskedFor()
    {
        final RpcContext none = new RpcContext(TestService.ECHO, null, null, "peer");
        assertThat(none.hasMetadata()).isFalse();
        final Metadata made = none.metadata();
        assertThat(made.isEmpty()).isTrue();
        assertThat(none.metadata()).isSameAs(made);
        assertThat(none.hasMetadata()).as("still empty").isFalse();
        made.put(SENT, "z");
        assertThat(none.hasMetadata()).isTrue();

        final Metadata sent = new Metadata();
        sent.put(SENT, "w");
        final RpcContext some = new RpcContext(TestService.ECHO, sent, null, "peer");
        assertThat(some.hasMetadata()).isTrue();
        assertThat(some.metadata()).isSameAs(sent);
    }

    @Test
    void shouldGiveTheCallsContextFromTheRuntimesSubscriberWithoutAReactorContext()
    {
        final String uri = "inproc://context-of-" + NAMES.incrementAndGet();
        final AtomicReference<RpcContext> direct = new AtomicReference<>();
        final AtomicReference<RpcContext> fromReactor = new AtomicReference<>();
        final ServerCallHandler.Unary<StringValue, StringValue> handler = new ServerCallHandler.Unary<>()
        {
            @Override
            public Publisher<StringValue> invoke(final StringValue request)
            {
                return subscriber ->
                {
                    final RpcContext context = RpcContext.of(subscriber);
                    direct.set(context);
                    fromReactor.set(RpcContext.from(((CoreSubscriber<?>)subscriber).currentContext()));
                    Mono.just(StringValue.of(request.getValue() + ":" + context.hasMetadata() + ":" +
                        context.metadata().get(SENT))).subscribe(subscriber);
                };
            }

            @Override
            public Publisher<StringValue> handle(final Flux<StringValue> requests)
            {
                return requests.next().flatMap(r -> Mono.from(invoke(r)));
            }
        };
        final ServiceDefinition service = ServiceDefinition.builder(TestService.ECHO.serviceName())
            .addMethod(TestService.ECHO, handler).build();
        try (RpcServer server = RpcServer.builder(uri).addService(service).build().start();
            RpcClientConnection channel = RpcClientConnection.create(RpcChannel.builder(uri)))
        {
            StepVerifier.create(channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("a"),
                    new ClientCallContext(TestService.ECHO, CallOptions.DEFAULT)))
                .expectNext(StringValue.of("a:false:null")).expectComplete().verify(TIMEOUT);
            assertThat(direct.get()).isNotNull().isSameAs(fromReactor.get());
            final Metadata sent = new Metadata();
            sent.put(SENT, "hello");
            final CallOptions options = CallOptions.DEFAULT.withMetadata(sent);
            StepVerifier.create(channel.newUnaryCall(TestService.ECHO, options, StringValue.of("b"),
                    new ClientCallContext(TestService.ECHO, options)))
                .expectNext(StringValue.of("b:true:hello")).expectComplete().verify(TIMEOUT);
            assertThat(direct.get()).isNotNull().isSameAs(fromReactor.get());
        }
        // a subscriber of somebody else's: from its Reactor context, which has none here
        assertThat(RpcContext.of(new BaseSubscriber<Object>()
        {
        })).isNull();
    }

    @Test
    void shouldRefuseToMakeOneConnectionOfSeveralAddressesOrBalancingSettings()
    {
        // refused when made, naming why; a channel built from the same settings has no method that throws for them
        assertThatThrownBy(() -> RpcClientConnection.create(
            RpcChannel.builder(List.of("inproc://a-" + NAMES.incrementAndGet(), "inproc://b"))))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("one transport address")
            .hasMessageContaining("build an RpcChannel");
        assertThatThrownBy(() -> RpcClientConnection.create(RpcChannel.builder("inproc://c").healthCheck("")))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("build an RpcChannel");
    }

    @Test
    void shouldConnectOnRequestAndReportTheConnectionLost() throws Exception
    {
        final String uri = "inproc://context-connect-" + NAMES.incrementAndGet();
        try (RpcClientConnection nobody = RpcClientConnection.create(RpcChannel.builder(uri)))
        {
            assertThat(nobody.state()).isEqualTo(RpcClientConnection.State.IDLE);
            assertThatThrownBy(() -> nobody.connect().get(20, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class).cause().isInstanceOfSatisfying(RpcException.class,
                    e -> assertThat(e.status().code()).isEqualTo(StatusCode.UNAVAILABLE));
            // one attempt, no reconnect of its own: the owner makes another connection
            assertThat(nobody.state()).isEqualTo(RpcClientConnection.State.CLOSED);
        }
        final RpcServer server = server(uri);
        try (RpcClientConnection channel = RpcClientConnection.create(RpcChannel.builder(uri)))
        {
            final CountDownLatch lost = new CountDownLatch(1);
            channel.onLost(why -> lost.countDown());
            try
            {
                channel.connect().get(20, TimeUnit.SECONDS);
                assertThat(channel.connect()).as("already connected").isCompleted();
                assertThat(channel.state()).isEqualTo(RpcClientConnection.State.READY);
            }
            finally
            {
                server.close();
            }
            assertThat(lost.await(20, TimeUnit.SECONDS)).as("connection lost reported").isTrue();
            assertThat(channel.state()).isIn(RpcClientConnection.State.DRAINING, RpcClientConnection.State.CLOSED);
        }
    }

    private static void shouldRecordUnary(final int interceptors)
    {
        final String uri = "inproc://context-call-" + NAMES.incrementAndGet();
        final AtomicInteger intercepted = new AtomicInteger();
        final RpcChannel.Builder builder = RpcChannel.builder(uri);
        if (interceptors > 0)
        {
            builder.intercept(new ClientInterceptor()
            {
                @Override
                public <Req, Resp> Flux<Resp> interceptCall(final ClientCallContext call, final Flux<Req> requests,
                    final Next<Req, Resp> next)
                {
                    intercepted.incrementAndGet();
                    return next.call(requests);
                }
            });
        }
        try (RpcServer server = server(uri); RpcClientConnection channel = RpcClientConnection.create(builder))
        {
            final Metadata sent = new Metadata();
            sent.put(SENT, "hello");
            final CallOptions options = CallOptions.DEFAULT.withMetadata(sent);
            final ClientCallContext context = new ClientCallContext(TestService.ECHO, options);
            StepVerifier.create(channel.newUnaryCall(TestService.ECHO, options, StringValue.of("a"), context))
                .expectNext(StringValue.of("a:hello")).expectComplete().verify(TIMEOUT);
            assertThat(context.responseHeaders().get(HEADER)).isEqualTo("h");
            assertThat(context.trailers().get(TRAILER)).isEqualTo("t");
            assertThat(context.status().isOk()).isTrue();
            assertThat(intercepted.get()).isEqualTo(interceptors);
        }
    }

    /** TestService behind an interceptor that answers with a header and a trailer, and echoes x-sent. */
    private static RpcServer server(final String uri)
    {
        return RpcServer.builder(uri).addService(new TestService()).intercept(new ServerInterceptor()
        {
            @Override
            @SuppressWarnings("unchecked")
            public <Req, Resp> Flux<Resp> interceptCall(final RpcContext ctx, final Flux<Req> requests,
                final ServerCallHandler<Req, Resp> next)
            {
                ctx.responseHeaders().put(HEADER, "h");
                final String suffix = ctx.metadata().get(SENT);
                Flux<Resp> responses = Flux.from(next.handle(requests))
                    .doOnComplete(() -> ctx.responseTrailers().put(TRAILER, "t"));
                if (suffix != null)
                {
                    responses = responses.map(r -> r instanceof StringValue ?
                        (Resp)StringValue.of(((StringValue)r).getValue() + ":" + suffix) : r);
                }
                return responses;
            }
        }).build().start();
    }
}
