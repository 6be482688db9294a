package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A client-streaming call expects exactly one response: a server that sends two (or none) fails the call INTERNAL as an
 * {@link RpcException}, as grpc-java and Reverb's unary path do, not with Reactor's {@code IndexOutOfBoundsException}
 * (which retry classification and callers read as UNKNOWN). A unary call that goes through a client interceptor (the
 * channel's streaming path) likewise. The server here serves the method as bidi streaming.
 */
class SingleResponseCardinalityTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final String SERVICE = "reverb.test.Cardinality";

    private RpcServer server;
    private RpcChannel channel;

    private static MethodDescriptor<StringValue, StringValue> method(final MethodDescriptor.MethodType type)
    {
        return MethodDescriptor.<StringValue, StringValue>newBuilder().type(type)
            .fullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Collect"))
            .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance())).build();
    }

    private Mono<StringValue> collect(final int responses)
    {
        final String uri = "inproc://cardinality-" + IDS.incrementAndGet();
        server = RpcServer.builder(uri).addService(ServiceDefinition.builder(SERVICE)
                .addMethod(method(MethodDescriptor.MethodType.BIDI_STREAMING), ServerCalls.<StringValue, StringValue>
                    bidiStreaming(requests -> requests.then(Mono.empty()).thenMany(
                        Flux.range(1, responses).map(i -> StringValue.of("response " + i))))).build())
            .build().start();
        channel = RpcChannel.builder(uri).build();
        return ClientCalls.clientStreaming(channel, method(MethodDescriptor.MethodType.CLIENT_STREAMING),
            CallOptions.DEFAULT, Flux.just(StringValue.of("a"), StringValue.of("b")));
    }

    /** A unary call through a client interceptor (the channel's streaming path) to a server that sends n. */
    private Mono<StringValue> unaryThroughAnInterceptor(final int responses)
    {
        final String uri = "inproc://cardinality-" + IDS.incrementAndGet();
        server = RpcServer.builder(uri).addService(ServiceDefinition.builder(SERVICE)
                .addMethod(method(MethodDescriptor.MethodType.BIDI_STREAMING), ServerCalls.<StringValue, StringValue>
                    bidiStreaming(requests -> requests.thenMany(
                        Flux.range(1, responses).map(i -> StringValue.of("response " + i))))).build())
            .build().start();
        channel = RpcChannel.builder(uri).intercept(new ClientInterceptor()
        {
            @Override
            public <Q, R> Flux<R> interceptCall(final ClientCallContext call, final Flux<Q> requests,
                final Next<Q, R> next)
            {
                return next.call(requests);
            }
        }).build();
        return ClientCalls.unary(channel, method(MethodDescriptor.MethodType.UNARY), CallOptions.DEFAULT,
            StringValue.of("a"));
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

    @Test
    void shouldAnswerWithTheOneResponse()
    {
        assertThat(collect(1).block(TIMEOUT).getValue()).isEqualTo("response 1");
    }

    @Test
    void shouldFailInternalWhenTheServerSendsTwo()
    {
        assertThatThrownBy(() -> collect(2).block(TIMEOUT)).isInstanceOfSatisfying(RpcException.class, e ->
        {
            assertThat(e.status().code()).isEqualTo(StatusCode.INTERNAL);
            assertThat(e.status().description()).contains("More than one value received");
        });
    }

    @Test
    void shouldFailAUnaryCallThroughAnInterceptorInternalWhenTheServerSendsTwo()
    {
        assertThat(unaryThroughAnInterceptor(1).block(TIMEOUT).getValue()).isEqualTo("response 1");
        close();
        assertThatThrownBy(() -> unaryThroughAnInterceptor(2).block(TIMEOUT)).isInstanceOfSatisfying(
            RpcException.class, e ->
            {
                assertThat(e.status().code()).isEqualTo(StatusCode.INTERNAL);
                assertThat(e.status().description()).contains("More than one value received");
            });
    }

    @Test
    void shouldFailInternalWhenTheServerSendsNone()
    {
        assertThatThrownBy(() -> collect(0).block(TIMEOUT)).isInstanceOfSatisfying(RpcException.class,
            e -> assertThat(e.status().code()).isEqualTo(StatusCode.INTERNAL));
    }
}
