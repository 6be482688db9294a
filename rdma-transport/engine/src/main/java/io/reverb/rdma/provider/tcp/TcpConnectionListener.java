package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.base.AbstractConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.provider.handshake.HandshakeStream;
import io.reverb.rdma.provider.handshake.ListenerHandshakes;
import io.reverb.rdma.verbs.TlsConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * A listening socket. Handshakes of accepted sockets are read concurrently, each against the
 * {@linkplain io.reverb.rdma.verbs.VerbsConfig#handshakeTimeoutNanos() handshake deadline}, by a
 * {@link ListenerHandshakes} thread; {@link #accept(long)} takes the next complete CONNECT. A socket that
 * does not speak the handshake, is silent, or comes when too many handshakes are pending is dropped and
 * reported (one line, rate-limited) and the listener goes on. With TLS ({@link TlsConfig}) the handshake is read
 * through a {@link TlsTcpStream} on that same thread, so a TLS handshake never holds the listener either; a plaintext
 * client of a TLS listener, or a TLS client of a plaintext one, is told so in a plaintext {@link TcpHandshake#REFUSE}.
 */
final class TcpConnectionListener extends AbstractConnectionListener
{
    /** A TLS record's first bytes: handshake content type, major version 3. */
    private static final byte TLS_HANDSHAKE_RECORD = 0x16;
    private static final byte TLS_MAJOR_VERSION = 0x03;

    private final TcpVerbsContext context;
    private final ListenerHandshakes<TcpConnectionRequest> handshakes;
    private final String localAddress;

    TcpConnectionListener(final TcpVerbsContext context, final String address, final int backlog) throws IOException
    {
        this.context = context;
        final InetSocketAddress requested = TcpAddress.parse(address);
        if (requested.isUnresolved())
        {
            throw new IOException("cannot resolve host of tcp address " + address);
        }
        final ServerSocketChannel server = ServerSocketChannel.open();
        try
        {
            server.bind(requested, Math.max(1, backlog));
            final InetSocketAddress bound = (InetSocketAddress)server.getLocalAddress();
            localAddress = TcpAddress.format(requested.getHostString(), bound.getPort());
            handshakes = new ListenerHandshakes<>("tcp://" + localAddress, server, new Protocol(),
                context.config().handshakeTimeoutNanos(), context.config().maxPendingHandshakes(),
                ListenerHandshakes.refusalLog());
        }
        catch (final IOException ex)
        {
            TcpVerbsContext.closeQuietly(server);
            throw new IOException("cannot listen on tcp://" + address + ": " + ex.getMessage(), ex);
        }
    }

    /** The tcp:// handshake framing: a 20-byte header, then the private data it announces. */
    private final class Protocol implements ListenerHandshakes.Protocol<TcpConnectionRequest>
    {
        @Override
        public int headerLength()
        {
            return TcpHandshake.HEADER_LENGTH;
        }

        @Override
        public HandshakeStream open(final SocketChannel channel) throws IOException
        {
            final TlsConfig tls = context.config().tls();
            if (tls == null)
            {
                return TcpStream.plain(channel);
            }
            final Socket socket = channel.socket();
            return TlsTcpStream.server(channel, tls, socket.getInetAddress().getHostAddress() + ":" + socket.getPort());
        }

        @Override
        public int bodyLength(final ByteBuffer header) throws IOException
        {
            if (header.get(0) == TLS_HANDSHAKE_RECORD && header.get(1) == TLS_MAJOR_VERSION)
            {
                throw new ListenerHandshakes.Refusal("tls", "a TLS client; this listener does not use TLS",
                    TcpHandshake.refuse("this listener does not use TLS: connect without EngineConfig.tls, or " +
                        "enable TLS on the server"));
            }
            final TcpHandshake message = TcpHandshake.decodeHeader(header);
            if (message.type != TcpHandshake.CONNECT)
            {
                throw new IOException("expected CONNECT, got message type " + message.type);
            }
            return message.privateData.length;
        }

        @Override
        public TcpConnectionRequest complete(final SocketChannel channel, final ByteBuffer header, final ByteBuffer body)
            throws IOException
        {
            return complete(TcpStream.plain(channel), header, body);
        }

        @Override
        public TcpConnectionRequest complete(final HandshakeStream stream, final ByteBuffer header, final ByteBuffer body)
            throws IOException
        {
            final TcpHandshake message = TcpHandshake.decodeHeader(header);
            body.get(message.privateData);
            final SocketChannel channel = stream.channel();
            TcpVerbsContext.configure(channel);
            // Answers are written against the handshake deadline, with a selector: never blocking for good.
            channel.configureBlocking(false);
            final Socket socket = channel.socket();
            return new TcpConnectionRequest(context, (TcpStream)stream, message,
                socket.getInetAddress().getHostAddress() + ":" + socket.getPort());
        }

        @Override
        public void discard(final TcpConnectionRequest request)
        {
            request.discard();
        }
    }

    @Override
    public String localAddress()
    {
        return localAddress;
    }

    /** @return sockets dropped before the engine saw them (malformed, silent, over the pending cap). */
    long refusedCount()
    {
        return handshakes.refused();
    }

    @Override
    protected ConnectionRequest take(final long timeoutNanos) throws IOException
    {
        return handshakes.poll(timeoutNanos);
    }

    @Override
    protected void release()
    {
        handshakes.close();
        context.removed(this);
    }

    @Override
    public String toString()
    {
        return "tcp://" + localAddress;
    }
}
