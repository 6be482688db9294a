package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import io.reverb.rpc.transport.inproc.InprocTransportProvider;
import io.reverb.rpc.transport.stream.ClientStream;
import io.reverb.rpc.transport.stream.ClientStreamListener;
import io.reverb.rpc.transport.stream.ClientTransport;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * Keep-alive on time (issue 25, item 4): a PING not answered closes the connection keep-alive timeout after it left
 * (not at the next tick), and with keep-alive without calls an idle channel notices a dead peer too. The channel's
 * timers run on a virtual clock, so the tests count what happened at which virtual instant instead of timing;
 * {@code inproc://}'s freeze hook is a peer that hangs without closing.
 */
class KeepAliveTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final Duration INTERVAL = Duration.ofSeconds(10);
    private static final Duration PING_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration MARGIN = Duration.ofMillis(1);
    private static final MethodDescriptor<StringValue, StringValue> CALL = MethodDescriptor.<StringValue, StringValue>newBuilder()
        .type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.KeepAlive", "Call"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .build();

    private final String name = "keepalive-" + IDS.incrementAndGet();
    private final String uri = "inproc://" + name;
    private final Sinks.Empty<Void> gate = Sinks.empty();
    private final Sinks.Empty<Void> otherGate = Sinks.empty();
    private final AtomicInteger started = new AtomicInteger();
    private final AtomicInteger connectionsLost = new AtomicInteger();
    private final VirtualTimeScheduler clock = VirtualTimeScheduler.create();
    private RpcServer server;
    private RpcChannel channel;

    private void start(final UnaryOperator<RpcServer.Builder> server, final UnaryOperator<RpcChannel.Builder> channel)
    {
        // "hold" waits for the gate, "hold other" for the other gate; anything else answers at once
        this.server = server.apply(RpcServer.builder(uri).addService(ServiceDefinition.builder("reverb.test.KeepAlive")
            .addMethod(CALL, ServerCalls.unary(r ->
            {
                started.incrementAndGet();
                if (r.getValue().startsWith("hold"))
                {
                    return (r.getValue().equals("hold") ? gate : otherGate).asMono().then(Mono.just(r));
                }
                return Mono.just(r);
            })).build())).build().start();
        this.channel = channel.apply(RpcChannel.builder(uri)).build();
        countConnectionsLost(this.channel.state(false));
    }

    /** Counts the channel's moves out of READY (its connection stopped taking calls), as grpc-java users watch. */
    private void countConnectionsLost(final ConnectivityState seen)
    {
        channel.notifyWhenStateChanged(seen, () ->
        {
            final ConnectivityState now = channel.state(false);
            if (seen == ConnectivityState.READY)
            {
                connectionsLost.incrementAndGet();
            }
            if (now != ConnectivityState.SHUTDOWN)
            {
                countConnectionsLost(now);
            }
        });
    }

    @AfterEach
    void tearDown() throws InterruptedException
    {
        InprocTransportProvider.freezeServer(name, false);
        gate.tryEmitEmpty();
        otherGate.tryEmitEmpty();
        if (channel != null)
        {
            channel.close();
        }
        if (server != null)
        {
            server.shutdown(Duration.ZERO);
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
        clock.dispose();
    }

    private Mono<StringValue> call(final String what)
    {
        return channel.newUnaryCall(CALL, CallOptions.DEFAULT, StringValue.of(what));
    }

    @Test
    void shouldCloseASilentConnectionKeepAliveTimeoutAfterThePingNotAtTheNextTick() throws Exception
    {
        start(b -> b, b -> b.keepAlive(INTERVAL, PING_TIMEOUT).timerScheduler(clock));
        final CompletableFuture<Throwable> failure = new CompletableFuture<>();
        call("hold").subscribe(v -> failure.complete(null), failure::complete);
        Await.until("the call runs on the server", TIMEOUT, () -> started.get() == 1);
        InprocTransportProvider.freezeServer(name, true);

        clock.advanceTimeBy(INTERVAL); // the PING leaves and is never answered
        clock.advanceTimeBy(PING_TIMEOUT.minus(MARGIN));
        assertThat(failure).as("still open just before interval + timeout").isNotDone();
        clock.advanceTimeBy(MARGIN.multipliedBy(2)); // interval + timeout + 1 ms: well before the next tick (20 s)

        final Throwable t = failure.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        assertThat(t).isInstanceOf(RpcException.class);
        assertThat(((RpcException)t).status().code()).isEqualTo(StatusCode.UNAVAILABLE);
        assertThat(((RpcException)t).status().description()).contains("keep-alive");
        Await.until("the channel dropped the connection", TIMEOUT, () -> connectionsLost.get() == 1);
    }

    @Test
    void shouldKeepAConnectionWhosePingsAreAnswered() throws Exception
    {
        start(b -> b, b -> b.keepAlive(INTERVAL, PING_TIMEOUT).timerScheduler(clock));
        final CompletableFuture<Throwable> failure = new CompletableFuture<>();
        call("hold").subscribe(v -> failure.complete(null), failure::complete);
        Await.until("the call runs on the server", TIMEOUT, () -> started.get() == 1);
        for (int i = 0; i < 5; i++)
        {
            // to the next tick: a PING leaves (its timeout falls 5 s later, before the tick after); the server answers
            // it on its own threads, and the answer is in once a call made now completes (frames stay in order)
            clock.advanceTimeBy(INTERVAL);
            assertThat(call("x").block(TIMEOUT)).isEqualTo(StringValue.of("x"));
        }
        clock.advanceTimeBy(PING_TIMEOUT.plus(MARGIN)); // past the last PING's timeout
        assertThat(failure).as("the held call still runs").isNotDone();
        assertThat(connectionsLost.get()).isZero();
        gate.tryEmitEmpty();
        assertThat(failure.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isNull();
    }

    @Test
    void shouldTakeAnyFrameFromTheServerAfterThePingAsItsAnswer() throws Exception
    {
        // On a slow link a PING's answer queues behind the responses sent before it (the rdma-vm test's 1 MiB calls
        // over tcp:// lost their connection this way): as grpc-java's KeepAliveManager.onDataReceived, whatever the
        // server sends after the PING left shows it alive. Frozen, the server gets nothing (no PING) but still sends.
        start(b -> b, b -> b.keepAlive(INTERVAL, PING_TIMEOUT).timerScheduler(clock));
        final CompletableFuture<Throwable> held = new CompletableFuture<>();
        call("hold").subscribe(v -> held.complete(null), held::complete);
        final CompletableFuture<StringValue> other = call("hold other").toFuture();
        Await.until("both calls run on the server", TIMEOUT, () -> started.get() == 2);
        InprocTransportProvider.freezeServer(name, true);

        clock.advanceTimeBy(INTERVAL); // the PING leaves; the frozen server never answers it
        otherGate.tryEmitEmpty(); // but it answers a call: frames from the server after the PING
        assertThat(other.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(StringValue.of("hold other"));
        clock.advanceTimeBy(PING_TIMEOUT.plus(MARGIN)); // past the PING's timeout
        assertThat(held).as("the connection survives its PING's timeout").isNotDone();
        assertThat(connectionsLost.get()).isZero();

        // nothing more from the server: the next tick's PING goes unanswered and its timeout closes the connection
        clock.advanceTimeBy(INTERVAL.minus(PING_TIMEOUT).minus(MARGIN)); // the next tick, at 2 x interval
        clock.advanceTimeBy(PING_TIMEOUT.plus(MARGIN));
        final Throwable t = held.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        assertThat(t).isInstanceOf(RpcException.class);
        assertThat(((RpcException)t).status().description()).contains("keep-alive");
        Await.until("the channel dropped the connection", TIMEOUT, () -> connectionsLost.get() == 1);
    }

    @Test
    void shouldTakeAnyFrameAfterThePingAsItsAnswerForStreamsOfTheStreamSpi() throws Exception
    {
        // grpc-java's calls over Reverb are streams of the stream SPI (ClientTransport.newStream), not calls: their
        // frames show the server alive just as calls' do, and an unanswered PING still ends them
        start(b -> b, b -> b);
        final RpcClientConnection connection = RpcClientConnection.create(
            RpcChannel.builder(uri).keepAlive(INTERVAL, PING_TIMEOUT).timerScheduler(clock));
        try
        {
            final AtomicInteger lost = new AtomicInteger();
            connection.onLost(why -> lost.incrementAndGet());
            connection.connect().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            final ClientTransport transport = ClientTransport.of(connection);
            final CompletableFuture<Status> held = stream(transport, "hold");
            final CompletableFuture<Status> other = stream(transport, "hold other");
            Await.until("both streams run on the server", TIMEOUT, () -> started.get() == 2);
            InprocTransportProvider.freezeServer(name, true);

            clock.advanceTimeBy(INTERVAL); // the PING leaves; the frozen server never answers it
            otherGate.tryEmitEmpty(); // but it answers a stream: frames from the server after the PING
            assertThat(other.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS).code()).isEqualTo(StatusCode.OK);
            clock.advanceTimeBy(PING_TIMEOUT.plus(MARGIN)); // past the PING's timeout
            assertThat(held).as("the connection survives its PING's timeout").isNotDone();
            assertThat(lost.get()).isZero();

            // nothing more from the server: the next tick's PING goes unanswered and its timeout ends the stream
            clock.advanceTimeBy(INTERVAL.minus(PING_TIMEOUT).minus(MARGIN)); // the next tick, at 2 x interval
            clock.advanceTimeBy(PING_TIMEOUT.plus(MARGIN));
            final Status ended = held.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            assertThat(ended.code()).isEqualTo(StatusCode.UNAVAILABLE);
            assertThat(ended.description()).contains("keep-alive");
            Await.until("the connection is lost", TIMEOUT, () -> lost.get() == 1);
        }
        finally
        {
            connection.close();
        }
    }

    /** A unary stream of the stream SPI with one request; its future completes with the status it closed with. */
    private static CompletableFuture<Status> stream(final ClientTransport transport, final String what)
    {
        final CompletableFuture<Status> closed = new CompletableFuture<>();
        final ClientStream<StringValue> stream = transport.newStream(CALL, CallOptions.DEFAULT, new ClientStreamListener()
        {
            @Override
            public void headersRead(final Metadata headers)
            {
            }

            @Override
            public void messageRead(final ByteBuffer message)
            {
            }

            @Override
            public void onReady()
            {
            }

            @Override
            public void closed(final Status status, final Metadata trailers)
            {
                closed.complete(status);
            }
        });
        stream.request(1);
        stream.writeMessage(StringValue.of(what));
        stream.halfClose();
        return closed;
    }

    @Test
    void shouldNoticeADeadPeerOnAnIdleConnectionWithKeepAliveWithoutCalls() throws Exception
    {
        start(b -> b, b -> b.keepAlive(INTERVAL, PING_TIMEOUT).keepAliveWithoutCalls(true).timerScheduler(clock));
        assertThat(call("x").block(TIMEOUT)).isEqualTo(StringValue.of("x"));
        InprocTransportProvider.freezeServer(name, true);

        clock.advanceTimeBy(INTERVAL);
        clock.advanceTimeBy(PING_TIMEOUT.minus(MARGIN));
        assertThat(connectionsLost.get()).as("still connected just before interval + timeout").isZero();
        clock.advanceTimeBy(MARGIN.multipliedBy(2));
        Await.until("the idle channel noticed the dead peer", TIMEOUT, () -> connectionsLost.get() == 1);

        // the next call connects anew
        InprocTransportProvider.freezeServer(name, false);
        assertThat(call("again").block(TIMEOUT)).isEqualTo(StringValue.of("again"));
    }

    @Test
    void shouldNotPingAnIdleConnectionByDefault()
    {
        start(b -> b, b -> b.keepAlive(INTERVAL, PING_TIMEOUT).timerScheduler(clock));
        assertThat(call("x").block(TIMEOUT)).isEqualTo(StringValue.of("x"));
        InprocTransportProvider.freezeServer(name, true);
        clock.advanceTimeBy(INTERVAL.multipliedBy(10));
        // nothing was sent, so nothing went unanswered: off by default, as in grpc-java
        assertThat(connectionsLost.get()).isZero();
    }

    @Test
    void shouldNotCountACallAsOpenOnceItsSubscriberSawItEnd()
    {
        // the subscriber acts on the end at once, on the thread that delivers it: the tick it runs must find no call
        // open (a PING sent then would go unanswered by the frozen server and cost the idle connection)
        start(b -> b, b -> b.keepAlive(INTERVAL, PING_TIMEOUT).timerScheduler(clock));
        final StringValue reply = call("x").doOnTerminate(() ->
        {
            InprocTransportProvider.freezeServer(name, true);
            clock.advanceTimeBy(INTERVAL);
        }).block(TIMEOUT);
        assertThat(reply).isEqualTo(StringValue.of("x"));
        clock.advanceTimeBy(PING_TIMEOUT.plus(MARGIN));
        assertThat(connectionsLost.get()).isZero();
    }

    @Test
    void shouldBeToldOffByAServerThatRefusesPingsWithoutCalls()
    {
        start(b -> b.permitKeepAliveWithoutCalls(false),
            b -> b.keepAlive(Duration.ofMillis(20), Duration.ofSeconds(10)).keepAliveWithoutCalls(true));
        assertThat(call("x").block(TIMEOUT)).isEqualTo(StringValue.of("x"));
        // the third idle PING strikes out: GOAWAY "too many pings", the connection closes
        Await.until("the server closed the idle pinger", TIMEOUT, () -> connectionsLost.get() >= 1);
        // the channel connects again for the next call
        assertThat(call("again").block(TIMEOUT)).isEqualTo(StringValue.of("again"));
    }
}
