package io.reverb.rdma.rpc;

import io.reverb.rpc.AbstractStreamTransportContractTest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;

/**
 * rpc-core's stream SPI contract suite over {@code reverb://} on one host: every stream travels over the shm
 * connection the client moved to, through the same transport SPI as {@code shm://}.
 */
class ReverbStreamTransportContractTest extends AbstractStreamTransportContractTest
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

    @Override
    protected boolean killServerConnections(final String uri)
    {
        final String shm = ReverbTransportTest.listener(URI.create(uri).getPort()).shmAddress();
        int n = 0;
        for (final EngineTransportConnection connection : ReverbTransportTest.reverb().shm.connections())
        {
            if (connection.localAddress().equals(shm))
            {
                connection.engineConnection().abort(new IOException("killed for a test"));
                n++;
            }
        }
        return n > 0;
    }
}
