package io.reverb.rdma.rpc;

import io.reverb.rpc.AbstractStreamTransportContractTest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** rpc-core's stream SPI contract suite over {@code tcp://} (the connection engine over the tcp verbs provider). */
class TcpStreamTransportContractTest extends AbstractStreamTransportContractTest
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
    protected boolean killServerConnections(final String uri)
    {
        return EngineTransportTestHooks.killServerConnections(uri) > 0;
    }
}
