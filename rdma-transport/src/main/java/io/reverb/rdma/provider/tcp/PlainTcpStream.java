package io.reverb.rdma.provider.tcp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/** A tcp QP's socket without TLS. */
final class PlainTcpStream implements TcpStream
{
    private final SocketChannel channel;

    PlainTcpStream(final SocketChannel channel)
    {
        this.channel = channel;
    }

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

    @Override
    public int write(final ByteBuffer src) throws IOException
    {
        return channel.write(src);
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
}
