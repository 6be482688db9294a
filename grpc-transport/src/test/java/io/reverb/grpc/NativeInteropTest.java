package io.reverb.grpc;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.grpc.test.EchoRpc;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Reverb's native stubs and grpc-java over Reverb speak the same wire: a native client calls a grpc-java service
 * served with {@link ReverbServerBuilder}, and a grpc-java client built with {@link ReverbChannelBuilder} calls a
 * native Reverb service, with the same method names and messages. Also pins that a native handler failing with
 * grpc-java's {@code StatusRuntimeException}/{@code StatusException} ends the call with that status and trailers.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class NativeInteropTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Metadata.Key<String> ERROR_ASCII = Metadata.Key.of("x-error-ascii", Metadata.ASCII_STRING_MARSHALLER);
    private static final Metadata.Key<byte[]> ERROR_BIN = Metadata.Key.of("x-error-bin", Metadata.BINARY_BYTE_MARSHALLER);

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private String address;

    private String newAddress(final String scheme)
    {
        switch (scheme)
        {
            case "tcp":
                return "tcp://127.0.0.1:0";
            case "shm":
                return "shm://grpc-interop-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
            default:
                return "inproc://grpc-interop-" + IDS.incrementAndGet();
        }
    }

    @AfterEach
    void closeAndCheckForLeaks() throws Exception
    {
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
        AbstractReverbConformanceTest.assertReleased(address);
    }

    private String startGrpcServer(final String scheme) throws Exception
    {
        address = newAddress(scheme);
        final Server server = ReverbServerBuilder.forAddress(address).addService(new GrpcEchoService()).build().start();
        closeables.add(() ->
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        return server.getListenSockets().get(0).toString();
    }

    private String startNativeServer(final String scheme)
    {
        address = newAddress(scheme);
        final RpcServer server = RpcServer.builder(address).addService(new NativeEchoService()).build().start();
        closeables.add(server);
        return server.address();
    }

    private RpcChannel nativeChannel(final String target)
    {
        final RpcChannel channel = RpcChannel.builder(target).build();
        closeables.add(channel);
        return channel;
    }

    private ManagedChannel grpcChannel(final String target)
    {
        final ManagedChannel channel = ReverbChannelBuilder.forTarget(target).build();
        closeables.add(() ->
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        return channel;
    }

    private static EchoRequest payload(final String text)
    {
        return EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8(text)).build();
    }

    // ---------------------------------------------------------------------------------- native stub -> grpc server

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "shm", "tcp"})
    void nativeStubShouldCallGrpcServiceInAllFourShapes(final String scheme) throws Exception
    {
        final EchoRpc.EchoReactorStub stub = EchoRpc.newReactorStub(nativeChannel(startGrpcServer(scheme)));

        assertThat(stub.unary(payload("hi")).block(Duration.ofSeconds(30)).getPayload().toStringUtf8()).isEqualTo("hi");

        final List<EchoReply> streamed = stub.serverStream(EchoRequest.newBuilder().setCount(50).setSize(3).build())
            .collectList().block(Duration.ofSeconds(30));
        assertThat(streamed).hasSize(50);
        assertThat(streamed.get(49).getIndex()).isEqualTo(49);

        final EchoReply counted = stub.clientStream(Flux.range(0, 20).map(i -> payload("ab")))
            .block(Duration.ofSeconds(30));
        assertThat(counted.getMessageCount()).isEqualTo(20);
        assertThat(counted.getTotalBytes()).isEqualTo(40);

        final List<EchoReply> echoed = stub.bidi(Flux.range(0, 20).map(i -> payload("m" + i)))
            .collectList().block(Duration.ofSeconds(30));
        assertThat(echoed).extracting(r -> r.getPayload().toStringUtf8()).containsExactly(
            Flux.range(0, 20).map(i -> "m" + i).collectList().block().toArray(new String[0]));
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "shm", "tcp"})
    void nativeStubShouldSeeGrpcStatusTrailersAndDeadline(final String scheme) throws Exception
    {
        final EchoRpc.EchoReactorStub stub = EchoRpc.newReactorStub(nativeChannel(startGrpcServer(scheme)));
        assertThatThrownBy(() -> stub.unary(EchoRequest.newBuilder()
            .setErrorCode(Status.Code.PERMISSION_DENIED.value()).setErrorMessage("no \u00e9").build())
            .block(Duration.ofSeconds(30)))
            .isInstanceOfSatisfying(RpcException.class, e ->
            {
                assertThat(e.status().code()).isEqualTo(StatusCode.PERMISSION_DENIED);
                assertThat(e.status().description()).isEqualTo("no \u00e9");
                assertThat(e.trailers().get(ERROR_ASCII)).isEqualTo("ascii 7");
                assertThat(e.trailers().get(ERROR_BIN)).isEqualTo(GrpcEchoService.ERROR_BYTES);
            });
        final EchoReply reply = stub.withDeadlineAfter(Duration.ofSeconds(20)).unary(payload("d"))
            .block(Duration.ofSeconds(30));
        assertThat(reply.getTotalBytes()).as("grpc Context deadline on the server, millis").isPositive()
            .isLessThanOrEqualTo(20_000);
    }

    // ---------------------------------------------------------------------------------- grpc stub -> native server

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "shm", "tcp"})
    void grpcStubShouldCallNativeServiceInAllFourShapes(final String scheme) throws Exception
    {
        final ManagedChannel channel = grpcChannel(startNativeServer(scheme));
        final EchoGrpc.EchoBlockingStub blocking = EchoGrpc.newBlockingStub(channel);

        assertThat(blocking.unary(payload("hello")).getPayload().toStringUtf8()).isEqualTo("hello");

        final List<EchoReply> streamed = new ArrayList<>();
        blocking.serverStream(EchoRequest.newBuilder().setCount(30).setSize(7).build()).forEachRemaining(streamed::add);
        assertThat(streamed).hasSize(30);
        assertThat(streamed.get(29).getPayload().size()).isEqualTo(7);

        final CompletableFuture<EchoReply> counted = new CompletableFuture<>();
        final StreamObserver<EchoRequest> requests = EchoGrpc.newStub(channel)
            .clientStream(AbstractGrpcConformanceTest.observer(counted));
        for (int i = 0; i < 10; i++)
        {
            requests.onNext(payload("xyz"));
        }
        requests.onCompleted();
        assertThat(counted.get(30, TimeUnit.SECONDS).getMessageCount()).isEqualTo(10);
        assertThat(counted.get().getTotalBytes()).isEqualTo(30);

        final List<String> echoed = new ArrayList<>();
        final CompletableFuture<Void> done = new CompletableFuture<>();
        final StreamObserver<EchoRequest> bidi = EchoGrpc.newStub(channel).bidi(new StreamObserver<>()
        {
            @Override
            public void onNext(final EchoReply value)
            {
                synchronized (echoed)
                {
                    echoed.add(value.getPayload().toStringUtf8());
                }
            }

            @Override
            public void onError(final Throwable t)
            {
                done.completeExceptionally(t);
            }

            @Override
            public void onCompleted()
            {
                done.complete(null);
            }
        });
        for (int i = 0; i < 10; i++)
        {
            bidi.onNext(payload("b" + i));
        }
        bidi.onCompleted();
        done.get(30, TimeUnit.SECONDS);
        synchronized (echoed)
        {
            assertThat(echoed).containsExactly("b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "shm", "tcp"})
    void nativeHandlerThrowingGrpcStatusExceptionsShouldEndCallWithThatStatusAndTrailers(final String scheme)
    {
        final String target = startNativeServer(scheme);
        final EchoGrpc.EchoBlockingStub grpc = EchoGrpc.newBlockingStub(grpcChannel(target));
        final EchoRpc.EchoReactorStub reverb = EchoRpc.newReactorStub(nativeChannel(target));
        // odd codes: thrown StatusRuntimeException; even codes: Mono.error(StatusException)
        for (final Status.Code code : new Status.Code[] {Status.Code.NOT_FOUND, Status.Code.ALREADY_EXISTS,
            Status.Code.FAILED_PRECONDITION, Status.Code.UNAUTHENTICATED})
        {
            final EchoRequest failing = EchoRequest.newBuilder().setErrorCode(code.value()).setErrorMessage("why " + code)
                .build();
            assertThatThrownBy(() -> grpc.unary(failing)).isInstanceOfSatisfying(StatusRuntimeException.class, e ->
            {
                assertThat(e.getStatus().getCode()).isEqualTo(code);
                assertThat(e.getStatus().getDescription()).isEqualTo("why " + code);
                assertThat(e.getTrailers().get(GrpcEchoService.ERROR_ASCII)).isEqualTo("ascii " + code.value());
                assertThat(e.getTrailers().get(GrpcEchoService.ERROR_BIN)).isEqualTo(GrpcEchoService.ERROR_BYTES);
            });
            assertThatThrownBy(() -> reverb.unary(failing).block(Duration.ofSeconds(30)))
                .isInstanceOfSatisfying(RpcException.class, e ->
                {
                    assertThat(e.status().code().value()).isEqualTo(code.value());
                    assertThat(e.status().description()).isEqualTo("why " + code);
                    assertThat(e.trailers().get(ERROR_ASCII)).isEqualTo("ascii " + code.value());
                });
        }
    }

    /** A native Reverb implementation of the same service (generated by Reverb's plugin). */
    static final class NativeEchoService extends EchoRpc.EchoImplBase
    {
        @Override
        public Mono<EchoReply> unary(final EchoRequest request)
        {
            if (request.getErrorCode() != 0)
            {
                final StatusRuntimeException error = GrpcEchoService.error(request);
                if (request.getErrorCode() % 2 == 1)
                {
                    throw error;
                }
                return Mono.error(new StatusException(error.getStatus(), error.getTrailers()));
            }
            return RpcContext.current().map(ctx -> EchoReply.newBuilder().setPayload(request.getPayload())
                .setTotalBytes(ctx.deadline() == null ? -1 : ctx.deadline().timeRemaining().toMillis()).build())
                .defaultIfEmpty(EchoReply.newBuilder().setPayload(request.getPayload()).build());
        }

        @Override
        public Flux<EchoReply> serverStream(final EchoRequest request)
        {
            final ByteString payload = ByteString.copyFrom(new byte[request.getSize()]);
            return Flux.range(0, request.getCount()).map(i -> EchoReply.newBuilder().setIndex(i).setPayload(payload).build());
        }

        @Override
        public Mono<EchoReply> clientStream(final Flux<EchoRequest> requests)
        {
            return requests.reduce(EchoReply.newBuilder(), (b, r) -> b.setMessageCount(b.getMessageCount() + 1)
                .setTotalBytes(b.getTotalBytes() + r.getPayload().size())).map(EchoReply.Builder::build);
        }

        @Override
        public Flux<EchoReply> bidi(final Flux<EchoRequest> requests)
        {
            return requests.index().map(t -> EchoReply.newBuilder().setIndex(t.getT1().intValue())
                .setPayload(t.getT2().getPayload()).build());
        }
    }
}
