package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.retry.AttemptFailure;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import io.reverb.rpc.transport.inproc.InprocTransportProvider;
import io.reverb.rpc.transport.stream.ClientStream;
import io.reverb.rpc.transport.stream.ClientStreamListener;
import io.reverb.rpc.transport.stream.ClientTransport;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * The published connection-level API ({@link RpcClientConnection}): one connection to one address, connected once,
 * calls of every kind, GOAWAY and loss reported to its listener, graceful shutdown and close, and never a reconnect
 * of its own.
 */
class ClientConnectionApiTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final String SERVICE = "reverb.test.Connection";
    private static final MethodDescriptor<StringValue, StringValue> CALL = method("Call", MethodDescriptor.MethodType.UNARY);
    private static final MethodDescriptor<StringValue, StringValue> SPLIT =
        method("Split", MethodDescriptor.MethodType.SERVER_STREAMING);

    private final String name = "connection-api-" + IDS.incrementAndGet();
    private final String uri = "inproc://" + name;
    private final Sinks.Empty<Void> gate = Sinks.empty();
    private final Sinks.Empty<Void> secondGate = Sinks.empty();
    private final AtomicInteger started = new AtomicInteger();
    private final List<Status> lost = new CopyOnWriteArrayList<>();
    private RpcServer server;
    private RpcClientConnection connection;

    private static MethodDescriptor<StringValue, StringValue> method(final String name,
        final MethodDescriptor.MethodType type)
    {
        return MethodDescriptor.<StringValue, StringValue>newBuilder().type(type)
            .fullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
            .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .build();
    }

    @BeforeEach
    void startServer()
    {
        // "hold" waits for the gate, "hold2" for the second gate; anything else answers at once
        server = RpcServer.builder(uri).addService(ServiceDefinition.builder(SERVICE)
            .addMethod(CALL, ServerCalls.unary(r ->
            {
                started.incrementAndGet();
                return r.getValue().equals("hold") ? gate.asMono().then(Mono.just(r)) :
                    r.getValue().equals("hold2") ? secondGate.asMono().then(Mono.just(r)) : Mono.just(r);
            }))
            .addMethod(SPLIT, ServerCalls.serverStreaming(r -> Flux.fromArray(r.getValue().split(","))
                .map(StringValue::of)))
            .build()).build().start();
        connection = RpcClientConnection.create(RpcChannel.builder(uri));
        connection.onLost(lost::add);
    }

    @AfterEach
    void tearDown() throws InterruptedException
    {
        gate.tryEmitEmpty();
        secondGate.tryEmitEmpty();
        connection.close();
        server.shutdown(Duration.ZERO);
        assertThat(server.awaitTermination(TIMEOUT)).isTrue();
    }

    private Mono<StringValue> call(final String what)
    {
        return connection.newUnaryCall(CALL, CallOptions.DEFAULT, StringValue.of(what));
    }

    private static void assertNeverSent(final Throwable t)
    {
        assertThat(t).isInstanceOf(RpcException.class);
        final Status status = ((RpcException)t).status();
        assertThat(status.code()).isEqualTo(StatusCode.UNAVAILABLE);
        // the server never saw it: its owner may send it on another connection
        assertThat(CallFailureCause.attemptFailure(status)).isNotEqualTo(AttemptFailure.PROCESSED);
    }

    @Test
    void shouldConnectOnceAndCarryCallsOfEveryShape() throws Exception
    {
        assertThat(connection.state()).isEqualTo(RpcClientConnection.State.IDLE);
        assertThat(connection.uri()).isEqualTo(uri);
        connection.connect().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        assertThat(connection.state()).isEqualTo(RpcClientConnection.State.READY);
        assertThat(connection.connect()).as("the same outcome, no second attempt").isCompleted();

        assertThat(call("a").block(TIMEOUT)).isEqualTo(StringValue.of("a"));
        StepVerifier.create(connection.newCall(SPLIT, CallOptions.DEFAULT, Mono.just(StringValue.of("x,y,z"))))
            .expectNext(StringValue.of("x"), StringValue.of("y"), StringValue.of("z")).expectComplete().verify(TIMEOUT);

        final ClientCallContext unary = new ClientCallContext(CALL, CallOptions.DEFAULT);
        // to the end, not block(): block() returns at the response, and the status is recorded with the end
        StepVerifier.create(connection.newUnaryCall(CALL, CallOptions.DEFAULT, StringValue.of("b"), unary))
            .expectNext(StringValue.of("b")).expectComplete().verify(TIMEOUT);
        assertThat(unary.status().isOk()).isTrue();
        final ClientCallContext streaming = new ClientCallContext(SPLIT, CallOptions.DEFAULT);
        StepVerifier.create(connection.newCall(SPLIT, CallOptions.DEFAULT, Mono.just(StringValue.of("p,q")), streaming))
            .expectNextCount(2).expectComplete().verify(TIMEOUT);
        assertThat(streaming.status().isOk()).isTrue();
        assertThat(lost).isEmpty();
    }

    @Test
    void shouldCarryStreamsOfTheStreamSpiAndRefuseThemOnceItTakesNoCalls() throws Exception
    {
        connection.connect().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        final ClientTransport transport = ClientTransport.of(connection);

        final StreamRecorder unary = new StreamRecorder();
        final ClientStream<StringValue> call = transport.newStream(CALL, CallOptions.DEFAULT, unary);
        call.request(2);
        call.writeMessage(StringValue.of("u"));
        call.halfClose();
        assertThat(unary.closed.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS).isOk()).isTrue();
        assertThat(unary.messages).containsExactly(StringValue.of("u"));

        final StreamRecorder streaming = new StreamRecorder();
        final ClientStream<StringValue> split = transport.newStream(SPLIT, CallOptions.DEFAULT, streaming);
        split.request(1);
        split.writeMessage(StringValue.of("x,y,z"));
        split.halfClose();
        split.request(2);
        assertThat(streaming.closed.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS).isOk()).isTrue();
        assertThat(streaming.messages).containsExactly(StringValue.of("x"), StringValue.of("y"), StringValue.of("z"));

        connection.shutdown();
        final StreamRecorder refused = new StreamRecorder();
        transport.newStream(CALL, CallOptions.DEFAULT, refused);
        assertThat(refused.closed).as("closed at once, on this thread").isCompleted();
        assertNeverSent(refused.closed.get().asException());
    }

    /** Records a stream's messages (parsed in the callback: the buffer is the transport's) and its one end. */
    private static final class StreamRecorder implements ClientStreamListener
    {
        final List<StringValue> messages = new CopyOnWriteArrayList<>();
        final CompletableFuture<Status> closed = new CompletableFuture<>();

        @Override
        public void headersRead(final Metadata headers)
        {
        }

        @Override
        public void messageRead(final ByteBuffer message)
        {
            messages.add(CALL.responseMarshaller().read(message));
        }

        @Override
        public void onReady()
        {
        }

        @Override
        public void closed(final Status status, final Metadata trailers)
        {
            assertThat(closed.complete(status)).as("closed once").isTrue();
        }
    }

    @Test
    void shouldAnswerPingsWhileConnectedAndFailThemOtherwise() throws Exception
    {
        assertThatThrownBy(() -> connection.ping().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).cause()
            .isInstanceOfSatisfying(RpcException.class, e -> assertThat(e.status().code()).isEqualTo(StatusCode.UNAVAILABLE));
        connection.connect().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        for (int i = 0; i < 3; i++)
        {
            assertThat(connection.ping().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isNotNegative();
        }
        InprocTransportProvider.freezeServer(name, true); // the server reads nothing: this PING stays unanswered
        final CompletableFuture<Long> unanswered = connection.ping();
        connection.close();
        assertThatThrownBy(() -> unanswered.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).cause()
            .isInstanceOfSatisfying(RpcException.class, e -> assertThat(e.status().code()).isEqualTo(StatusCode.UNAVAILABLE));
        InprocTransportProvider.freezeServer(name, false);
    }

    @Test
    void shouldConnectForTheFirstCallWhenNotAskedBefore()
    {
        assertThat(call("first").block(TIMEOUT)).isEqualTo(StringValue.of("first"));
        assertThat(connection.state()).isEqualTo(RpcClientConnection.State.READY);
    }

    @Test
    void shouldDrainOnGoAwayReportItAndNeverReconnect() throws Exception
    {
        connection.connect().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        final CompletableFuture<StringValue> held = call("hold").toFuture();
        Await.until("the held call runs on the server", TIMEOUT, () -> started.get() == 1);

        server.shutdown(TIMEOUT); // graceful: GOAWAY, the running call may finish
        Await.until("GOAWAY reported", TIMEOUT, () -> lost.size() == 1);
        assertThat(lost.get(0).code()).isEqualTo(StatusCode.UNAVAILABLE);
        assertThat(connection.state()).isIn(RpcClientConnection.State.DRAINING, RpcClientConnection.State.CLOSED);
        assertThatThrownBy(() -> call("after goaway").block(TIMEOUT)).satisfies(ClientConnectionApiTest::assertNeverSent);

        gate.tryEmitEmpty();
        assertThat(held.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(StringValue.of("hold"));
        Await.until("closed once drained", TIMEOUT, () -> connection.state() == RpcClientConnection.State.CLOSED);
        assertThatThrownBy(() -> call("later").block(TIMEOUT)).satisfies(ClientConnectionApiTest::assertNeverSent);
        assertThat(started.get()).as("no call after GOAWAY reached a server").isEqualTo(1);
        assertThat(lost).as("reported once").hasSize(1);
    }

    @Test
    void shouldFailRunningCallsAndReportTheLossWhenTheConnectionDies() throws Exception
    {
        connection.connect().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        final CompletableFuture<StringValue> held = call("hold").toFuture();
        Await.until("the held call runs on the server", TIMEOUT, () -> started.get() == 1);

        assertThat(InprocTransportProvider.killConnections(name)).isEqualTo(1);
        Await.until("loss reported", TIMEOUT, () -> lost.size() == 1);
        assertThatThrownBy(() -> held.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).cause()
            .isInstanceOfSatisfying(RpcException.class, e -> assertThat(e.status().code()).isEqualTo(StatusCode.UNAVAILABLE));
        Await.until("closed", TIMEOUT, () -> connection.state() == RpcClientConnection.State.CLOSED);
        // the server is still there, but this connection does not come back: its owner makes another
        assertThatThrownBy(() -> call("again").block(TIMEOUT)).satisfies(ClientConnectionApiTest::assertNeverSent);
        try (RpcClientConnection next = RpcClientConnection.create(RpcChannel.builder(uri)))
        {
            assertThat(next.newUnaryCall(CALL, CallOptions.DEFAULT, StringValue.of("again")).block(TIMEOUT))
                .isEqualTo(StringValue.of("again"));
        }
    }

    @Test
    void shouldLetRunningCallsFinishOnShutdownAndFailThemOnClose() throws Exception
    {
        connection.connect().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        final CompletableFuture<StringValue> held = call("hold").toFuture();
        Await.until("the held call runs on the server", TIMEOUT, () -> started.get() == 1);

        connection.shutdown();
        assertThat(connection.state()).isEqualTo(RpcClientConnection.State.DRAINING);
        assertThat(lost).hasSize(1);
        assertThatThrownBy(() -> call("refused").block(TIMEOUT)).satisfies(ClientConnectionApiTest::assertNeverSent);
        gate.tryEmitEmpty();
        assertThat(held.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(StringValue.of("hold"));
        Await.until("closed once drained", TIMEOUT, () -> connection.state() == RpcClientConnection.State.CLOSED);

        try (RpcClientConnection other = RpcClientConnection.create(RpcChannel.builder(uri)))
        {
            final CompletableFuture<StringValue> running = other.newUnaryCall(CALL, CallOptions.DEFAULT,
                StringValue.of("hold2")).toFuture();
            Await.until("the second held call runs on the server", TIMEOUT, () -> started.get() == 2);
            other.close();
            assertThat(other.state()).isEqualTo(RpcClientConnection.State.CLOSED);
            assertThatThrownBy(() -> running.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).cause()
                .isInstanceOfSatisfying(RpcException.class,
                    e -> assertThat(e.status().code()).isEqualTo(StatusCode.UNAVAILABLE));
        }
    }

    @Test
    void shouldReportALossThatHappenedBeforeTheListenerWasSet() throws Exception
    {
        connection.connect().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        connection.close();
        final List<Status> late = new CopyOnWriteArrayList<>();
        connection.onLost(late::add);
        assertThat(late).hasSize(1);
        assertThat(late.get(0).code()).isEqualTo(StatusCode.UNAVAILABLE);
    }
}
