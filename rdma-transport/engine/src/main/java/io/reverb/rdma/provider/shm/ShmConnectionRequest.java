package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * A connection request read from a listener's socket; answered exactly once.
 */
final class ShmConnectionRequest implements ConnectionRequest
{
    private final ShmVerbsContext context;
    private final SocketChannel socket;
    private final Handshake request;
    private boolean answered;

    ShmConnectionRequest(final ShmVerbsContext context, final SocketChannel socket, final Handshake request)
    {
        this.context = context;
        this.socket = socket;
        this.request = request;
    }

    @Override
    public ByteBuffer privateData()
    {
        return ByteBuffer.wrap(request.privateData).asReadOnlyBuffer();
    }

    @Override
    public String remoteAddress()
    {
        return "shm://pid:" + request.pid;
    }

    @Override
    public QueuePair accept(final QueuePairAttributes attributes, final ByteBuffer privateData) throws IOException
    {
        final byte[] ourPrivateData = Handshake.copyPrivateData(privateData);
        markAnswered();
        final ShmQueuePair qp;
        try
        {
            qp = context.createQp(attributes, remoteAddress());
        }
        catch (final IOException | RuntimeException ex)
        {
            closeSocket();
            throw ex;
        }
        boolean done = false;
        try
        {
            // Map the connector's files first: if they are unusable the connector hears EOF, not ACCEPT.
            qp.attachPeer(request);
            qp.describe(Handshake.ACCEPT, ourPrivateData).write(socket);
            qp.start(socket);
            done = true;
            return qp;
        }
        finally
        {
            if (!done)
            {
                closeSocket();
                qp.close();
            }
        }
    }

    @Override
    public void reject(final ByteBuffer privateData) throws IOException
    {
        final byte[] ourPrivateData = Handshake.copyPrivateData(privateData);
        markAnswered();
        try
        {
            final Handshake reject = new Handshake();
            reject.type = Handshake.REJECT;
            reject.pid = ProcessHandle.current().pid();
            reject.prefix = context.prefix();
            reject.privateData = ourPrivateData;
            reject.write(socket);
        }
        finally
        {
            closeSocket();
        }
    }

    /** The listener closed before anyone took this request. */
    synchronized void discard()
    {
        answered = true;
        closeSocket();
    }

    private synchronized void markAnswered()
    {
        if (answered)
        {
            throw new IllegalStateException("connection request already answered");
        }
        answered = true;
    }

    private void closeSocket()
    {
        try
        {
            socket.close();
        }
        catch (final IOException ignore)
        {
            // Nothing more to tell the connector.
        }
    }
}
