package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A CONNECT received by a listener, answered once with ACCEPT (the socket becomes the QP's) or
 * REJECT (the socket is closed after the answer).
 */
final class TcpConnectionRequest implements ConnectionRequest
{
    private final TcpVerbsContext context;
    private final TcpStream channel;
    private final TcpHandshake request;
    private final String remoteAddress;
    private boolean answered;

    TcpConnectionRequest(
        final TcpVerbsContext context,
        final TcpStream channel,
        final TcpHandshake request,
        final String remoteAddress)
    {
        this.context = context;
        this.channel = channel;
        this.request = request;
        this.remoteAddress = remoteAddress;
    }

    @Override
    public ByteBuffer privateData()
    {
        return request.privateDataBuffer();
    }

    @Override
    public String remoteAddress()
    {
        return remoteAddress;
    }

    @Override
    public synchronized QueuePair accept(final QueuePairAttributes attributes, final ByteBuffer privateData)
        throws IOException
    {
        answer();
        try
        {
            context.checkAttributes(attributes);
            final TcpHandshake accept = TcpHandshake.of(
                TcpHandshake.ACCEPT, attributes.maxSendWr(), context.config().rnrRetryNanos(), privateData);
            TcpStream.writeFully(channel, accept.encode(), deadline());
            return context.start(attributes, channel, request, remoteAddress);
        }
        catch (final IOException | RuntimeException ex)
        {
            TcpVerbsContext.closeQuietly(channel);
            throw ex;
        }
    }

    @Override
    public synchronized void reject(final ByteBuffer privateData) throws IOException
    {
        answer();
        try
        {
            TcpStream.writeFully(channel, TcpHandshake.of(TcpHandshake.REJECT, 1, 0, privateData).encode(), deadline());
        }
        finally
        {
            TcpVerbsContext.closeQuietly(channel);
        }
    }

    /** @return when an answer must be on its way: a peer that does not read it costs at most the handshake deadline. */
    private long deadline()
    {
        return System.nanoTime() + context.config().handshakeTimeoutNanos();
    }

    /** The listener closed before anyone took this request. */
    synchronized void discard()
    {
        answered = true;
        TcpVerbsContext.closeQuietly(channel);
    }

    private void answer()
    {
        if (answered)
        {
            throw new IllegalStateException("connection request from " + remoteAddress + " was already answered");
        }
        answered = true;
    }
}
