package io.reverb.rdma.rpc;

import io.reverb.rpc.AbstractRpcTransportTest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** rpc-core's call suite over {@code tcp://} (the connection engine over the tcp verbs provider). */
class TcpRpcTest extends AbstractRpcTransportTest
{
    @Override
    protected String newServerUri()
    {
        // The suite connects to the URI it listens on, so it needs a concrete port.
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return "tcp://127.0.0.1:" + socket.getLocalPort();
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }

    @Override
    protected boolean killServerConnections(final String serverUri)
    {
        return EngineTransportTestHooks.killServerConnections(serverUri) > 0;
    }

    @Override
    protected boolean freezeServer(final String serverUri, final boolean frozen)
    {
        EngineTransportTestHooks.freezeServer(serverUri, frozen);
        return true;
    }

    @Override
    protected boolean freezeClients(final String serverUri, final boolean frozen)
    {
        return EngineTransportTestHooks.freezeClients(serverUri, frozen) > 0;
    }
}
