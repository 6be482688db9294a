package io.reverb.grpc;

import io.grpc.MetricRecorder;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerStreamTracer;
import io.grpc.internal.ClientTransportFactory;
import io.grpc.internal.InternalServer;
import io.grpc.internal.ManagedClientTransport;
import io.grpc.netty.shaded.io.grpc.netty.InternalNettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import org.junit.jupiter.api.AfterEach;

import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * The reference: grpc-java's own Netty transport under the transport contract suite. Its transport server is built
 * as grpc-java's own NettyTransportTest builds it ({@code NettyServerBuilder.buildTransportServers}, package-private
 * there, so called reflectively here).
 */
class NettyTransportContractTest extends AbstractTransportContractTest
{
    private final List<ClientTransportFactory> factories = new ArrayList<>();

    @Override
    protected InternalServer newServer(final List<? extends ServerStreamTracer.Factory> tracers,
        final List<ServerServiceDefinition> services) throws Exception
    {
        final NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0));
        final Method build = NettyServerBuilder.class.getDeclaredMethod("buildTransportServers", List.class,
            MetricRecorder.class);
        build.setAccessible(true);
        return (InternalServer)build.invoke(builder, tracers, new MetricRecorder()
        {
        });
    }

    @Override
    protected ManagedClientTransport newClientTransport(final InternalServer server, final String authority,
        final String userAgent)
    {
        final InetSocketAddress address = (InetSocketAddress)server.getListenSocketAddress();
        final ClientTransportFactory factory = InternalNettyChannelBuilder.buildTransportFactory(
            NettyChannelBuilder.forAddress(address).usePlaintext());
        factories.add(factory);
        return factory.newClientTransport(address, new ClientTransportFactory.ClientTransportOptions()
            .setAuthority(authority).setUserAgent(userAgent)
            .setChannelLogger(new ContractListeners.QuietLogger()), new ContractListeners.QuietLogger());
    }

    @Override
    protected String authorityOf(final InternalServer server)
    {
        return "127.0.0.1:" + ((InetSocketAddress)server.getListenSocketAddress()).getPort();
    }

    @AfterEach
    void closeFactories()
    {
        factories.forEach(ClientTransportFactory::close);
    }

    @Override
    protected void assertTransportResourcesReleased()
    {
        // Netty's buffers are its own business; the Reverb subclasses check theirs
    }
}
