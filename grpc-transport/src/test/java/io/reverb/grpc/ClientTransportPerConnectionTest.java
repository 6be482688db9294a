package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.grpc.ClientStreamTracer;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.internal.ClientStream;
import io.grpc.internal.ClientStreamListener;
import io.grpc.internal.ClientTransport;
import io.grpc.internal.DisconnectError;
import io.grpc.internal.ManagedClientTransport;
import io.grpc.stub.InternalClientCalls;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcClientConnection;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.transport.inproc.InprocTransportProvider;
import java.io.InputStream;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * One grpc-java client transport is one Reverb connection, as Netty's is one socket: {@code start} connects once,
 * {@code transportReady} when it is up, {@code transportShutdown} then {@code transportTerminated} when it is lost,
 * and the transport never connects again by itself (grpc-java's subchannel makes the next transport); {@code ping}
 * is a Reverb PING on the connection.
 */
class ClientTransportPerConnectionTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final long TIMEOUT_SECONDS = 20;
    private static final MethodDescriptor<StringValue, StringValue> ECHO = MethodDescriptor.<StringValue, StringValue>newBuilder()
        .type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.PerConnection", "Echo"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .build();

    private final String name = "transport-per-connection-" + IDS.incrementAndGet();
    private final String uri = "inproc://" + name;
    private final List<String> events = new CopyOnWriteArrayList<>();
    private final CountDownLatch ready = new CountDownLatch(1);
    private final CountDownLatch terminated = new CountDownLatch(1);
    private RpcServer server;
    private ReverbClientTransport transport;

    private final ManagedClientTransport.Listener listener = new ManagedClientTransport.Listener()
    {
        @Override
        public void transportShutdown(final Status status, final DisconnectError error)
        {
            events.add("shutdown " + status.getCode());
        }

        @Override
        public void transportTerminated()
        {
            events.add("terminated");
            terminated.countDown();
        }

        @Override
        public void transportReady()
        {
            events.add("ready");
            ready.countDown();
        }

        @Override
        public void transportInUse(final boolean inUse)
        {
        }
    };

    @BeforeEach
    void start()
    {
        server = RpcServer.builder(uri).addService(ServiceDefinition.builder("reverb.test.PerConnection")
            .addMethod(ECHO, ServerCalls.unary(Mono::just)).build()).build().start();
        transport = new ReverbClientTransport(new ReverbAddress(uri), "reverb", null, UnaryOperator.identity(),
            new ConcurrentHashMap<>(), null, null);
    }

    @AfterEach
    void stop() throws InterruptedException
    {
        transport.shutdownNow(Status.UNAVAILABLE.withDescription("test over"));
        server.shutdown(Duration.ZERO);
        assertThat(server.awaitTermination(Duration.ofSeconds(TIMEOUT_SECONDS))).isTrue();
    }

    @Test
    void shouldBeOneConnectionThatEndsTheTransportWhenLostAndNeverComesBack() throws Exception
    {
        transport.start(listener).run();
        assertThat(ready.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(transport.connection().state()).isEqualTo(RpcClientConnection.State.READY);
        assertThat(transport.connection().newUnaryCall(ECHO, CallOptions.DEFAULT, StringValue.of("x"))
            .block(Duration.ofSeconds(TIMEOUT_SECONDS))).isEqualTo(StringValue.of("x"));

        assertThat(InprocTransportProvider.killConnections(name)).as("one connection").isEqualTo(1);
        assertThat(terminated.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(events).containsExactly("ready", "shutdown UNAVAILABLE", "terminated");
        // no reconnect of its own: its one connection is closed, and the server has none from it
        assertThat(transport.connection().state()).isEqualTo(RpcClientConnection.State.CLOSED);
        assertThat(InprocTransportProvider.killConnections(name)).isZero();
    }

    @Test
    void shouldShutDownBeforeReadyWhenItCannotConnect() throws Exception
    {
        server.shutdown(Duration.ZERO);
        assertThat(server.awaitTermination(Duration.ofSeconds(TIMEOUT_SECONDS))).isTrue();
        transport.start(listener).run();
        assertThat(terminated.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(events).containsExactly("shutdown UNAVAILABLE", "terminated");
    }

    @Test
    void shouldPingOverTheReverbConnection() throws Exception
    {
        transport.start(listener).run();
        assertThat(ready.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();
        final CompletableFuture<Long> roundTrip = new CompletableFuture<>();
        transport.ping(new ClientTransport.PingCallback()
        {
            @Override
            public void onSuccess(final long roundTripTimeNanos)
            {
                roundTrip.complete(roundTripTimeNanos);
            }

            @Override
            public void onFailure(final Status cause)
            {
                roundTrip.completeExceptionally(cause.asException());
            }
        }, Runnable::run);
        assertThat(roundTrip.get(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isNotNegative();

        transport.shutdown(Status.UNAVAILABLE.withDescription("done"));
        assertThat(terminated.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();
        final CompletableFuture<Status> failed = new CompletableFuture<>();
        transport.ping(new ClientTransport.PingCallback()
        {
            @Override
            public void onSuccess(final long roundTripTimeNanos)
            {
                failed.completeExceptionally(new AssertionError("a closed connection answered a PING"));
            }

            @Override
            public void onFailure(final Status cause)
            {
                failed.complete(cause);
            }
        }, Runnable::run);
        assertThat(failed.get(TIMEOUT_SECONDS, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    }

    @Test
    void shouldReportItsShutdownToGrpcJavaBeforeAStreamItCannotSendEndsMiscarried() throws Exception
    {
        // grpc-java resends a MISCARRIED call at once, on the transport its subchannel gives: told of the shutdown
        // only after that close, the subchannel gives this transport again, and the loop ends after 1000 tries as
        // INTERNAL "Too many transparent retries". The connection's own report of its loss (onLost) is taken away
        // here, as when the thread that read the GOAWAY is descheduled before it reports: the stream's end reports it.
        transport.start(listener).run();
        assertThat(ready.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();
        transport.connection().onLost(why -> events.add("lost, not reported"));
        server.shutdown(Duration.ofSeconds(TIMEOUT_SECONDS)); // GOAWAY: the connection takes no new streams
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
        while (transport.connection().state() == RpcClientConnection.State.READY)
        {
            assertThat(System.nanoTime() - until).as("the GOAWAY read").isNegative();
            Thread.sleep(1);
        }

        // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's MethodDescriptor and CallOptions beside Reverb's
        final io.grpc.MethodDescriptor<String, String> echo = io.grpc.MethodDescriptor.<String, String>newBuilder()
            .setType(io.grpc.MethodDescriptor.MethodType.UNARY).setFullMethodName(ECHO.fullMethodName())
            .setRequestMarshaller(ContractListeners.STRINGS).setResponseMarshaller(ContractListeners.STRINGS).build();
        final ClientStream stream = transport.newStream(echo, new Metadata(), io.grpc.CallOptions.DEFAULT,
            new ClientStreamTracer[0]);
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        final CompletableFuture<ClientStreamListener.RpcProgress> closed = new CompletableFuture<>();
        stream.start(new ClientStreamListener()
        {
            @Override
            public void headersRead(final Metadata headers)
            {
            }

            @Override
            public void closed(final Status status, final RpcProgress progress, final Metadata trailers)
            {
                events.add("closed " + progress);
                closed.complete(progress);
            }

            @Override
            public void messagesAvailable(final MessageProducer producer)
            {
            }

            @Override
            public void onReady()
            {
            }
        });
        assertThat(closed.get(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isEqualTo(ClientStreamListener.RpcProgress.MISCARRIED);
        assertThat(terminated.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).as("terminated once its stream ended").isTrue();
        assertThat(events).containsExactly("ready", "lost, not reported", "shutdown UNAVAILABLE", "closed MISCARRIED",
            "terminated");
    }

    @Test
    void shouldReportInUseOnceForCallsOneAfterTheOtherAndNotInUseOnlyAfterTheLinger() throws Exception
    {
        // a caller making one call after the other: in use from the first stream on, not in use only once no stream
        // opened for a whole linger (the timer's tasks run here, by hand), instead of a flip at every call's end
        final List<Runnable> timerTasks = new CopyOnWriteArrayList<>();
        final ScheduledExecutorService timer = (ScheduledExecutorService)Proxy.newProxyInstance(
            getClass().getClassLoader(), new Class<?>[] {ScheduledExecutorService.class}, (proxy, method, args) ->
            {
                assertThat(method.getName()).isEqualTo("schedule");
                assertThat(((TimeUnit)args[2]).toMillis((Long)args[1])).isEqualTo(ReverbClientTransport.IN_USE_LINGER_MILLIS);
                timerTasks.add((Runnable)args[0]);
                return null;
            });
        transport.connection().close(); // never started: replaced by one with the timer
        transport = new ReverbClientTransport(new ReverbAddress(uri), "reverb", null, UnaryOperator.identity(),
            new ConcurrentHashMap<>(), timer, null);
        final List<Boolean> inUse = new CopyOnWriteArrayList<>();
        final CountDownLatch up = new CountDownLatch(1);
        transport.start(new ManagedClientTransport.Listener()
        {
            @Override
            public void transportShutdown(final Status status, final DisconnectError error)
            {
            }

            @Override
            public void transportTerminated()
            {
            }

            @Override
            public void transportReady()
            {
                up.countDown();
            }

            @Override
            public void transportInUse(final boolean used)
            {
                inUse.add(used);
            }
        }).run();
        assertThat(up.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();

        for (int i = 0; i < 5; i++)
        {
            openAndCancel();
        }
        assertThat(inUse).as("once in use, for five calls").containsExactly(true);
        assertThat(timerTasks).as("one linger check").hasSize(1);

        openAndCancel(); // a stream while the check waits: the check waits again instead of reporting
        timerTasks.remove(0).run();
        assertThat(inUse).containsExactly(true);
        assertThat(timerTasks).as("checked again later").hasSize(1);

        timerTasks.remove(0).run(); // a whole linger without a stream
        assertThat(inUse).containsExactly(true, false);
        assertThat(timerTasks).isEmpty();

        openAndCancel(); // in use again, and not in use again after the next linger
        assertThat(inUse).containsExactly(true, false, true);
        timerTasks.remove(0).run();
        assertThat(inUse).containsExactly(true, false, true, false);
    }

    @Test
    void shouldHandABlockingCallsWholeEndToItsCallerAsOneTaskThatIsTheStreamItself() throws Exception
    {
        // a blocking stub's call: its response, status and trailers reach its waiting thread as one task, and that
        // task is the stream (no task, lambda or message-producer object of its own per call)
        transport.start(listener).run();
        assertThat(ready.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();
        final List<Runnable> handed = new CopyOnWriteArrayList<>();
        final CountDownLatch handedOver = new CountDownLatch(1);
        final Executor waitingCaller = task ->
        {
            handed.add(task);
            handedOver.countDown();
        };
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's MethodDescriptor and CallOptions beside Reverb's
        final io.grpc.MethodDescriptor<String, String> echo = io.grpc.MethodDescriptor.<String, String>newBuilder()
            .setType(io.grpc.MethodDescriptor.MethodType.UNARY).setFullMethodName(ECHO.fullMethodName())
            .setRequestMarshaller(ContractListeners.STRINGS).setResponseMarshaller(ContractListeners.STRINGS).build();
        final io.grpc.CallOptions blocking = InternalClientCalls.setStubType(io.grpc.CallOptions.DEFAULT,
            InternalClientCalls.StubType.BLOCKING).withExecutor(waitingCaller);
        final ClientStream stream = transport.newStream(echo, new Metadata(), blocking, new ClientStreamTracer[0]);
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        final String message = new String(StringValue.of("x").toByteArray(), StandardCharsets.UTF_8);
        final List<String> seen = new CopyOnWriteArrayList<>();
        stream.start(new ClientStreamListener()
        {
            @Override
            public void headersRead(final Metadata headers)
            {
                seen.add("headers");
            }

            @Override
            public void closed(final Status status, final RpcProgress progress, final Metadata trailers)
            {
                seen.add("closed " + status.getCode());
            }

            @Override
            public void messagesAvailable(final MessageProducer producer)
            {
                for (InputStream m; (m = producer.next()) != null; )
                {
                    seen.add("message " + ContractListeners.STRINGS.parse(m).equals(message));
                }
            }

            @Override
            public void onReady()
            {
            }
        });
        stream.request(1);
        stream.writeMessage(echo.streamRequest(message));
        stream.halfClose();

        assertThat(handedOver.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(seen).as("nothing before the caller runs the task").isEmpty();
        assertThat(handed).hasSize(1);
        assertThat(handed.get(0)).as("the stream itself").isSameAs(stream);
        handed.get(0).run();
        assertThat(seen).containsExactly("headers", "message true", "closed OK");
        assertThat(handed).hasSize(1);
    }

    /** Opens a stream on the transport and cancels it: the stream closes before this returns. */
    private void openAndCancel()
    {
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's MethodDescriptor and CallOptions beside Reverb's
        final io.grpc.MethodDescriptor<String, String> echo = io.grpc.MethodDescriptor.<String, String>newBuilder()
            .setType(io.grpc.MethodDescriptor.MethodType.UNARY).setFullMethodName(ECHO.fullMethodName())
            .setRequestMarshaller(ContractListeners.STRINGS).setResponseMarshaller(ContractListeners.STRINGS).build();
        final ClientStream stream = transport.newStream(echo, new Metadata(), io.grpc.CallOptions.DEFAULT,
            new ClientStreamTracer[0]);
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        final List<Status> closed = new CopyOnWriteArrayList<>();
        stream.start(new ClientStreamListener()
        {
            @Override
            public void headersRead(final Metadata headers)
            {
            }

            @Override
            public void closed(final Status status, final RpcProgress progress, final Metadata trailers)
            {
                closed.add(status);
            }

            @Override
            public void messagesAvailable(final MessageProducer producer)
            {
            }

            @Override
            public void onReady()
            {
            }
        });
        stream.cancel(Status.CANCELLED.withDescription("done"));
        assertThat(closed).extracting(Status::getCode).containsExactly(Status.Code.CANCELLED);
    }
}
