package io.reverb.rdma.rpc;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Answers at an address of its own and passes every byte of every connection on to a server on 127.0.0.1, both ways:
 * what a peer that relays a {@code reverb://} server's offer to a client that dialled it does at the least. Test
 * helper; a thread per direction.
 */
final class TcpRelay implements AutoCloseable
{
    private final ServerSocket server;
    private final int target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Thread acceptor;

    TcpRelay(final int target) throws IOException
    {
        this.target = target;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptor = new Thread(this::accept, "tcp-relay-" + server.getLocalPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port()
    {
        return server.getLocalPort();
    }

    private void accept()
    {
        while (!server.isClosed())
        {
            try
            {
                final Socket client = server.accept();
                final Socket upstream = new Socket(InetAddress.getLoopbackAddress(), target);
                sockets.add(client);
                sockets.add(upstream);
                pump(client, upstream);
                pump(upstream, client);
            }
            catch (final IOException ex)
            {
                return; // closed
            }
        }
    }

    private void pump(final Socket from, final Socket to)
    {
        final Thread thread = new Thread(() ->
        {
            final byte[] buffer = new byte[64 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream())
            {
                int n;
                while ((n = in.read(buffer)) >= 0)
                {
                    out.write(buffer, 0, n);
                    out.flush();
                }
            }
            catch (final IOException ex)
            {
                // one side went: the other goes too
            }
            finally
            {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "tcp-relay-pump");
        thread.setDaemon(true);
        thread.start();
    }

    private static void closeQuietly(final Socket socket)
    {
        try
        {
            socket.close();
        }
        catch (final IOException ex)
        {
            // closing
        }
    }

    @Override
    public void close() throws IOException
    {
        server.close();
        for (final Socket socket : sockets)
        {
            closeQuietly(socket);
        }
    }
}
