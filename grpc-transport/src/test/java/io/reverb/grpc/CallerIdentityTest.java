package io.reverb.grpc;

import com.google.protobuf.ByteString;
import io.grpc.ForwardingServerCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.MetadataUtils;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.grpc.test.EchoRpc;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Mono;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * What a server over Reverb knows of its address and of who calls it, beyond what the conformance suite holds against
 * Netty: the authority of a native Reverb client's call, which request headers a grpc-java client sends for the
 * authority (only where the server cannot tell it), that the bridge's authority header can be neither set nor seen by
 * an application, and {@code Server.getPort()}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CallerIdentityTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Metadata.Key<String> RESERVED_AUTHORITY =
        Metadata.Key.of(GrpcBridge.AUTHORITY, Metadata.ASCII_STRING_MARSHALLER);

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final AtomicReference<String> lastAuthority = new AtomicReference<>();
    private final AtomicReference<Metadata> lastHeaders = new AtomicReference<>();
    private String address;

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

    private String newAddress(final String scheme)
    {
        switch (scheme)
        {
            case "tcp":
                return "tcp://127.0.0.1:0";
            case "shm":
                return "shm://grpc-identity-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
            default:
                return "inproc://grpc-identity-" + IDS.incrementAndGet();
        }
    }

    /** A grpc-java server over Reverb whose interceptor records each call's authority and headers. */
    private Server startGrpcServer(final String scheme) throws Exception
    {
        address = newAddress(scheme);
        final ServerInterceptor recording = new ServerInterceptor()
        {
            @Override
            public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
                final ServerCall<ReqT, RespT> call, final Metadata headers, final ServerCallHandler<ReqT, RespT> next)
            {
                lastAuthority.set(call.getAuthority());
                lastHeaders.set(headers);
                return next.startCall(call, headers);
            }
        };
        final Server server = ReverbServerBuilder.forAddress(address)
            .addService(ServerInterceptors.intercept(new GrpcEchoService(), recording)).build().start();
        closeables.add(() ->
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        return server;
    }

    private ManagedChannel grpcChannel(final ReverbChannelBuilder builder)
    {
        final ManagedChannel channel = builder.build();
        closeables.add(() ->
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        return channel;
    }

    private static String bound(final Server server)
    {
        return server.getListenSockets().get(0).toString();
    }

    private static EchoRequest payload(final String text)
    {
        return EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8(text)).build();
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "shm", "tcp"})
    void aNativeClientsCallHasTheAuthorityOfTheServersBoundAddress(final String scheme) throws Exception
    {
        final Server server = startGrpcServer(scheme);
        final RpcChannel channel = RpcChannel.builder(bound(server)).build();
        closeables.add(channel);
        EchoRpc.newReactorStub(channel).unary(payload("native")).block(Duration.ofSeconds(30));
        // host:port (the ephemeral port resolved), or the name of a named address
        assertThat(lastAuthority.get()).isEqualTo(URI.create(bound(server)).getRawAuthority()).isNotNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "tcp"})
    void theApplicationCanNeitherSetNorSeeTheBridgesAuthorityHeader(final String scheme) throws Exception
    {
        final Server server = startGrpcServer(scheme);
        final Metadata spoofed = new Metadata();
        spoofed.put(RESERVED_AUTHORITY, "evil.example:666");
        final ManagedChannel plain = grpcChannel(ReverbChannelBuilder.forTarget(bound(server)));
        EchoGrpc.newBlockingStub(plain).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(spoofed))
            .unary(payload("a"));
        assertThat(lastAuthority.get()).isEqualTo(plain.authority());
        assertThat(lastHeaders.get().containsKey(RESERVED_AUTHORITY)).as("the bridge's header, taken out").isFalse();

        // a channel whose authority travels under the bridge's header
        final ManagedChannel named = grpcChannel(ReverbChannelBuilder.forTarget(bound(server))
            .overrideAuthority("api.example.com:443"));
        EchoGrpc.newBlockingStub(named).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(spoofed))
            .unary(payload("b"));
        assertThat(lastAuthority.get()).isEqualTo("api.example.com:443");
        assertThat(lastHeaders.get().containsKey(RESERVED_AUTHORITY)).as("the bridge's header, taken out").isFalse();
    }

    @Test
    void aGrpcClientSendsTheAuthorityOnlyWhereTheServerCannotTellIt() throws Exception
    {
        address = newAddress("tcp");
        final AtomicReference<Map<String, String>> received = new AtomicReference<>();
        final RpcServer server = RpcServer.builder(address).addService(new EchoRpc.EchoImplBase()
        {
            @Override
            public Mono<EchoReply> unary(final EchoRequest request)
            {
                return RpcContext.current().map(ctx ->
                {
                    final Map<String, String> entries = new HashMap<>();
                    final var metadata = ctx.metadata();
                    for (int i = 0; i < metadata.size(); i++)
                    {
                        entries.put(metadata.nameAt(i), new String(metadata.valueAt(i), StandardCharsets.US_ASCII));
                    }
                    received.set(entries);
                    return EchoReply.newBuilder().build();
                });
            }
        }).build().start();
        closeables.add(server);

        // tcp://127.0.0.1:port: the server's own address, which it reports by itself (the CALL frame carries none)
        final ManagedChannel direct = grpcChannel(ReverbChannelBuilder.forTarget(server.address()));
        EchoGrpc.newBlockingStub(direct).unary(payload("a"));
        assertThat(received.get()).doesNotContainKey(GrpcBridge.AUTHORITY);
        assertThat(received.get().get("user-agent")).startsWith("grpc-java-reverb/");

        EchoGrpc.newBlockingStub(direct).withInterceptors(AbstractGrpcConformanceTest.withAuthority("call.example:1"))
            .unary(payload("b"));
        assertThat(received.get()).containsEntry(GrpcBridge.AUTHORITY, "call.example:1");

        // a host name: no server can tell which of its names a client used
        final ManagedChannel named = grpcChannel(ReverbChannelBuilder.forTarget(server.address())
            .overrideAuthority("api.example.com:443").userAgent("billing/2.3"));
        EchoGrpc.newBlockingStub(named).unary(payload("c"));
        assertThat(received.get()).containsEntry(GrpcBridge.AUTHORITY, "api.example.com:443");
        assertThat(received.get().get("user-agent")).startsWith("billing/2.3 grpc-java-reverb/");

        // the server's own authority named by the call: not sent again
        EchoGrpc.newBlockingStub(named).withInterceptors(AbstractGrpcConformanceTest.withAuthority(
            URI.create(server.address()).getRawAuthority())).unary(payload("d"));
        assertThat(received.get()).doesNotContainKey(GrpcBridge.AUTHORITY);
    }

    @Test
    void aHostPortServerReportsItsBoundPort() throws Exception
    {
        final Server server = startGrpcServer("tcp");
        final int port = URI.create(bound(server)).getPort();
        assertThat(port).isPositive();
        assertThat(server.getPort()).isEqualTo(port);
        assertThat(server.getListenSockets()).hasSize(2);
        assertThat(server.getListenSockets().get(0)).isInstanceOf(ReverbAddress.class);
        assertThat(server.getListenSockets().get(1))
            .isEqualTo(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port));
    }

    @Test
    void aNamedServerHasNoPort() throws Exception
    {
        final Server server = startGrpcServer("inproc");
        assertThat(server.getPort()).isEqualTo(-1);
        assertThat(server.getListenSockets()).hasSize(1);
    }

    /**
     * The response metadata a grpc-java client over Reverb accepts is 8 KiB by default, as on Netty, and
     * {@code maxInboundMetadataSize} raises it (it did nothing: grpc-java's builder ignores it unless the transport
     * maps it).
     */
    @Test
    void aGrpcClientsMetadataLimitIsItsBuildersMaxInboundMetadataSize() throws Exception
    {
        address = newAddress("inproc");
        final Metadata.Key<String> big = Metadata.Key.of("x-big", Metadata.ASCII_STRING_MARSHALLER);
        final ServerInterceptor bigHeaders = new ServerInterceptor()
        {
            @Override
            public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(final ServerCall<ReqT, RespT> call,
                final Metadata headers, final ServerCallHandler<ReqT, RespT> next)
            {
                return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call)
                {
                    @Override
                    public void sendHeaders(final Metadata responseHeaders)
                    {
                        responseHeaders.put(big, "x".repeat(10_000));
                        super.sendHeaders(responseHeaders);
                    }
                }, headers);
            }
        };
        final Server server = ReverbServerBuilder.forAddress(address)
            .addService(ServerInterceptors.intercept(new GrpcEchoService(), bigHeaders)).build().start();
        closeables.add(() ->
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        final ManagedChannel byDefault = grpcChannel(ReverbChannelBuilder.forTarget(address));
        final StatusRuntimeException refused = catchThrowableOfType(
            () -> EchoGrpc.newBlockingStub(byDefault).unary(payload("a")), StatusRuntimeException.class);
        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);

        final ManagedChannel raised = grpcChannel(ReverbChannelBuilder.forTarget(address)
            .maxInboundMetadataSize(64 * 1024));
        assertThat(EchoGrpc.newBlockingStub(raised).unary(payload("b")).getPayload().toStringUtf8()).isEqualTo("b");
    }
}
