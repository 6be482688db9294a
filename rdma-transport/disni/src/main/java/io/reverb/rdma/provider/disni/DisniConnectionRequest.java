package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.RdmaCmId;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;

/**
 * A connector that has done its part of the {@link Handshake} (REQUEST, SOURCE, and its rdma_cm request is
 * claimed), waiting for {@link #accept} or {@link #reject}. Accepting answers ACCEPT, creates the QP on the
 * claimed rdma_cm id, calls {@code rdma_accept} and waits for ESTABLISHED within the handshake deadline;
 * rejecting answers REJECT and destroys the id (which makes the kernel reject the rdma_cm request).
 */
final class DisniConnectionRequest implements ConnectionRequest
{
    private final DisniConnectionListener listener;
    private final Socket socket;
    private final DataOutputStream out;
    private final ByteBuffer privateData;
    private final RdmaCmId id;
    private final String remoteAddress;
    private boolean answered;

    DisniConnectionRequest(final DisniConnectionListener listener, final HandshakeAcceptor.Pending<RdmaCmId> pending)
    {
        this.listener = listener;
        this.socket = pending.socket();
        this.out = pending.out();
        this.privateData = pending.privateData();
        this.id = pending.id();
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
        answer();
        try
        {
            attributes.validate();
            DisniVerbsContext.checkPrivateData(acceptPrivateData);
        }
        catch (final RuntimeException ex)
        {
            DisniVerbsContext.quietly(socket::close);
            listener.release(id);
            throw ex;
        }
        final DisniVerbsContext context = listener.context();
        // What is left depends on the connector's rdma_cm only (its REP handling and RTU): one handshake deadline.
        final long deadline = System.nanoTime() + context.config().handshakeTimeoutNanos();
        DisniQueuePair qp = null;
        final CmEventDispatcher.Waiter waiter = new CmEventDispatcher.Waiter();
        try
        {
            context.dispatcher().register(id, waiter);
            qp = context.newQueuePair(id, attributes, privateData, remoteAddress);
            Handshake.writeAccept(out, acceptPrivateData);
            out.flush();
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
            else
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
        answer();
        try
        {
            DisniVerbsContext.checkPrivateData(rejectPrivateData);
            // A connector that does not read its answer cannot hold this thread: the frame fits the socket buffer.
            Handshake.writeReject(out, rejectPrivateData);
            out.flush();
        }
        finally
        {
            DisniVerbsContext.quietly(socket::close);
            // Destroying the unanswered rdma_cm request makes the kernel reject it.
            listener.release(id);
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
