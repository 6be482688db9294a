package io.reverb.rdma.rpc;

import io.reverb.rdma.provider.disni.RdmaTestDevice;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Addresses for the rpc suites run over rdma:// in this module (the RDMA device, real or emulated). */
final class RdmaTestUris
{
    private RdmaTestUris()
    {
    }

    /** @return the address rdma:// contexts open here; skips the calling test, with the cause, where rdma cannot run. */
    static String host()
    {
        return RdmaTestDevice.hostOrSkip();
    }

    /**
     * @param scheme {@code rdma} or {@code reverb}.
     * @return a fresh server address of that scheme on {@link #host()} with a concrete port (the suites connect to the
     *         address they listen on; the port is the handshake's TCP port).
     */
    static String newServerUri(final String scheme)
    {
        final String host = host();
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(host)))
        {
            return scheme + "://" + host + ":" + socket.getLocalPort();
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }
}
