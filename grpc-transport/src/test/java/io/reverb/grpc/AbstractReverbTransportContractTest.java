package io.reverb.grpc;

import io.grpc.ServerServiceDefinition;
import io.grpc.ServerStreamTracer;
import io.grpc.internal.InternalServer;
import io.grpc.internal.ManagedClientTransport;

import java.net.URI;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;

/**
 * The transport contract suite over a Reverb transport: {@link ReverbServer} (one {@link ReverbServerTransport} per connection) and
 * {@link ReverbClientTransport} as {@link ReverbServerBuilder} and {@link ReverbChannelBuilder} create them. After
 * each test every registered buffer and credit of the transport must be back.
 */
abstract class AbstractReverbTransportContractTest extends AbstractTransportContractTest
{
    private String address;

    /**
     * @return a fresh server address of this transport.
     */
    protected abstract String newAddress();

    @Override
    protected InternalServer newServer(final List<? extends ServerStreamTracer.Factory> tracers,
        final List<ServerServiceDefinition> services)
    {
        address = newAddress();
        return new ReverbServer(address, services, tracers, UnaryOperator.identity());
    }

    @Override
    protected ManagedClientTransport newClientTransport(final InternalServer server, final String authority,
        final String userAgent)
    {
        return new ReverbClientTransport((ReverbAddress)server.getListenSocketAddress(), authority, userAgent,
            UnaryOperator.identity(), new ConcurrentHashMap<>(), null, null);
    }

    @Override
    protected String authorityOf(final InternalServer server)
    {
        // as ReverbChannelBuilder.forTarget gives a Reverb address: its authority (host:port, or a name)
        return URI.create(((ReverbAddress)server.getListenSocketAddress()).uri()).getRawAuthority();
    }

    @Override
    protected void assertTransportResourcesReleased() throws Exception
    {
        AbstractReverbConformanceTest.assertReleased(address);
    }
}
