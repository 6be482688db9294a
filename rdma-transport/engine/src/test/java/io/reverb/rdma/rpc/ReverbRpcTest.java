package io.reverb.rdma.rpc;

import io.reverb.rpc.AbstractRpcTransportTest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;

/**
 * rpc-core's call suite over {@code reverb://} on one host: every call travels over the shm connection the client
 * moved to, through the same transport SPI as {@code shm://}.
 */
class ReverbRpcTest extends AbstractRpcTransportTest
{
    @Override
    protected String newServerUri()
    {
        // The suite connects to the URI it listens on, so it needs a concrete port.
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return "reverb://127.0.0.1:" + socket.getLocalPort();
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }

    /** @return the shm address the reverb:// server on this URI's port listens on. */
    private static String shmAddress(final String serverUri)
    {
        return ReverbTransportTest.listener(URI.create(serverUri).getPort()).shmAddress();
    }

    @Override
    protected boolean killServerConnections(final String serverUri)
    {
        return killIn(ReverbTransportTest.reverb().shm, shmAddress(serverUri)) > 0;
    }

    @Override
    protected boolean freezeServer(final String serverUri, final boolean frozen)
    {
        final String shm = shmAddress(serverUri);
        for (final EngineTransportConnection connection : ReverbTransportTest.reverb().shm.connections())
        {
            if (connection.localAddress().equals(shm))
            {
                connection.engineConnection().pauseReceiving(frozen);
            }
        }
        return true;
    }

    @Override
    protected boolean freezeClients(final String serverUri, final boolean frozen)
    {
        final String shm = shmAddress(serverUri);
        int n = 0;
        for (final EngineTransportConnection connection : ReverbTransportTest.reverb().shm.connections())
        {
            if (!connection.localAddress().equals(shm) && connection.remoteAddress().equals(shm))
            {
                connection.engineConnection().pauseReceiving(frozen);
                n++;
            }
        }
        return n > 0;
    }

    private static int killIn(final EngineTransport transport, final String serverAddress)
    {
        int n = 0;
        for (final EngineTransportConnection connection : transport.connections())
        {
            if (connection.localAddress().equals(serverAddress))
            {
                connection.engineConnection().abort(new IOException("killed for a test"));
                n++;
            }
        }
        return n;
    }
}
