package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The server's per-connection limits over {@code inproc://}: concurrent calls, keep-alive enforcement, max age.
 */
class ServerLimitsTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final MethodDescriptor<StringValue, StringValue> CALL = MethodDescriptor.<StringValue, StringValue>newBuilder()
        .type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Limits", "Call"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .build();

    private final String uri = "inproc://limits-" + IDS.incrementAndGet();
    private final Sinks.Empty<Void> gate = Sinks.empty();
    private final AtomicInteger started = new AtomicInteger();
    private final Set<String> peers = ConcurrentHashMap.newKeySet();
    private RpcServer server;
    private RpcChannel channel;

    private void start(final UnaryOperator<RpcServer.Builder> server, final UnaryOperator<RpcChannel.Builder> channel)
    {
        // "hold" waits for the gate; anything else answers the caller's peer at once
        this.server = server.apply(RpcServer.builder(uri).addService(ServiceDefinition.builder("reverb.test.Limits")
            .addMethod(CALL, ServerCalls.unary(r -> RpcContext.current().flatMap(ctx ->
            {
                started.incrementAndGet();
                peers.add(ctx.peer());
                final Mono<StringValue> answer = Mono.just(StringValue.of(ctx.peer()));
                return r.getValue().equals("hold") ? gate.asMono().then(answer) : answer;
            }))).build())).build().start();
        this.channel = channel.apply(RpcChannel.builder(uri)).build();
    }

    @AfterEach
    void tearDown() throws InterruptedException
    {
        gate.tryEmitEmpty();
        if (channel != null)
        {
            channel.close();
        }
        if (server != null)
        {
            server.shutdown(Duration.ZERO);
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
    }

    private Mono<StringValue> call(final String what)
    {
        return channel.newUnaryCall(CALL, CallOptions.DEFAULT, StringValue.of(what));
    }

    @Test
    void shouldRefuseCallsBeyondTheConnectionsLimitNamingIt()
    {
        start(b -> b.maxConcurrentCallsPerConnection(2), b -> b);
        final Disposable first = call("hold").subscribe();
        final Disposable second = call("hold").subscribe();
        Await.until("two calls running", TIMEOUT, () -> started.get() == 2);

        final RpcException refused = catchThrowableOfType(RpcException.class,
            () -> call("x").block(TIMEOUT));
        assertThat(refused.status().code()).isEqualTo(StatusCode.RESOURCE_EXHAUSTED);
        assertThat(refused.status().description()).contains("limit 2").contains("maxConcurrentCallsPerConnection");
        assertThat(started.get()).as("no handler ran for the refused call").isEqualTo(2);

        first.dispose();
        Await.until("a slot free", TIMEOUT, () -> call("x").onErrorResume(e -> Mono.empty()).blockOptional(TIMEOUT).isPresent());
        second.dispose();
    }

    @Test
    void shouldCloseTheConnectionOfAClientThatPingsTooOften()
    {
        start(b -> b.permitKeepAlive(Duration.ofSeconds(10), false),
            b -> b.keepAlive(Duration.ofMillis(20), Duration.ofSeconds(10)));
        final RpcException e = catchThrowableOfType(RpcException.class,
            () -> call("hold").block(TIMEOUT));
        assertThat(e.status().code()).isEqualTo(StatusCode.UNAVAILABLE);
        assertThat(e.status().description()).contains("too many pings");
    }

    @Test
    void shouldAnswerPingsSpacedAsPermitted()
    {
        start(b -> b.permitKeepAlive(Duration.ofMillis(1), false),
            b -> b.keepAlive(Duration.ofMillis(20), Duration.ofSeconds(10)));
        final Disposable held = call("hold").subscribe();
        Await.until("call running", TIMEOUT, () -> started.get() == 1);
        final String[] answer = new String[1];
        final Disposable second = call("hold").subscribe(v -> answer[0] = v.getValue());
        Await.until("second call running", TIMEOUT, () -> started.get() == 2);
        gate.tryEmitEmpty();
        Await.until("answered on the same connection", TIMEOUT, () -> answer[0] != null);
        assertThat(peers).hasSize(1);
        held.dispose();
        second.dispose();
    }

    @Test
    void shouldDrainOldConnectionsGracefullySoThatClientsReconnect()
    {
        start(b -> b.maxConnectionAge(Duration.ofMillis(100), Duration.ofSeconds(10)), b -> b);
        final String[] held = new String[1];
        call("hold").subscribe(v -> held[0] = v.getValue());
        Await.until("held call running", TIMEOUT, () -> started.get() == 1);

        // after the first connection's age, calls go through a new connection; the held call is not failed
        Await.until("a second connection", TIMEOUT, () ->
        {
            call("x").onErrorResume(e -> Mono.empty()).block(TIMEOUT);
            return peers.size() >= 2;
        });
        gate.tryEmitEmpty();
        Await.until("the held call answered", TIMEOUT, () -> held[0] != null);
    }
}
