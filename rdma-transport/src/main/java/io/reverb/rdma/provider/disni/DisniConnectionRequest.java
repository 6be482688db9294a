package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.RdmaCmId;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;

/**
 * A connector's handshake REQUEST, waiting for {@link #accept} or {@link #reject}. Accepting answers
 * ACCEPT with the rdma_cm address, learns the connector's rdma_cm source (refused unless it is the
 * handshake's own TCP peer address), claims its CONNECT_REQUEST from the listener, creates the QP on it and
 * calls {@code rdma_accept}; see {@link Handshake}.
 */
final class DisniConnectionRequest implements ConnectionRequest
{
    private final DisniConnectionListener listener;
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final ByteBuffer privateData;
    private final String remoteAddress;
    private boolean answered;

    DisniConnectionRequest(
        final DisniConnectionListener listener,
        final Socket socket,
        final DataInputStream in,
        final DataOutputStream out,
        final ByteBuffer privateData)
    {
        this.listener = listener;
        this.socket = socket;
        this.in = in;
        this.out = out;
        this.privateData = privateData;
        final InetSocketAddress peer = (InetSocketAddress)socket.getRemoteSocketAddress();
        this.remoteAddress = peer == null ? "unknown" : DisniAddress.format(peer);
    }

    @Override
    public ByteBuffer privateData()
    {
        return privateData.asReadOnlyBuffer();
    }

    @Override
    public String remoteAddress()
    {
        return remoteAddress;
    }

    @Override
    public QueuePair accept(final QueuePairAttributes attributes, final ByteBuffer acceptPrivateData) throws IOException
    {
        attributes.validate();
        DisniVerbsContext.checkPrivateData(acceptPrivateData);
        answer();
        final DisniVerbsContext context = listener.context();
        final long deadline = System.nanoTime() + context.config().connectTimeoutNanos();
        RdmaCmId id = null;
        DisniQueuePair qp = null;
        final CmEventDispatcher.Waiter waiter = new CmEventDispatcher.Waiter();
        try
        {
            Handshake.writeAccept(out, listener.rdmaCmAddress(), acceptPrivateData);
            out.flush();
            final InetSocketAddress source = Handshake.read(in, Handshake.SOURCE).source();
            checkSource(source, socket.getInetAddress(), remoteAddress);
            id = listener.claim(source, deadline);
            context.dispatcher().register(id, waiter);
            qp = context.newQueuePair(id, attributes, privateData, remoteAddress);
            id.accept(context.connParam());
            waiter.await(CmEventDispatcher.ESTABLISHED, deadline - System.nanoTime(), "accepting " + remoteAddress);
            qp.established();
            waiter.handOver(qp);
            return context.track(qp);
        }
        catch (final IOException | RuntimeException ex)
        {
            if (qp != null)
            {
                qp.close();
            }
            else if (id != null)
            {
                context.dispatcher().destroyId(id);
            }
            throw ex;
        }
        finally
        {
            // The handshake is over either way; the QP lives on rdma_cm alone.
            DisniVerbsContext.quietly(socket::close);
        }
    }

    /**
     * A connector names the rdma_cm request it owns by its source {@code ip:port}; that source must be on the
     * host the handshake came from, or one connector could claim (and hijack) another's request.
     *
     * @param source  the SOURCE frame's address.
     * @param tcpPeer the handshake's TCP peer.
     * @param remote  for the message.
     * @throws IOException if the addresses differ.
     */
    static void checkSource(final InetSocketAddress source, final InetAddress tcpPeer, final String remote)
        throws IOException
    {
        if (tcpPeer == null || !tcpPeer.equals(source.getAddress()))
        {
            throw new IOException("rdma:// handshake from " + remote + " named rdma_cm source " +
                DisniAddress.format(source) + ", which is not its own address: refused (Reverb connectors bind " +
                "both to the same RDMA interface address)");
        }
    }

    @Override
    public void reject(final ByteBuffer rejectPrivateData) throws IOException
    {
        DisniVerbsContext.checkPrivateData(rejectPrivateData);
        answer();
        try
        {
            Handshake.writeReject(out, rejectPrivateData);
            out.flush();
        }
        finally
        {
            DisniVerbsContext.quietly(socket::close);
        }
    }

    private void answer()
    {
        synchronized (this)
        {
            if (answered)
            {
                throw new IllegalStateException("connection request from " + remoteAddress + " was already answered");
            }
            answered = true;
        }
    }

    @Override
    public String toString()
    {
        return "DisniConnectionRequest{from " + remoteAddress + '}';
    }
}
