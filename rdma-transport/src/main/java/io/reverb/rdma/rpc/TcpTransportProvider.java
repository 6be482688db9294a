package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportProvider;
import java.io.IOException;
import java.net.URI;
import java.util.concurrent.CompletableFuture;

/**
 * rpc-core's transport for {@code tcp://host:port}: the same connection engine over the tcp verbs
 * provider (software RDMA over TCP). Port 0 binds an ephemeral port; the listener's address
 * reports it. {@code ?polling=MODE} as for {@link ShmTransportProvider}.
 */
public final class TcpTransportProvider implements TransportProvider
{
    private static final String SCHEME = "tcp";
    private static final EngineTransport TRANSPORT = new EngineTransport(SCHEME);

    @Override
    public String scheme()
    {
        return SCHEME;
    }

    @Override
    public boolean isAvailable()
    {
        return unavailabilityCause() == null;
    }

    @Override
    public String unavailabilityCause()
    {
        return TRANSPORT.unavailabilityCause();
    }

    /**
     * Sets the default engine's configuration; only before that engine is first used.
     *
     * @param engineConfig the configuration (concluded here).
     * @throws IllegalStateException if the default engine is already open.
     */
    public static void configure(final EngineConfig engineConfig)
    {
        TRANSPORT.configure(engineConfig);
    }

    static RdmaEngine engine() throws IOException
    {
        return TRANSPORT.defaultEngine();
    }

    @Override
    public CompletableFuture<Connection> connect(final URI uri, final ConnectionHandler handler)
    {
        return TRANSPORT.connect(uri, handler);
    }

    @Override
    public ServerListener listen(final URI uri, final ServerListener.Acceptor acceptor) throws IOException
    {
        return TRANSPORT.listen(uri, acceptor);
    }

    /**
     * Test support: fails the server side of every connection accepted on {@code hostPort} abruptly.
     *
     * @param hostPort the listener's bound address.
     * @return connections failed.
     */
    public static int killServerConnections(final String hostPort)
    {
        return TRANSPORT.killServerConnections(hostPort);
    }

    /**
     * Test support: the server side of every connection accepted on {@code hostPort} stops (or resumes) reading.
     *
     * @param hostPort the listener's bound address.
     * @param frozen   true to hang.
     * @return connections affected.
     */
    public static int freezeServer(final String hostPort, final boolean frozen)
    {
        return TRANSPORT.freezeServer(hostPort, frozen);
    }

    @Override
    public ResourceUsage resourceUsage()
    {
        return TRANSPORT.resourceUsage();
    }
}
