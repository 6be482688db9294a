package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A listening Unix domain socket, {@code <shm dir>/<name>.sock}. A socket file nobody answers on
 * (left by a crashed process) is replaced; one that answers means the name is taken.
 */
final class ShmConnectionListener implements ConnectionListener
{
    private final ShmVerbsContext context;
    private final String name;
    private final Path socketPath;
    private final ServerSocketChannel server;
    private final Selector selector;
    private volatile boolean closed;

    ShmConnectionListener(final ShmVerbsContext context, final String name, final Path socketPath, final int backlog)
        throws IOException
    {
        this.context = context;
        this.name = name;
        this.socketPath = socketPath;
        if (Files.exists(socketPath))
        {
            if (ShmFiles.isAnswering(socketPath))
            {
                throw new IOException("shm address '" + name + "' is already in use (" + socketPath + ")");
            }
            ShmFiles.deleteQuietly(socketPath);
        }
        final ServerSocketChannel channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try
        {
            channel.bind(UnixDomainSocketAddress.of(socketPath), Math.max(1, backlog));
            channel.configureBlocking(false);
            this.selector = Selector.open();
            channel.register(selector, SelectionKey.OP_ACCEPT);
        }
        catch (final IOException ex)
        {
            channel.close();
            throw new IOException("cannot listen on shm://" + name + " (" + socketPath + "): " + ex.getMessage(), ex);
        }
        this.server = channel;
    }

    Path socketPath()
    {
        return socketPath;
    }

    @Override
    public String localAddress()
    {
        return name;
    }

    @Override
    public ConnectionRequest accept(final long timeoutNanos) throws IOException
    {
        final long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        synchronized (this)
        {
            while (true)
            {
                if (closed)
                {
                    throw new IOException("shm listener " + name + " is closed");
                }
                final SocketChannel socket = server.accept();
                if (socket != null)
                {
                    final ShmConnectionRequest request = readRequest(socket);
                    if (request != null)
                    {
                        return request;
                    }
                    continue;
                }
                final long remaining = deadline - System.nanoTime();
                if (remaining <= 0)
                {
                    return null;
                }
                selector.select(Math.max(1, remaining / 1_000_000));
                selector.selectedKeys().clear();
            }
        }
    }

    private ShmConnectionRequest readRequest(final SocketChannel socket)
    {
        try
        {
            socket.configureBlocking(true);
            final Handshake request = Handshake.read(
                socket, System.nanoTime() + context.config().connectTimeoutNanos());
            if (request.type != Handshake.REQUEST)
            {
                throw new IOException("expected a connection request, got type " + request.type);
            }
            return new ShmConnectionRequest(context, socket, request);
        }
        catch (final IOException ex)
        {
            // A probe (see ShmFiles.isAnswering), a connector that died, or garbage: drop it and keep listening.
            try
            {
                socket.close();
            }
            catch (final IOException ignore)
            {
                // Dropping anyway.
            }
            return null;
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
        selector.wakeup();
        try
        {
            server.close();
        }
        catch (final IOException ignore)
        {
            // Closing anyway.
        }
        synchronized (this)
        {
            try
            {
                selector.close();
            }
            catch (final IOException ignore)
            {
                // Closing anyway.
            }
        }
        ShmFiles.deleteQuietly(socketPath);
        context.removed(this);
    }

    @Override
    public String toString()
    {
        return "ShmConnectionListener{" + name + '}';
    }
}
