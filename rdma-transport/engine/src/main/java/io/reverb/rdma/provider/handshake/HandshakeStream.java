package io.reverb.rdma.provider.handshake;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * What a {@link ListenerHandshakes} thread reads an accepted socket's handshake through: the socket itself, or a
 * session over it (TLS) that may have bytes of its own to write while it reads. Non-blocking.
 */
public interface HandshakeStream
{
    /** @return the socket. */
    SocketChannel channel();

    /**
     * @param dst where bytes go.
     * @return bytes read (possibly 0), or -1 at the end of the stream.
     * @throws IOException on a socket error or a malformed or refused session.
     */
    int read(ByteBuffer dst) throws IOException;

    /** @return true if the session has bytes of its own to write (the listener then waits for writability too). */
    default boolean wantsWrite()
    {
        return false;
    }

    /**
     * @param channel a socket.
     * @return the socket as a stream.
     */
    static HandshakeStream of(final SocketChannel channel)
    {
        return new HandshakeStream()
        {
            @Override
            public SocketChannel channel()
            {
                return channel;
            }

            @Override
            public int read(final ByteBuffer dst) throws IOException
            {
                return channel.read(dst);
            }
        };
    }
}
