package io.reverb.rdma.provider.shm;

import io.reverb.rdma.provider.base.AbstractConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.provider.handshake.ListenerHandshakes;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * A listening Unix domain socket, {@code <shm dir>/<name>.sock}. A socket file nobody answers on
 * (left by a crashed process) is replaced; one that answers means the name is taken. Closing deletes the socket
 * file only if it is still the one this listener bound (a replacement may have taken the name).
 *
 * <p>Handshakes are read concurrently by a {@link ListenerHandshakes} thread, each against the
 * {@linkplain io.reverb.rdma.verbs.VerbsConfig#handshakeTimeoutNanos() handshake deadline}; a peer
 * whose credentials ({@code SO_PEERCRED}) name another user is refused before a byte is read.
 */
final class ShmConnectionListener extends AbstractConnectionListener
{
    private final ShmVerbsContext context;
    private final String name;
    private final Path socketPath;
    /** The identity of the socket file this listener bound: the path may name another listener's file later. */
    private final Object socketKey;
    private final ListenerHandshakes<ShmConnectionRequest> handshakes;

    ShmConnectionListener(final ShmVerbsContext context, final String name, final Path socketPath, final int backlog)
        throws IOException
    {
        this.context = context;
        this.name = name;
        this.socketPath = socketPath;
        if (Files.exists(socketPath, LinkOption.NOFOLLOW_LINKS))
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
            socketKey = ShmFiles.fileKey(socketPath);
            handshakes = new ListenerHandshakes<>("shm://" + name, channel, new Protocol(),
                context.config().handshakeTimeoutNanos(), context.config().maxPendingHandshakes(),
                ListenerHandshakes.refusalLog());
        }
        catch (final IOException ex)
        {
            channel.close();
            throw new IOException("cannot listen on shm://" + name + " (" + socketPath + "): " + ex.getMessage(), ex);
        }
    }

    /** The shm handshake framing: a 4-byte length, then the message. */
    private final class Protocol implements ListenerHandshakes.Protocol<ShmConnectionRequest>
    {
        @Override
        public int headerLength()
        {
            return 4;
        }

        @Override
        public int bodyLength(final ByteBuffer header) throws IOException
        {
            return Handshake.bodyLength(header);
        }

        @Override
        public void checkPeer(final SocketChannel channel) throws IOException
        {
            ShmPeers.checkSameUser(channel, context.directoryOwner());
        }

        @Override
        public ShmConnectionRequest complete(final SocketChannel channel, final ByteBuffer header, final ByteBuffer body)
            throws IOException
        {
            final Handshake request = Handshake.decode(body);
            if (request.type != Handshake.REQUEST)
            {
                throw new IOException("expected a connection request, got type " + request.type);
            }
            return new ShmConnectionRequest(context, channel, request);
        }

        @Override
        public void discard(final ShmConnectionRequest request)
        {
            request.discard();
        }
    }

    Path socketPath()
    {
        return socketPath;
    }

    /** @return sockets dropped before the engine saw them (malformed, silent, another user, over the cap). */
    long refusedCount()
    {
        return handshakes.refused();
    }

    @Override
    public String localAddress()
    {
        return name;
    }

    @Override
    protected ConnectionRequest take(final long timeoutNanos) throws IOException
    {
        return handshakes.poll(timeoutNanos);
    }

    /**
     * The socket file goes first, while this listener still answers on it (so no other listener can have taken the
     * name yet), and only if it is still this listener's: a replacement that took the name keeps its file.
     */
    @Override
    protected void release()
    {
        deleteSocket();
        handshakes.close();
        context.removed(this);
    }

    /** Deletes the socket file if it is still the one this listener bound. */
    void deleteSocket()
    {
        ShmFiles.deleteIfSameFile(socketPath, socketKey);
    }

    @Override
    public String toString()
    {
        return "shm://" + name;
    }
}
