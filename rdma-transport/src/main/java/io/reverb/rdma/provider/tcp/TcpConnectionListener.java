package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * A listening socket. {@link #accept(long)} waits for a TCP connection and reads its CONNECT
 * message; a connection that does not speak the handshake is dropped and the wait goes on.
 */
final class TcpConnectionListener implements ConnectionListener
{
    private final TcpVerbsContext context;
    private final ServerSocketChannel server;
    private final String localAddress;
    private volatile boolean closed;

    TcpConnectionListener(final TcpVerbsContext context, final String address, final int backlog) throws IOException
    {
        this.context = context;
        final InetSocketAddress requested = TcpAddress.parse(address);
        if (requested.isUnresolved())
        {
            throw new IOException("cannot resolve host of tcp address " + address);
        }
        server = ServerSocketChannel.open();
        try
        {
            server.bind(requested, Math.max(1, backlog));
        }
        catch (final IOException ex)
        {
            TcpVerbsContext.closeQuietly(server);
            throw new IOException("cannot listen on tcp://" + address + ": " + ex.getMessage(), ex);
        }
        final InetSocketAddress bound = (InetSocketAddress)server.getLocalAddress();
        localAddress = TcpAddress.format(requested.getHostString(), bound.getPort());
    }

    @Override
    public String localAddress()
    {
        return localAddress;
    }

    @Override
    public ConnectionRequest accept(final long timeoutNanos) throws IOException
    {
        final long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        while (true)
        {
            if (closed)
            {
                throw new IOException("listener on tcp://" + localAddress + " is closed");
            }
            final long remainingMillis = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (remainingMillis <= 0)
            {
                return null;
            }
            final Socket socket;
            try
            {
                server.socket().setSoTimeout((int)Math.min(Integer.MAX_VALUE, remainingMillis));
                socket = server.socket().accept();
            }
            catch (final SocketTimeoutException ex)
            {
                return null;
            }
            catch (final IOException ex)
            {
                if (closed)
                {
                    throw new IOException("listener on tcp://" + localAddress + " is closed", ex);
                }
                throw ex;
            }
            final SocketChannel channel = socket.getChannel();
            try
            {
                TcpVerbsContext.configure(channel);
                // The connector writes CONNECT at once; a silent or foreign peer does not hold us long.
                socket.setSoTimeout((int)Math.min(Integer.MAX_VALUE,
                    TimeUnit.NANOSECONDS.toMillis(context.config().connectTimeoutNanos())));
                final TcpHandshake request = TcpHandshake.read(socket.getInputStream());
                if (request.type == TcpHandshake.CONNECT)
                {
                    return new TcpConnectionRequest(context, channel, request,
                        socket.getInetAddress().getHostAddress() + ":" + socket.getPort());
                }
            }
            catch (final IOException ex)
            {
                // Not a verbs peer, or it went away: drop it and keep waiting.
            }
            TcpVerbsContext.closeQuietly(channel);
        }
    }

    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        TcpVerbsContext.closeQuietly(server);
        context.removed(this);
    }

    @Override
    public String toString()
    {
        return "TcpConnectionListener{" + localAddress + '}';
    }
}
