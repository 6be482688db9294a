package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The server's per-connection hook over {@code inproc://}: {@link AcceptedConnection.Listener} told of each accepted
 * connection and its end, the handler finding its connection (and what the listener attached) in
 * {@link RpcContext#connection()}, and one connection's own GOAWAY and immediate close.
 */
class AcceptedConnectionTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final MethodDescriptor<StringValue, StringValue> CALL = MethodDescriptor.<StringValue, StringValue>newBuilder()
        .type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Accepted", "Call"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .build();

    private final String uri = "inproc://accepted-" + IDS.incrementAndGet();
    private final Sinks.Empty<Void> gate = Sinks.empty();
    private final AtomicInteger started = new AtomicInteger();
    private final AtomicInteger cancelled = new AtomicInteger();
    /** The connections accepted, in order, and their ends: connection -> cause ("orderly" for null). */
    private final List<AcceptedConnection> accepted = new CopyOnWriteArrayList<>();
    private final Map<AcceptedConnection, String> closed = new ConcurrentHashMap<>();
    private final AtomicInteger closedCalls = new AtomicInteger();
    private final AtomicReference<AcceptedConnection> lastCallConnection = new AtomicReference<>();
    private final List<RpcChannel> channels = new CopyOnWriteArrayList<>();
    private RpcServer server;

    private final AcceptedConnection.Listener recorder = new AcceptedConnection.Listener()
    {
        @Override
        public void connectionAccepted(final AcceptedConnection connection)
        {
            connection.attach("connection-" + (accepted.size() + 1));
            accepted.add(connection);
        }

        @Override
        public void connectionClosed(final AcceptedConnection connection, final Throwable cause)
        {
            closedCalls.incrementAndGet();
            closed.put(connection, cause == null ? "orderly" : cause.toString());
        }
    };

    private void start(final AcceptedConnection.Listener... listeners)
    {
        final RpcServer.Builder builder = RpcServer.builder(uri).addService(ServiceDefinition.builder("reverb.test.Accepted")
            .addMethod(CALL, ServerCalls.unary(r -> RpcContext.current().flatMap(ctx ->
            {
                // "hold" waits for the gate; every call answers what its connection carries
                started.incrementAndGet();
                ctx.onCancel(cancelled::incrementAndGet);
                lastCallConnection.set(ctx.connection());
                final Mono<StringValue> answer = Mono.fromSupplier(() ->
                    StringValue.of(String.valueOf(ctx.connection().attachment())));
                return r.getValue().equals("hold") ? gate.asMono().then(answer) : answer;
            }))).build());
        for (final AcceptedConnection.Listener listener : listeners)
        {
            builder.addConnectionListener(listener);
        }
        server = builder.build().start();
    }

    private RpcChannel channel()
    {
        final RpcChannel channel = RpcChannel.builder(uri).build();
        channels.add(channel);
        return channel;
    }

    private static Mono<StringValue> call(final RpcChannel channel, final String what)
    {
        return channel.newUnaryCall(CALL, CallOptions.DEFAULT, StringValue.of(what));
    }

    private static String answer(final RpcChannel channel)
    {
        return call(channel, "x").block(TIMEOUT).getValue();
    }

    @AfterEach
    void tearDown() throws InterruptedException
    {
        gate.tryEmitEmpty();
        channels.forEach(RpcChannel::close);
        if (server != null)
        {
            server.shutdown(Duration.ZERO);
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
            Await.until("every accepted connection's end told", TIMEOUT, () -> closed.size() == accepted.size());
            assertThat(closedCalls.get()).as("one end per accepted connection").isEqualTo(accepted.size());
        }
    }

    @Test
    void shouldTellTheListenerOfEachConnectionAndGiveItsCallsTheirConnection()
    {
        start(recorder);
        final RpcChannel first = channel();
        final RpcChannel second = channel();

        assertThat(answer(first)).isEqualTo("connection-1");
        assertThat(answer(second)).isEqualTo("connection-2");
        assertThat(answer(first)).as("the same connection for the first channel's next call").isEqualTo("connection-1");
        assertThat(accepted).hasSize(2);
        assertThat(lastCallConnection.get()).isSameAs(accepted.get(0));
        assertThat(accepted.get(0).remoteAddress()).isNotNull();
        assertThat(accepted.get(0).localAddress()).isNotNull();
        assertThat(accepted.get(0).isOpen()).isTrue();

        first.close();
        Await.until("the first connection's end", TIMEOUT, () -> closed.containsKey(accepted.get(0)));
        assertThat(closed).doesNotContainKey(accepted.get(1));
        assertThat(accepted.get(0).isOpen()).isFalse();
        assertThat(answer(second)).isEqualTo("connection-2");
    }

    @Test
    void shouldTellEveryListenerInTheOrderAdded()
    {
        final List<String> order = new CopyOnWriteArrayList<>();
        start(recorder, new AcceptedConnection.Listener()
        {
            @Override
            public void connectionAccepted(final AcceptedConnection connection)
            {
                order.add("second saw " + connection.attachment());
            }

            @Override
            public void connectionClosed(final AcceptedConnection connection, final Throwable cause)
            {
                order.add("second saw the end of " + connection.attachment());
            }
        });
        final RpcChannel channel = channel();
        assertThat(answer(channel)).isEqualTo("connection-1");
        channel.close();
        Await.until("the end told", TIMEOUT, () -> order.size() == 2);
        assertThat(order).containsExactly("second saw connection-1", "second saw the end of connection-1");
    }

    @Test
    void shouldGoAwayOneConnectionLettingItsCallsFinish()
    {
        start(recorder);
        final RpcChannel first = channel();
        final RpcChannel second = channel();
        assertThat(answer(second)).isEqualTo("connection-1");
        final String[] held = new String[1];
        call(first, "hold").subscribe(v -> held[0] = v.getValue());
        Await.until("held call running", TIMEOUT, () -> started.get() == 2);
        final AcceptedConnection firstConnection = accepted.get(1);

        firstConnection.goAway();
        assertThat(firstConnection.isOpen()).as("closing began").isFalse();
        // the first channel's next call goes over a new connection; the held one finishes on the old
        Await.until("a new connection for the first channel", TIMEOUT, () ->
            "connection-3".equals(call(first, "x").onErrorResume(e -> Mono.empty()).map(StringValue::getValue)
                .block(TIMEOUT)));
        assertThat(closed).as("drained, not closed, while its call runs").doesNotContainKey(firstConnection);
        gate.tryEmitEmpty();
        Await.until("the held call answered", TIMEOUT, () -> held[0] != null);
        assertThat(held[0]).isEqualTo("connection-2");
        Await.until("the drained connection's end", TIMEOUT, () -> closed.containsKey(firstConnection));
        assertThat(closed.get(firstConnection)).isEqualTo("orderly");
        assertThat(closed).as("the other connection untouched").doesNotContainKey(accepted.get(0));
        assertThat(cancelled.get()).isZero();
    }

    @Test
    void shouldCloseOneConnectionNowEndingItsCallsWithTheStatus()
    {
        start(recorder);
        final RpcChannel first = channel();
        final RpcChannel second = channel();
        assertThat(answer(second)).isEqualTo("connection-1");
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        call(first, "hold").subscribe(v -> { }, failure::set);
        Await.until("held call running", TIMEOUT, () -> started.get() == 2);

        accepted.get(1).closeNow(Status.UNAVAILABLE.withDescription("closed by the test"));
        Await.until("the held call failed", TIMEOUT, () -> failure.get() != null);
        assertThat(failure.get()).isInstanceOf(RpcException.class);
        assertThat(((RpcException)failure.get()).status().code()).isEqualTo(StatusCode.UNAVAILABLE);
        Await.until("its handler cancelled", TIMEOUT, () -> cancelled.get() == 1);
        Await.until("the connection's end", TIMEOUT, () -> closed.containsKey(accepted.get(1)));
        assertThat(closed).doesNotContainKey(accepted.get(0));
        assertThat(answer(second)).isEqualTo("connection-1");
    }

    @Test
    void shouldRefuseANonOkStatusForCloseNow()
    {
        start(recorder);
        assertThat(answer(channel())).isEqualTo("connection-1");
        final IllegalArgumentException e = catchThrowableOfType(IllegalArgumentException.class,
            () -> accepted.get(0).closeNow(Status.OK));
        assertThat(e).hasMessageContaining("not OK");
        assertThat(accepted.get(0).isOpen()).isTrue();
    }

    @Test
    void shouldRefuseTheConnectionWhenAListenerThrowsAndTellThoseBeforeItOfItsEnd()
    {
        final AtomicInteger refusals = new AtomicInteger();
        start(recorder, new AcceptedConnection.Listener()
        {
            @Override
            public void connectionAccepted(final AcceptedConnection connection)
            {
                refusals.incrementAndGet();
                throw new IllegalStateException("test refuses every connection");
            }

            @Override
            public void connectionClosed(final AcceptedConnection connection, final Throwable cause)
            {
                throw new AssertionError("never accepted, so never told of an end");
            }
        });
        final RpcException e = catchThrowableOfType(RpcException.class, () -> call(channel(), "x").block(TIMEOUT));
        assertThat(e.status().code()).isEqualTo(StatusCode.UNAVAILABLE);
        assertThat(started.get()).as("no handler ran").isZero();
        assertThat(refusals.get()).isPositive();
        Await.until("the first listener told of each refused connection's end", TIMEOUT,
            () -> closed.size() == accepted.size());
        assertThat(closed.values()).allSatisfy(cause -> assertThat(cause).contains("connection listener failed"));
    }
}
