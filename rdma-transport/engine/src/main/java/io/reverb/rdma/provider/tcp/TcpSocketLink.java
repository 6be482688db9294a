package io.reverb.rdma.provider.tcp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SocketChannel;

/**
 * The plain socket, with nothing layered on it: the stream a handshake without TLS reads and writes, and then the
 * QP's link.
 */
final class TcpSocketLink implements TcpLink, TcpStream
{
    private final SocketChannel channel;

    /** @param channel a connected socket in non-blocking mode */
    TcpSocketLink(final SocketChannel channel)
    {
        this.channel = channel;
    }

    @Override
    public SocketChannel channel()
    {
        return channel;
    }

    @Override
    public SelectableChannel selectable()
    {
        return channel;
    }

    @Override
    public long read(final ByteBuffer[] dsts, final int offset, final int length) throws IOException
    {
        return channel.read(dsts, offset, length);
    }

    @Override
    public int read(final ByteBuffer dst) throws IOException
    {
        return channel.read(dst);
    }

    @Override
    public long write(final ByteBuffer[] srcs, final int offset, final int length) throws IOException
    {
        return channel.write(srcs, offset, length);
    }

    @Override
    public int write(final ByteBuffer src) throws IOException
    {
        return channel.write(src);
    }

    @Override
    public boolean flush()
    {
        return true;
    }

    @Override
    public boolean hasBufferedInput()
    {
        return false;
    }

    @Override
    public void shutdownOutput() throws IOException
    {
        channel.shutdownOutput();
    }

    @Override
    public void close()
    {
        TcpVerbsContext.closeQuietly(channel);
    }

    @Override
    public String toString()
    {
        return "TcpSocketLink{" + channel + '}';
    }
}
