package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.handshake.HandshakeStream;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * The byte stream of a tcp connection while its connection handshake (CONNECT, ACCEPT/REJECT/REFUSE) is written and
 * read, against a deadline: the plain socket, or a TLS session ({@link TlsTcpStream}) that then becomes the QP's
 * {@link TcpLink}. Non-blocking.
 */
interface TcpStream extends HandshakeStream, AutoCloseable
{
    /**
     * @param src bytes to write from its position.
     * @return bytes of {@code src} taken (its position advanced by as many); a TLS session may hold some of them
     *         until {@link #flush()}.
     * @throws IOException on a socket error.
     */
    int write(ByteBuffer src) throws IOException;

    /**
     * @return true if bytes read from the socket wait here, decoded, for {@link #read}: the socket will not signal
     *         readability for them.
     */
    default boolean hasBufferedInput()
    {
        return false;
    }

    /**
     * Writes bytes of the stream's own (a TLS session's) that wait to go out, without blocking.
     *
     * @return true if nothing of its own waits any more.
     * @throws IOException on a socket error.
     */
    default boolean flush() throws IOException
    {
        return true;
    }

    /** Ends the output (after a TLS close_notify, best effort); reads go on. @throws IOException on error. */
    void shutdownOutput() throws IOException;

    /** Closes the socket. */
    @Override
    void close();

    /**
     * @param channel a connected socket.
     * @return the socket as a plain stream.
     */
    static TcpStream plain(final SocketChannel channel)
    {
        return new TcpSocketLink(channel);
    }

    /**
     * Writes all of {@code src}, waiting for writability until the deadline (cold path: connection management).
     *
     * @param stream   the stream, its socket non-blocking.
     * @param src      the bytes.
     * @param deadline {@link System#nanoTime()} deadline.
     * @throws IOException on error, {@link SocketTimeoutException} past the deadline.
     */
    static void writeFully(final TcpStream stream, final ByteBuffer src, final long deadline) throws IOException
    {
        try (Selector selector = Selector.open())
        {
            while (true)
            {
                stream.write(src);
                if (!src.hasRemaining() && stream.flush())
                {
                    return;
                }
                await(stream.channel(), selector, SelectionKey.OP_WRITE, deadline);
            }
        }
    }

    /**
     * Fills {@code dst}, waiting for readability until the deadline, reading nothing beyond it.
     *
     * @param stream   the stream, its socket non-blocking.
     * @param dst      where the bytes go.
     * @param deadline {@link System#nanoTime()} deadline.
     * @throws IOException on error, EOF, or {@link SocketTimeoutException} past the deadline.
     */
    static void readFully(final TcpStream stream, final ByteBuffer dst, final long deadline) throws IOException
    {
        try (Selector selector = Selector.open())
        {
            while (dst.hasRemaining())
            {
                final int n = stream.read(dst);
                if (n < 0)
                {
                    throw new IOException("the peer closed the connection during the handshake");
                }
                if (n == 0 && dst.hasRemaining())
                {
                    await(stream.channel(), selector,
                        stream.wantsWrite() ? SelectionKey.OP_READ | SelectionKey.OP_WRITE : SelectionKey.OP_READ, deadline);
                }
            }
        }
    }

    /**
     * Waits until the socket is ready for {@code ops} or the deadline passes.
     *
     * @param channel  the socket, non-blocking.
     * @param selector a selector of the caller's.
     * @param ops      interest.
     * @param deadline {@link System#nanoTime()} deadline.
     * @throws IOException on error, {@link SocketTimeoutException} past the deadline.
     */
    static void await(final SocketChannel channel, final Selector selector, final int ops, final long deadline)
        throws IOException
    {
        final long remaining = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (remaining <= 0)
        {
            throw new SocketTimeoutException("handshake timed out");
        }
        final SelectionKey key = channel.keyFor(selector);
        if (key == null)
        {
            channel.register(selector, ops);
        }
        else
        {
            key.interestOps(ops);
        }
        selector.select(Math.max(1, remaining));
        selector.selectedKeys().clear();
    }
}
