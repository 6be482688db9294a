package io.reverb.grpc;

import com.google.protobuf.ByteString;
import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.reverb.grpc.EndRecordingServices.Handler;
import io.reverb.grpc.EndRecordingServices.Recorder;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.grpc.test.EchoRpc;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.test.scheduler.VirtualTimeScheduler;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 25's property for every call shape: when a call ends from outside its handler (the client cancels, the
 * client's deadline passes, or only the server's deadline does because the client's CANCEL never comes), the server
 * handler learns of it: grpc-java's handler gets {@code onCancel} (never {@code onComplete}) with its
 * {@code Context} cancelled, a native handler's response publisher is cancelled with its {@code RpcContext}
 * cancelled. Run for grpc-java and native stubs against grpc-java and native services over {@code inproc},
 * {@code shm} and {@code tcp}, and for grpc-java over Netty (the reference).
 *
 * <p>The "server deadline alone" case uses a native client whose deadline timer never fires (a virtual-time
 * scheduler nobody advances): it sends the deadline with the call and never a CANCEL, so only the server's own timer
 * ends the call; grpc-java's client always cancels at its deadline, and the case of a grpc-java client that cannot
 * (a frozen or killed process) is {@link CallerGoneTest}'s.
 *
 * <p>Counts, never times: deadlines are short (300 ms) and the calls are warm, but a call whose deadline passes
 * before it reaches the server is simply not counted (its handler never starts); each case asserts that some did,
 * running its calls again (at most five rounds) while none did.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CallEndReachesServerTest
{
    private static final int PER_SHAPE = 2;
    private static final int SHAPES = 4;
    private static final int ROUNDS = 5;
    private static final Duration DEADLINE = Duration.ofMillis(300);
    private static final AtomicInteger IDS = new AtomicInteger();

    /** How the call ends. */
    enum Ending
    {
        CLIENT_CANCEL, CLIENT_DEADLINE, SERVER_DEADLINE_ALONE
    }

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private String address;

    static Stream<Arguments> cases()
    {
        final List<Arguments> cases = new ArrayList<>();
        for (final Ending ending : Ending.values())
        {
            if (ending != Ending.SERVER_DEADLINE_ALONE)
            {
                cases.add(Arguments.of("netty", "grpc", "grpc", ending));
            }
            for (final String transport : new String[] {"inproc", "shm", "tcp"})
            {
                for (final String serverKind : new String[] {"grpc", "native"})
                {
                    for (final String clientKind : new String[] {"grpc", "native"})
                    {
                        if (ending != Ending.SERVER_DEADLINE_ALONE || "native".equals(clientKind))
                        {
                            cases.add(Arguments.of(transport, serverKind, clientKind, ending));
                        }
                    }
                }
            }
        }
        return cases.stream();
    }

    @AfterEach
    void close() throws Exception
    {
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
        if (address != null)
        {
            AbstractReverbConformanceTest.assertReleased(address);
        }
    }

    @ParameterizedTest(name = "{0}: {2} stub -> {1} service, {3}")
    @MethodSource("cases")
    void serverHandlerShouldLearnOfTheEndOfEveryCall(
        final String transport, final String serverKind, final String clientKind, final Ending ending) throws Exception
    {
        final Recorder recorder;
        final String target;
        if ("grpc".equals(serverKind))
        {
            final EndRecordingServices.Grpc service = new EndRecordingServices.Grpc();
            recorder = service.recorder;
            target = startGrpcServer(transport, service);
        }
        else
        {
            final EndRecordingServices.Native service = new EndRecordingServices.Native();
            recorder = service.recorder;
            target = startNativeServer(transport, service);
        }
        final ManagedChannel grpcChannel = "grpc".equals(clientKind) ? grpcChannel(transport, target) : null;
        final RpcChannel nativeChannel = "native".equals(clientKind) ? nativeChannel(target, ending) : null;
        final StatusCode expected = ending == Ending.CLIENT_CANCEL ? StatusCode.CANCELLED : StatusCode.DEADLINE_EXCEEDED;
        // a round in which no call reached its handler before the deadline (a machine loaded enough) asserts nothing
        // either way: it is run again, at most ROUNDS times
        List<Handler> handlers = List.of();
        for (int round = 1; round <= ROUNDS && handlers.isEmpty(); round++)
        {
            final List<CompletableFuture<StatusCode>> outcomes = grpcChannel != null ?
                grpcCalls(grpcChannel, recorder, ending) : nativeCalls(nativeChannel, recorder, ending);
            for (final CompletableFuture<StatusCode> outcome : outcomes)
            {
                assertThat(outcome.get(30, TimeUnit.SECONDS)).as("the client's status").isEqualTo(expected);
            }
            handlers = recorder.awaitEnded();
        }
        if (ending == Ending.CLIENT_CANCEL)
        {
            assertThat(handlers).as("every call's handler started before the client cancelled")
                .hasSize(PER_SHAPE * SHAPES);
        }
        else
        {
            assertThat(handlers).as("handlers started before the deadline").isNotEmpty();
        }
        assertThat(handlers).as("every handler learned of the end of its call, as cancelled")
            .allMatch(h -> h.cancelled && !h.completed);
        assertThat(handlers).as("every handler's context was cancelled").allMatch(h -> h.contextCancelled);
    }

    // ------------------------------------------------------------------------------------------------ grpc-java client

    private static List<CompletableFuture<StatusCode>> grpcCalls(
        final ManagedChannel channel, final Recorder recorder, final Ending ending) throws Exception
    {
        final EchoRequest request = EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("x")).build();
        assertThat(EchoGrpc.newBlockingStub(channel).unary(warmUp())).isNotNull();
        final EchoGrpc.EchoStub stub = ending == Ending.CLIENT_DEADLINE ?
            EchoGrpc.newStub(channel).withDeadlineAfter(DEADLINE.toMillis(), TimeUnit.MILLISECONDS) :
            EchoGrpc.newStub(channel);
        final List<CompletableFuture<StatusCode>> outcomes = new ArrayList<>();
        final List<ClientCallStreamObserver<EchoRequest>> calls = new ArrayList<>();
        for (int i = 0; i < PER_SHAPE; i++)
        {
            Outcome outcome = new Outcome();
            stub.unary(request, outcome);
            outcomes.add(outcome.status);
            calls.add(outcome.call);

            outcome = new Outcome();
            stub.serverStream(request, outcome);
            outcomes.add(outcome.status);
            calls.add(outcome.call);

            outcome = new Outcome();
            stub.clientStream(outcome).onNext(request); // and never half-closed
            outcomes.add(outcome.status);
            calls.add(outcome.call);

            outcome = new Outcome();
            stub.bidi(outcome).onNext(request);
            outcomes.add(outcome.status);
            calls.add(outcome.call);
        }
        if (ending == Ending.CLIENT_CANCEL)
        {
            assertThat(recorder.awaitStarted(PER_SHAPE * SHAPES)).as("every handler started").isTrue();
            calls.forEach(c -> c.cancel("the client gives up", null));
        }
        return outcomes;
    }

    private static EchoRequest warmUp()
    {
        return EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8(EndRecordingServices.WARM_UP)).build();
    }

    /** A grpc-java call's observer: its status, and the call to cancel. */
    private static final class Outcome implements ClientResponseObserver<EchoRequest, EchoReply>
    {
        final CompletableFuture<StatusCode> status = new CompletableFuture<>();
        ClientCallStreamObserver<EchoRequest> call;

        @Override
        public void beforeStart(final ClientCallStreamObserver<EchoRequest> requestStream)
        {
            call = requestStream;
        }

        @Override
        public void onNext(final EchoReply value)
        {
        }

        @Override
        public void onError(final Throwable t)
        {
            status.complete(StatusCode.fromValue(Status.fromThrowable(t).getCode().value()));
        }

        @Override
        public void onCompleted()
        {
            status.complete(StatusCode.OK);
        }
    }

    // ------------------------------------------------------------------------------------------------ native client

    private static List<CompletableFuture<StatusCode>> nativeCalls(
        final RpcChannel channel, final Recorder recorder, final Ending ending) throws Exception
    {
        final EchoRequest request = EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("x")).build();
        assertThat(EchoRpc.newReactorStub(channel).unary(warmUp()).block(Duration.ofSeconds(30))).isNotNull();
        final EchoRpc.EchoReactorStub stub = ending == Ending.CLIENT_CANCEL ?
            EchoRpc.newReactorStub(channel) : EchoRpc.newReactorStub(channel).withDeadlineAfter(DEADLINE);
        final List<CompletableFuture<StatusCode>> outcomes = new ArrayList<>();
        final List<Disposable> calls = new ArrayList<>();
        final Flux<EchoRequest> endless = Flux.just(request).concatWith(Flux.never());
        for (int i = 0; i < PER_SHAPE; i++)
        {
            calls.add(subscribe(stub.unary(request).flux(), outcomes));
            calls.add(subscribe(stub.serverStream(request), outcomes));
            calls.add(subscribe(stub.clientStream(endless).flux(), outcomes));
            calls.add(subscribe(stub.bidi(endless), outcomes));
        }
        if (ending == Ending.CLIENT_CANCEL)
        {
            assertThat(recorder.awaitStarted(PER_SHAPE * SHAPES)).as("every handler started").isTrue();
            calls.forEach(Disposable::dispose);
            // a disposed Reactor call has no terminal signal of its own: its outcome is the cancellation
            outcomes.forEach(o -> o.complete(StatusCode.CANCELLED));
        }
        return outcomes;
    }

    private static Disposable subscribe(final Flux<EchoReply> call, final List<CompletableFuture<StatusCode>> outcomes)
    {
        final CompletableFuture<StatusCode> outcome = new CompletableFuture<>();
        outcomes.add(outcome);
        return call.subscribe(r -> { }, e -> outcome.complete(
            e instanceof RpcException ? ((RpcException)e).status().code() : StatusCode.UNKNOWN),
            () -> outcome.complete(StatusCode.OK));
    }

    // ------------------------------------------------------------------------------------------------ setup

    private String newAddress(final String transport)
    {
        switch (transport)
        {
            case "tcp":
                return "tcp://127.0.0.1:0";
            case "shm":
                return "shm://grpc-end-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
            default:
                return "inproc://grpc-end-" + IDS.incrementAndGet();
        }
    }

    private String startGrpcServer(final String transport, final BindableService service) throws Exception
    {
        final Server server;
        if ("netty".equals(transport))
        {
            server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(service).build()
                .start();
        }
        else
        {
            address = newAddress(transport);
            server = ReverbServerBuilder.forAddress(address).addService(service).build().start();
        }
        closeables.add(() ->
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        return server.getListenSockets().get(0).toString();
    }

    private String startNativeServer(final String transport, final EndRecordingServices.Native service)
    {
        address = newAddress(transport);
        final RpcServer server = RpcServer.builder(address).addService(service).build().start();
        closeables.add(server);
        return server.address();
    }

    private ManagedChannel grpcChannel(final String transport, final String target)
    {
        final ManagedChannel channel;
        if ("netty".equals(transport))
        {
            final String hostPort = target.substring(target.lastIndexOf('/') + 1);
            final int colon = hostPort.lastIndexOf(':');
            channel = NettyChannelBuilder.forAddress(hostPort.substring(0, colon),
                Integer.parseInt(hostPort.substring(colon + 1))).usePlaintext().build();
        }
        else
        {
            channel = ReverbChannelBuilder.forTarget(target).build();
        }
        closeables.add(() ->
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        return channel;
    }

    private RpcChannel nativeChannel(final String target, final Ending ending)
    {
        final RpcChannel.Builder builder = RpcChannel.builder(target);
        if (ending == Ending.SERVER_DEADLINE_ALONE)
        {
            // the client's timers never fire: it sends the deadline with the call but never a CANCEL
            builder.timerScheduler(VirtualTimeScheduler.create());
        }
        final RpcChannel channel = builder.build();
        closeables.add(channel);
        return channel;
    }
}
