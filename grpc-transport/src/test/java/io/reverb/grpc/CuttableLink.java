package io.reverb.grpc;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP forwarder on loopback between a client and a {@code tcp://} server whose link can be cut: once cut, bytes
 * in both directions are read and dropped, and no socket closes, as when a cable is pulled or a firewall starts
 * dropping packets. Only a keep-alive notices. One thread per direction per connection; {@link #close()} ends them.
 */
final class CuttableLink implements AutoCloseable
{
    private final ServerSocket listener;
    private final InetSocketAddress target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile boolean cut;
    private volatile boolean closed;

    /**
     * @param targetPort the server's port on 127.0.0.1.
     * @throws IOException if it cannot listen.
     */
    CuttableLink(final int targetPort) throws IOException
    {
        this.target = new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort);
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        final Thread acceptor = new Thread(this::accept, "cuttable-link-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** @return the address clients connect to. */
    String address()
    {
        return "tcp://127.0.0.1:" + listener.getLocalPort();
    }

    /** Drops everything from now on, both ways, without closing anything. */
    void cut()
    {
        cut = true;
    }

    private void accept()
    {
        while (!closed)
        {
            try
            {
                final Socket client = listener.accept();
                final Socket server = new Socket(target.getAddress(), target.getPort());
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(server);
                pump(client, server, "up");
                pump(server, client, "down");
            }
            catch (final IOException e)
            {
                return; // closed
            }
        }
    }

    private void pump(final Socket from, final Socket to, final String direction)
    {
        final Thread t = new Thread(() ->
        {
            final byte[] buffer = new byte[64 * 1024];
            try
            {
                final InputStream in = from.getInputStream();
                final OutputStream out = to.getOutputStream();
                int n;
                while ((n = in.read(buffer)) >= 0)
                {
                    if (!cut)
                    {
                        out.write(buffer, 0, n);
                        out.flush();
                    }
                }
                if (!cut)
                {
                    to.shutdownOutput();
                }
            }
            catch (final IOException e)
            {
                // a side closed (or close() ran): the other direction ends on its own
            }
        }, "cuttable-link-" + direction);
        t.setDaemon(true);
        t.start();
    }

    @Override
    public void close() throws IOException
    {
        closed = true;
        listener.close();
        for (final Socket s : sockets)
        {
            s.close();
        }
    }
}
