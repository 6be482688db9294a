package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Int32Value;
import com.google.protobuf.MessageLite;
import com.google.protobuf.StringValue;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Issue 25 item 4, the part a dispatch-time deadline check cannot cover: a server frozen (SIGSTOP) and thawed reads
 * CALL frames whose timeout, measured from their arrival, has not passed; the CANCEL each caller sent when its own
 * deadline passed lies a few messages further in the same receive batch. With handlers on the transport's thread the
 * server used to run every such handler inline on reading its CALL, before reading the CANCEL. Now a call starts at
 * the end of the batch (the engine's batch end, {@code ConnectionHandler.onReadComplete}), so a call the batch also
 * cancels never runs its handler.
 *
 * <p>Over {@code shm://}: a send is in the peer's receive queue when it is posted, so once the client has posted every
 * CALL and CANCEL (counted in its engine statistics) the frozen server's queue holds all of them, and its first poll
 * after the thaw takes them as one batch (fewer than a poll's 64 completions). Nothing here is timed: the freeze lasts
 * until the client has counted every call failed and every message posted. Over {@code tcp://} the server's reads of
 * the socket may split the batch anywhere, so the count there would depend on timing; it is not run there.
 */
class CancelledInReadBatchTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    /** The calls that expire while the server is frozen: few enough for one poll of the server's completions. */
    private static final int EXPIRING = 10;
    /** The calls that do not (a generous deadline), frozen and thawed with them. */
    private static final int LIVE = 5;
    private static final String SERVICE = "reverb.test.Batch";
    private static final MethodDescriptor<StringValue, StringValue> ECHO = method("Echo", MethodDescriptor.MethodType.UNARY,
        StringValue.getDefaultInstance());
    private static final MethodDescriptor<Int32Value, Int32Value> SUM = method("Sum",
        MethodDescriptor.MethodType.CLIENT_STREAMING, Int32Value.getDefaultInstance());

    private final String uri = "shm://batch-end-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    private final AtomicInteger echoHandlers = new AtomicInteger();
    private final AtomicInteger sumHandlers = new AtomicInteger();
    private final AtomicReference<Thread> lastHandlerThread = new AtomicReference<>();
    private final SimpleMeterRegistry serverMetrics = new SimpleMeterRegistry();
    private RpcServer server;
    private RpcChannel channel;

    private static <T extends MessageLite> MethodDescriptor<T, T> method(final String name,
        final MethodDescriptor.MethodType type, final T prototype)
    {
        return MethodDescriptor.<T, T>newBuilder()
            .type(type)
            .fullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
            .requestMarshaller(ProtoMarshaller.of(prototype))
            .responseMarshaller(ProtoMarshaller.of(prototype))
            .build();
    }

    private void start()
    {
        server = RpcServer.builder(uri)
            .addService(ServiceDefinition.builder(SERVICE)
                .addMethod(ECHO, ServerCalls.unary(r ->
                {
                    echoHandlers.incrementAndGet();
                    lastHandlerThread.set(Thread.currentThread());
                    return Mono.just(r);
                }))
                .addMethod(SUM, ServerCalls.clientStreaming(requests ->
                {
                    sumHandlers.incrementAndGet();
                    return requests.reduce(0, (a, b) -> a + b.getValue()).map(Int32Value::of);
                }))
                .build())
            .meterRegistry(serverMetrics)
            .build()
            .start();
        // no keep-alive PING: the test counts every message the client sends, however slowly it runs
        channel = RpcChannel.builder(uri).keepAlive(Duration.ZERO, Duration.ofSeconds(10)).build();
    }

    @AfterEach
    void tearDown() throws Exception
    {
        if (server != null)
        {
            EngineTransportTestHooks.freezeServer(uri, false);
        }
        if (channel != null)
        {
            channel.close();
        }
        if (server != null)
        {
            server.shutdown(Duration.ZERO);
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
            final ResourceUsage usage = Transports.providerFor(Transports.parse(uri)).resourceUsage();
            Await.until("transport resources returned: " + usage.describe(), TIMEOUT,
                () -> usage.buffersInUse() == 0 && usage.bytesInUse() == 0);
        }
    }

    private StringValue echo(final String text, final Duration deadline)
    {
        return ClientCalls.unary(channel, ECHO, CallOptions.DEFAULT.withDeadlineAfter(deadline), StringValue.of(text))
            .block(TIMEOUT);
    }

    private double activeServerCalls()
    {
        final Gauge active = serverMetrics.find("reverb.server.calls.active").gauge();
        return active == null ? 0 : active.value();
    }

    @Test
    void callsCancelledInTheSameReadBatchNeverRunTheirHandlers() throws Exception
    {
        start();
        // two calls before the freeze: the connection is up, and the second tells how many messages a call sends
        assertThat(echo("first", TIMEOUT).getValue()).isEqualTo("first");
        final long afterFirst = EngineTransportTestHooks.clientMessagesSent(uri);
        assertThat(echo("second", TIMEOUT).getValue()).isEqualTo("second");
        final long afterSecond = EngineTransportTestHooks.clientMessagesSent(uri);
        final long perCall = afterSecond - afterFirst;
        assertThat(perCall).as("messages a unary call sends").isPositive();
        assertThat(EngineTransportTestHooks.freezeServer(uri, true)).as("server connections frozen").isEqualTo(1);

        final List<CompletableFuture<StringValue>> expiring = new ArrayList<>();
        for (int i = 0; i < EXPIRING; i++)
        {
            // a second: each call sends its CALL before it expires, however loaded the machine (the count needs it)
            expiring.add(ClientCalls.unary(channel, ECHO, CallOptions.DEFAULT.withDeadlineAfter(Duration.ofSeconds(1)),
                StringValue.of("expiring " + i)).toFuture());
        }
        final List<CompletableFuture<StringValue>> live = new ArrayList<>();
        for (int i = 0; i < LIVE; i++)
        {
            live.add(ClientCalls.unary(channel, ECHO, CallOptions.DEFAULT.withDeadlineAfter(Duration.ofMinutes(5)),
                StringValue.of("live " + i)).toFuture());
        }
        for (final CompletableFuture<StringValue> call : expiring)
        {
            final Throwable failure = call.handle((v, t) -> t).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            assertThat(failure).isInstanceOf(RpcException.class);
            assertThat(((RpcException)failure).status().code()).isEqualTo(StatusCode.DEADLINE_EXCEEDED);
        }
        // every CALL (with its request) and every expired call's CANCEL is in the frozen server's receive queue
        final long expected = afterSecond + (EXPIRING + LIVE) * perCall + EXPIRING;
        Await.until("the client posted every CALL and CANCEL", TIMEOUT,
            () -> EngineTransportTestHooks.clientMessagesSent(uri) == expected);
        assertThat(echoHandlers.get()).as("handlers run while frozen").isEqualTo(2);

        EngineTransportTestHooks.freezeServer(uri, false);
        for (int i = 0; i < LIVE; i++)
        {
            assertThat(live.get(i).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS).getValue()).isEqualTo("live " + i);
        }
        // a call after the thaw: the server has read everything before it (one connection, in order)
        assertThat(echo("after", TIMEOUT).getValue()).isEqualTo("after");
        Await.until("the server ended every call", TIMEOUT, () -> activeServerCalls() == 0);
        assertThat(echoHandlers.get())
            .as("handlers run: 2 before, " + LIVE + " live, 1 after; none for the " + EXPIRING + " calls cancelled " +
                "in the batch that opened them")
            .isEqualTo(2 + LIVE + 1);
        assertThat(EngineTransportTestHooks.clientMessagesSent(uri)).as("no message sent but those counted")
            .isEqualTo(expected + perCall);
    }

    @Test
    void framesOfACallWaitingForItsBatchEndReachItsHandler() throws Exception
    {
        start();
        assertThat(echo("warm-up", TIMEOUT).getValue()).isEqualTo("warm-up");
        assertThat(EngineTransportTestHooks.freezeServer(uri, true)).isEqualTo(1);
        // the CALL, three MESSAGEs and the HALF_CLOSE are read in one batch, before the call starts
        final CompletableFuture<Int32Value> sum = ClientCalls.clientStreaming(channel, SUM,
            CallOptions.DEFAULT.withDeadlineAfter(Duration.ofMinutes(5)),
            Flux.just(Int32Value.of(1), Int32Value.of(2), Int32Value.of(39))).toFuture();
        final CompletableFuture<StringValue> unary = ClientCalls.unary(channel, ECHO,
            CallOptions.DEFAULT.withDeadlineAfter(Duration.ofMinutes(5)), StringValue.of("held")).toFuture();
        EngineTransportTestHooks.freezeServer(uri, false);
        assertThat(sum.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS).getValue()).isEqualTo(42);
        assertThat(unary.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS).getValue()).isEqualTo("held");
        assertThat(sumHandlers.get()).isEqualTo(1);
        assertThat(echoHandlers.get()).isEqualTo(2);
    }

    @Test
    void aCallStillRunsItsHandlerOnTheTransportThread()
    {
        start();
        for (int i = 0; i < 3; i++)
        {
            assertThat(echo("inline " + i, TIMEOUT).getValue()).isEqualTo("inline " + i);
            // started at the end of the poll that read it, on the same poller thread: no hand-off, no added wait
            assertThat(lastHandlerThread.get().getName()).contains("-poller-");
        }
        assertThat(echoHandlers.get()).isEqualTo(3);
    }
}
