package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ConnectivityState;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link ReverbChannelBuilder} targets that grpc-java resolves (issue 26): {@code dns:///127.0.0.1:port},
 * {@code dns:///localhost:port}, a bare {@code 127.0.0.1:port} (grpc-java's default scheme, dns) and
 * {@code forAddress(host, port)} go through grpc-java's own DNS resolver, offline on loopback (an IP literal and
 * {@code localhost} from the hosts file need no DNS server); the {@link InetSocketAddress} it gives is reached over
 * the builder's fabric, {@code tcp://ip:port} by default, which the call's transport attributes show. Also the
 * errors for targets and fabrics that cannot work.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class NameResolvedTargetsTest
{
    private static final long WAIT_SECONDS = 30;

    private final CountingEcho service = new CountingEcho();
    private final List<SocketAddress> remotes = new CopyOnWriteArrayList<>();
    private Server server;
    private String address;
    private int port;
    private ManagedChannel channel;

    /** Counts the unary calls the server answered. */
    private static final class CountingEcho extends EchoGrpc.EchoImplBase
    {
        final AtomicInteger calls = new AtomicInteger();

        @Override
        public void unary(final EchoRequest request, final StreamObserver<EchoReply> responses)
        {
            calls.incrementAndGet();
            responses.onNext(EchoReply.newBuilder().setPayload(request.getPayload()).build());
            responses.onCompleted();
        }
    }

    /** Records the remote address of every call's transport when the call closes. */
    private final class RemoteRecorder implements ClientInterceptor
    {
        @Override
        public <Q, R> ClientCall<Q, R> interceptCall(
            final MethodDescriptor<Q, R> method, final CallOptions options, final Channel next)
        {
            return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options))
            {
                @Override
                public void start(final Listener<R> listener, final Metadata headers)
                {
                    final ClientCall<Q, R> call = delegate();
                    super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(listener)
                    {
                        @Override
                        public void onClose(final Status status, final Metadata trailers)
                        {
                            final SocketAddress remote = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
                            if (remote != null)
                            {
                                remotes.add(remote);
                            }
                            super.onClose(status, trailers);
                        }
                    }, headers);
                }
            };
        }
    }

    @BeforeEach
    void setUp() throws Exception
    {
        server = ReverbServerBuilder.forAddress("tcp://127.0.0.1:0").addService(service).build().start();
        address = server.getListenSockets().get(0).toString();
        port = URI.create(address).getPort();
        assertThat(port).isPositive();
    }

    @AfterEach
    void tearDown() throws Exception
    {
        if (channel != null)
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        }
        server.shutdownNow();
        assertThat(server.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        AbstractReverbConformanceTest.assertReleased(address);
    }

    private EchoReply call()
    {
        return EchoGrpc.newBlockingStub(channel).withDeadlineAfter(WAIT_SECONDS, TimeUnit.SECONDS)
            .unary(EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("resolved")).build());
    }

    /** Three calls on a channel of the builder: each answered by the one server, over tcp to 127.0.0.1. */
    private void callsReachTheServerOverTcp(final Function<Integer, ReverbChannelBuilder> builder)
    {
        channel = builder.apply(port).intercept(new RemoteRecorder()).build();
        for (int i = 0; i < 3; i++)
        {
            assertThat(call().getPayload().toStringUtf8()).isEqualTo("resolved");
        }
        assertThat(service.calls.get()).isEqualTo(3);
        assertThat(remotes).hasSize(3).allSatisfy(remote ->
            assertThat(remote).isEqualTo(new ReverbAddress("tcp://127.0.0.1:" + port)));
    }

    @Test
    void dnsTargetOfAnIpLiteralIsReachedOverTcp()
    {
        callsReachTheServerOverTcp(p -> ReverbChannelBuilder.forTarget("dns:///127.0.0.1:" + p));
    }

    @Test
    void dnsTargetOfLocalhostIsResolvedOfflineAndReachedOverTcp()
    {
        // localhost comes from the hosts file: 127.0.0.1 on this machine (asserted, so a ::1 first would show)
        callsReachTheServerOverTcp(p -> ReverbChannelBuilder.forTarget("dns:///localhost:" + p));
    }

    @Test
    void bareHostAndPortIsGrpcJavasDefaultScheme()
    {
        callsReachTheServerOverTcp(p -> ReverbChannelBuilder.forTarget("127.0.0.1:" + p));
    }

    @Test
    void forAddressIsDnsOverTcp()
    {
        callsReachTheServerOverTcp(p -> ReverbChannelBuilder.forAddress("127.0.0.1", p));
    }

    @Test
    void explicitTcpFabricIsTheDefault()
    {
        callsReachTheServerOverTcp(p -> ReverbChannelBuilder.forTarget("dns:///127.0.0.1:" + p).fabric("TCP"));
    }

    @Test
    void directTcpAddressStillWorks()
    {
        callsReachTheServerOverTcp(p -> ReverbChannelBuilder.forTarget("tcp://127.0.0.1:" + p));
    }

    @Test
    void roundRobinOverADnsTargetServesEveryCall()
    {
        // one address behind the name (no hosts-file edits here): round_robin over one subchannel, every call served
        callsReachTheServerOverTcp(p -> ReverbChannelBuilder.forTarget("dns:///127.0.0.1:" + p)
            .defaultLoadBalancingPolicy("round_robin"));
    }

    @Test
    void reverbFabricReachesAReverbServerThroughItsResolvedIp() throws Exception
    {
        // a reverb:// server: tcp on its port, and shm, which a client on this host moves to
        final Server both = ReverbServerBuilder.forAddress("reverb://127.0.0.1:0").addService(service).build().start();
        try
        {
            final int reverbPort = URI.create(both.getListenSockets().get(0).toString()).getPort();
            channel = ReverbChannelBuilder.forTarget("dns:///127.0.0.1:" + reverbPort).fabric("reverb")
                .intercept(new RemoteRecorder()).build();
            assertThat(call().getPayload().toStringUtf8()).isEqualTo("resolved");
            assertThat(remotes).containsExactly(new ReverbAddress("reverb://127.0.0.1:" + reverbPort));
        }
        finally
        {
            both.shutdownNow();
            assertThat(both.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void rdmaFabricConnectsToTheRdmaAddressOfTheResolvedIp()
    {
        // the same resolved address over rdma://: no server listens there (and without RDMA hardware or the rdma
        // transport on this class path nothing could), so the call fails UNAVAILABLE, naming the rdma:// address
        channel = ReverbChannelBuilder.forTarget("dns:///127.0.0.1:" + port).fabric("rdma").build();
        assertThatThrownBy(this::call).isInstanceOfSatisfying(StatusRuntimeException.class, e ->
        {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(e.getStatus().getDescription()).contains("rdma://127.0.0.1:" + port);
        });
        assertThat(channel.getState(false)).isNotEqualTo(ConnectivityState.SHUTDOWN);
        assertThat(service.calls.get()).isZero();
    }

    @Test
    void directAddressOfATransportNotOnTheClassPathFailsCallsUnavailable()
    {
        // rdma:// without io.reverb:reverb-transport-rdma: each connection attempt fails (the transport's reason in
        // the status), grpc-java's subchannel backs off and tries again; the channel itself stays usable
        channel = ReverbChannelBuilder.forTarget("rdma://127.0.0.1:" + port).build();
        for (int i = 0; i < 2; i++)
        {
            assertThatThrownBy(this::call).isInstanceOfSatisfying(StatusRuntimeException.class, e ->
            {
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                assertThat(e.getStatus().getDescription()).contains("rdma://127.0.0.1:" + port)
                    .contains("reverb-transport-rdma");
            });
        }
        assertThat(service.calls.get()).isZero();
    }

    @Test
    void resolvedAddressesMapOntoTheFabric() throws Exception
    {
        assertThat(ReverbChannelBuilder.onFabric("tcp", new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 7000)))
            .isEqualTo(new ReverbAddress("tcp://127.0.0.1:7000"));
        assertThat(ReverbChannelBuilder.onFabric("rdma", new InetSocketAddress(InetAddress.getByName("::1"), 7000)))
            .isEqualTo(new ReverbAddress("rdma://[0:0:0:0:0:0:0:1]:7000"));
        assertThat(ReverbChannelBuilder.onFabric("tcp", InetSocketAddress.createUnresolved("db.example", 7000)))
            .isEqualTo(new ReverbAddress("tcp://db.example:7000"));
    }

    @Test
    void badTargetsAndFabricsFailClearly()
    {
        assertThatThrownBy(() -> ReverbChannelBuilder.forTarget("dns:///127.0.0.1:1").fabric("shm"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tcp, rdma or reverb");
        assertThatThrownBy(() -> ReverbChannelBuilder.forTarget("nosuchscheme://x").build())
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("nosuchscheme://x").hasMessageContaining("shm, tcp");
        assertThatThrownBy(() -> ReverbChannelBuilder.forAddresses(List.of()))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one");
        assertThatThrownBy(() -> ReverbChannelBuilder.forAddresses(List.of("shm://a", "dns:///h:1")))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("dns:///h:1");
        assertThatThrownBy(() -> ReverbChannelBuilder.forAddresses(List.of("shm://a", "tcp://h:1", "shm://a")))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("twice");
        assertThatThrownBy(() -> ReverbChannelBuilder.forTarget("static:"))
            .isInstanceOf(IllegalArgumentException.class);
        // without a port grpc-java's DNS resolver would take the channel's default port, and Reverb has none
        assertThatThrownBy(() -> ReverbChannelBuilder.forTarget("dns:///127.0.0.1"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no port");
        assertThatThrownBy(() -> ReverbChannelBuilder.forTarget("localhost"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no port");
        assertThatThrownBy(() -> ReverbChannelBuilder.forAddress("127.0.0.1", 70_000))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("70000");
    }
}
