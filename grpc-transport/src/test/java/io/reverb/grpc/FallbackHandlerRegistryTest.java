package io.reverb.grpc;

import com.google.protobuf.ByteString;
import io.grpc.CallOptions;
import io.grpc.HandlerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.grpc.test.EchoRpc;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.StatusCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link ReverbServerBuilder#fallbackHandlerRegistry} as on Netty: a method served only through the fallback
 * registry answers grpc-java and native Reverb clients, over shm and tcp; the services added with
 * {@code addService} are looked up first; a method in neither is UNIMPLEMENTED; the registry is asked when a call
 * comes, so a method added to it after the server started is served.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FallbackHandlerRegistryTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** A method no registry serves. */
    private static final MethodDescriptor<EchoRequest, EchoReply> MISSING = MethodDescriptor
        .<EchoRequest, EchoReply>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName("io.reverb.grpc.test.Missing/Call")
        .setRequestMarshaller(ProtoUtils.marshaller(EchoRequest.getDefaultInstance()))
        .setResponseMarshaller(ProtoUtils.marshaller(EchoReply.getDefaultInstance()))
        .build();

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final Registry fallback = new Registry();
    private final GrpcEchoService echo = new GrpcEchoService();
    private String address;

    /** A registry whose methods may be added while the server runs (grpc-java's MutableHandlerRegistry, in brief). */
    private static final class Registry extends HandlerRegistry
    {
        private final Map<String, ServerMethodDefinition<?, ?>> methods = new ConcurrentHashMap<>();
        final AtomicInteger lookups = new AtomicInteger();

        void add(final ServerServiceDefinition service)
        {
            for (final ServerMethodDefinition<?, ?> method : service.getMethods())
            {
                methods.put(method.getMethodDescriptor().getFullMethodName(), method);
            }
        }

        @Override
        public ServerMethodDefinition<?, ?> lookupMethod(final String methodName, final String authority)
        {
            lookups.incrementAndGet();
            return methods.get(methodName);
        }
    }

    @AfterEach
    void closeAndCheckForLeaks() throws Exception
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

    /** Serves Echo's unary method itself (answering "registered") and everything else through the fallback. */
    private String startServer(final String scheme) throws Exception
    {
        address = "tcp".equals(scheme) ? "tcp://127.0.0.1:0" :
            "shm://grpc-fallback-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
        final ServerServiceDefinition registered = ServerServiceDefinition.builder(EchoGrpc.SERVICE_NAME)
            .addMethod(EchoGrpc.getUnaryMethod(), ServerCalls.asyncUnaryCall((request, responses) ->
            {
                responses.onNext(EchoReply.newBuilder().setPayload(ByteString.copyFromUtf8("registered")).build());
                responses.onCompleted();
            }))
            .build();
        final Server server = ReverbServerBuilder.forAddress(address)
            .addService(registered)
            .fallbackHandlerRegistry(fallback)
            .build().start();
        closeables.add(() ->
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        return server.getListenSockets().get(0).toString();
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

    private RpcChannel nativeChannel(final String target)
    {
        final RpcChannel channel = RpcChannel.builder(target).build();
        closeables.add(channel);
        return channel;
    }

    private static EchoRequest payload(final String text)
    {
        return EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8(text)).build();
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void grpcClientShouldReachMethodsServedOnlyByTheFallbackRegistry(final String scheme) throws Exception
    {
        fallback.add(echo.bindService());
        final ManagedChannel channel = grpcChannel(startServer(scheme));
        final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);

        // registered first: the fallback's unary method is never reached
        assertThat(stub.unary(payload("hi")).getPayload().toStringUtf8()).isEqualTo("registered");
        assertThat(echo.unaryAttempts).hasValue(0);

        // only in the fallback registry
        final List<EchoReply> streamed = new ArrayList<>();
        stub.serverStream(EchoRequest.newBuilder().setCount(5).setSize(2).build()).forEachRemaining(streamed::add);
        assertThat(streamed).hasSize(5);
        assertThat(fallback.lookups.get()).isPositive();

        assertThatThrownBy(() -> ClientCalls.blockingUnaryCall(channel, MISSING,
            CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS), payload("x")))
            .isInstanceOfSatisfying(StatusRuntimeException.class,
                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNIMPLEMENTED));
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void nativeClientShouldReachMethodsServedOnlyByTheFallbackRegistry(final String scheme) throws Exception
    {
        final String target = startServer(scheme);
        final EchoRpc.EchoReactorStub stub = EchoRpc.newReactorStub(nativeChannel(target));

        // not yet in the registry: UNIMPLEMENTED; added while the server runs: served from the next call on
        assertThatThrownBy(() -> stub.serverStream(EchoRequest.newBuilder().setCount(3).build()).collectList().block(WAIT))
            .isInstanceOfSatisfying(RpcException.class,
                e -> assertThat(e.status().code()).isEqualTo(StatusCode.UNIMPLEMENTED));
        fallback.add(echo.bindService());

        assertThat(stub.unary(payload("hi")).block(WAIT).getPayload().toStringUtf8()).isEqualTo("registered");
        assertThat(stub.serverStream(EchoRequest.newBuilder().setCount(3).setSize(1).build()).collectList().block(WAIT))
            .hasSize(3);
        final EchoReply counted = stub.clientStream(Flux.range(0, 4).map(i -> payload("ab"))).block(WAIT);
        assertThat(counted.getMessageCount()).isEqualTo(4);
        assertThat(stub.bidi(Flux.range(0, 3).map(i -> payload("m" + i))).collectList().block(WAIT)).hasSize(3);
        assertThat(echo.unaryAttempts).hasValue(0);
    }
}
