package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.RdmaCmId;
import io.reverb.rdma.provider.base.AbstractConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.provider.handshake.ListenerHandshakes;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;

/**
 * A listening {@code rdma://host:port}: a TCP listener on {@code host:port} for the {@link Handshake}
 * ({@link HandshakeAcceptor}: accepts and runs the connectors' parts of the handshakes concurrently, each within
 * {@code reverb.verbs.handshakeTimeoutMs}, at most {@code reverb.verbs.maxPendingHandshakes} at once), and an
 * rdma_cm id listening on an
 * address of the context's device at an ephemeral port that the handshake hands out (for a wildcard
 * {@code host}, the context's own address, so that requests arriving on another device never reach it).
 *
 * <p>rdma_cm CONNECT_REQUESTs are parked by their source address (the connector's rdma_cm {@code ip:port},
 * which it also sends over the handshake) until the connector's handshake claims them ({@link ParkedRequests}),
 * before the request is handed to the engine; requests nobody claims within the connect timeout are destroyed
 * by the dispatcher's ticker, which rejects them.
 */
final class DisniConnectionListener extends AbstractConnectionListener
    implements CmEventDispatcher.Handler, HandshakeAcceptor.Claimer<RdmaCmId>
{
    private final DisniVerbsContext context;
    private final HandshakeAcceptor<RdmaCmId> acceptor;
    private final RdmaCmId listenId;
    private final InetSocketAddress rdmaCmAddress;
    private final String localAddress;
    private final ParkedRequests<RdmaCmId> parked;
    private final Runnable expiry;

    private DisniConnectionListener(
        final DisniVerbsContext context,
        final InetSocketAddress bind,
        final int backlog,
        final RdmaCmId listenId,
        final InetSocketAddress rdmaCmAddress,
        final String advertisedHost) throws IOException
    {
        this.context = context;
        this.listenId = listenId;
        this.rdmaCmAddress = rdmaCmAddress;
        final CmEventDispatcher dispatcher = context.dispatcher();
        // a request is parked until its handshake (at most maxPendingHandshakes wait) claims it: room for four times that
        this.parked = new ParkedRequests<>(context.config().connectTimeoutNanos(),
            Math.max(64, 4 * context.config().maxPendingHandshakes()), dispatcher::destroyId);
        this.expiry = () -> parked.expire(System.nanoTime());
        dispatcher.register(listenId, this);
        dispatcher.addTicker(expiry);
        try
        {
            // Last: its threads call back into this listener.
            this.acceptor = new HandshakeAcceptor<>(bind, backlog, context.config().handshakeTimeoutNanos(),
                context.config().maxPendingHandshakes(), this,
                port -> "rdma://" + advertisedHost + ":" + port, ListenerHandshakes.refusalLog(),
                context.name() + "-listen-" + bind.getPort());
        }
        catch (final IOException | RuntimeException ex)
        {
            dispatcher.removeTicker(expiry);
            parked.close();
            throw ex;
        }
        this.localAddress = advertisedHost + ':' + acceptor.localPort();
    }

    /**
     * @param context context (already bound to the device of {@code cmBind}).
     * @param bind    TCP address of the handshake (may be the wildcard).
     * @param cmBind  the address the rdma_cm id listens on (an address of the context's device).
     * @param backlog listen backlog.
     * @return the listener.
     * @throws IOException if an address cannot be bound.
     */
    static DisniConnectionListener open(
        final DisniVerbsContext context, final InetSocketAddress bind, final InetAddress cmBind, final int backlog)
        throws IOException
    {
        RdmaCmId id = null;
        try
        {
            id = context.dispatcher().createId();
            id.bindAddr(new InetSocketAddress(cmBind, 0));
            id.listen(Math.max(1, backlog));
            final SocketAddress cmSource = id.getSource();
            if (!(cmSource instanceof InetSocketAddress))
            {
                throw new IOException("rdma_cm gave no bound address for " + cmBind.getHostAddress());
            }
            final InetSocketAddress cmAddress = new InetSocketAddress(cmBind, ((InetSocketAddress)cmSource).getPort());
            final String advertisedHost = bind.getAddress().isAnyLocalAddress() ?
                cmBind.getHostAddress() : bind.getAddress().getHostAddress();
            return new DisniConnectionListener(context, bind, backlog, id, cmAddress, advertisedHost);
        }
        catch (final IOException | RuntimeException ex)
        {
            if (id != null)
            {
                context.dispatcher().destroyId(id);
            }
            throw ex instanceof IOException ? (IOException)ex : new IOException("listening on " + bind + ": " + ex, ex);
        }
    }

    DisniVerbsContext context()
    {
        return context;
    }

    /** @return where connectors send rdma_cm requests (sent to them in OFFER). */
    @Override
    public InetSocketAddress offer()
    {
        return rdmaCmAddress;
    }

    @Override
    public void release(final RdmaCmId id)
    {
        context.dispatcher().destroyId(id);
    }

    /** @return sockets refused before the engine saw them (for tests and diagnostics). */
    long refusedCount()
    {
        return acceptor.refused();
    }

    int rdmaPort()
    {
        return rdmaCmAddress.getPort();
    }

    @Override
    public String localAddress()
    {
        return localAddress;
    }

    @Override
    protected ConnectionRequest take(final long timeoutNanos) throws IOException
    {
        final HandshakeAcceptor.Pending<RdmaCmId> pending;
        try
        {
            pending = acceptor.take(timeoutNanos);
        }
        catch (final IOException ex)
        {
            throw new IOException("listener " + localAddress + " is closed", ex);
        }
        return pending == null ? null : new DisniConnectionRequest(this, pending);
    }

    @Override
    public void onCmEvent(final int event, final RdmaCmId connId)
    {
        if (event != CmEventDispatcher.CONNECT_REQUEST || connId == null)
        {
            return;
        }
        final String key;
        try
        {
            final SocketAddress peer = connId.getDestination();
            key = peer instanceof InetSocketAddress ? DisniAddress.format((InetSocketAddress)peer) : null;
        }
        catch (final IOException ex)
        {
            context.dispatcher().destroyId(connId);
            return;
        }
        if (isClosed() || key == null)
        {
            // Destroying an unanswered request id makes the kernel reject it.
            context.dispatcher().destroyId(connId);
            return;
        }
        parked.park(key, connId, System.nanoTime());
    }

    /**
     * Takes the CONNECT_REQUEST of the connector whose rdma_cm source is {@code source}.
     *
     * @param source        the connector's rdma_cm {@code ip:port}, from its SOURCE frame.
     * @param deadlineNanos give up then.
     * @return its rdma_cm id.
     * @throws IOException on timeout or close.
     */
    @Override
    public RdmaCmId claim(final InetSocketAddress source, final long deadlineNanos) throws IOException
    {
        try
        {
            return parked.claim(DisniAddress.format(source), deadlineNanos);
        }
        catch (final IOException ex)
        {
            throw new IOException("listener " + localAddress + ": " + ex.getMessage(), ex);
        }
    }

    @Override
    protected void release()
    {
        acceptor.close();
        final CmEventDispatcher dispatcher = context.dispatcher();
        dispatcher.removeTicker(expiry);
        dispatcher.unregister(listenId);
        parked.close();
        dispatcher.destroyId(listenId);
        context.untrack(this);
    }

    @Override
    public String toString()
    {
        return "DisniConnectionListener{" + localAddress + ", rdmaCm=" + DisniAddress.format(rdmaCmAddress) + '}';
    }
}
