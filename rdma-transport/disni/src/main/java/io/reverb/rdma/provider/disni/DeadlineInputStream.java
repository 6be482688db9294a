package io.reverb.rdma.provider.disni;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;

/**
 * A socket's input with one deadline for everything read through it: each read may wait only for the time
 * left, so a peer that sends a byte now and then cannot stretch a handshake past its deadline (a plain socket
 * timeout is per read).
 */
final class DeadlineInputStream extends InputStream
{
    private final Socket socket;
    private final InputStream in;
    private final long deadlineNanos;

    /**
     * @param socket        the socket.
     * @param deadlineNanos {@link System#nanoTime()} after which reads fail with {@link SocketTimeoutException}.
     * @throws IOException if the socket has no input.
     */
    DeadlineInputStream(final Socket socket, final long deadlineNanos) throws IOException
    {
        this.socket = socket;
        this.in = socket.getInputStream();
        this.deadlineNanos = deadlineNanos;
    }

    private void arm() throws IOException
    {
        final long left = deadlineNanos - System.nanoTime();
        if (left <= 0)
        {
            throw new SocketTimeoutException("handshake deadline passed");
        }
        socket.setSoTimeout(DisniVerbsContext.millisUntil(deadlineNanos));
    }

    @Override
    public int read() throws IOException
    {
        arm();
        return in.read();
    }

    @Override
    public int read(final byte[] b, final int off, final int len) throws IOException
    {
        arm();
        return in.read(b, off, len);
    }

    @Override
    public int available() throws IOException
    {
        return in.available();
    }

    @Override
    public void close() throws IOException
    {
        in.close();
    }
}
