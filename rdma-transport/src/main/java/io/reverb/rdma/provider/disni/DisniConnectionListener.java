package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.RdmaCm;
import com.ibm.disni.verbs.RdmaCmId;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A listening {@code rdma://host:port}: a TCP listener on {@code host:port} for the {@link Handshake},
 * and an rdma_cm id listening on {@code host} at an ephemeral port that the handshake hands out.
 *
 * <p>rdma_cm CONNECT_REQUESTs are parked by their source address (the connector's rdma_cm {@code ip:port},
 * which it also sends over the handshake) until the {@link DisniConnectionRequest} they belong to claims
 * them; requests nobody claims within the connect timeout are destroyed, which rejects them.
 */
final class DisniConnectionListener implements ConnectionListener, CmEventDispatcher.Handler
{
    private final DisniVerbsContext context;
    private final ServerSocket serverSocket;
    private final RdmaCmId listenId;
    private final int rdmaPort;
    private final String localAddress;
    private final Map<String, Parked> parked = new HashMap<>();
    private volatile boolean closed;

    /** A CONNECT_REQUEST waiting for its handshake. */
    private record Parked(RdmaCmId id, long arrivedNanos)
    {
    }

    private DisniConnectionListener(
        final DisniVerbsContext context,
        final ServerSocket serverSocket,
        final RdmaCmId listenId,
        final int rdmaPort,
        final String localAddress)
    {
        this.context = context;
        this.serverSocket = serverSocket;
        this.listenId = listenId;
        this.rdmaPort = rdmaPort;
        this.localAddress = localAddress;
    }

    static DisniConnectionListener open(final DisniVerbsContext context, final InetSocketAddress bind, final int backlog)
        throws IOException
    {
        final ServerSocket serverSocket = new ServerSocket();
        RdmaCmId id = null;
        try
        {
            serverSocket.setReuseAddress(true);
            serverSocket.bind(bind, Math.max(1, backlog));
            id = context.eventChannel().createId(RdmaCm.RDMA_PS_TCP);
            id.bindAddr(new InetSocketAddress(bind.getAddress(), 0));
            id.listen(Math.max(1, backlog));
            final SocketAddress cmSource = id.getSource();
            if (!(cmSource instanceof InetSocketAddress))
            {
                throw new IOException("rdma_cm gave no bound address for " + bind);
            }
            final String advertisedHost = bind.getAddress().isAnyLocalAddress() ?
                context.localAddress().getHostAddress() : bind.getAddress().getHostAddress();
            final DisniConnectionListener listener = new DisniConnectionListener(
                context, serverSocket, id, ((InetSocketAddress)cmSource).getPort(),
                advertisedHost + ':' + serverSocket.getLocalPort());
            context.dispatcher().register(id, listener);
            return listener;
        }
        catch (final IOException | RuntimeException ex)
        {
            final RdmaCmId toDestroy = id;
            if (toDestroy != null)
            {
                DisniVerbsContext.quietly(toDestroy::destroyId);
            }
            DisniVerbsContext.quietly(serverSocket::close);
            throw ex instanceof IOException ? (IOException)ex : new IOException("listening on " + bind + ": " + ex, ex);
        }
    }

    DisniVerbsContext context()
    {
        return context;
    }

    int rdmaPort()
    {
        return rdmaPort;
    }

    @Override
    public String localAddress()
    {
        return localAddress;
    }

    @Override
    public ConnectionRequest accept(final long timeoutNanos) throws IOException
    {
        final long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        while (true)
        {
            if (closed)
            {
                throw new IOException("listener " + localAddress + " is closed");
            }
            final Socket socket;
            try
            {
                serverSocket.setSoTimeout(DisniVerbsContext.millisUntil(deadline));
                socket = serverSocket.accept();
            }
            catch (final SocketTimeoutException ex)
            {
                return null;
            }
            catch (final IOException ex)
            {
                if (closed)
                {
                    throw new IOException("listener " + localAddress + " is closed", ex);
                }
                throw ex;
            }
            try
            {
                socket.setTcpNoDelay(true);
                socket.setSoTimeout(DisniVerbsContext.millisUntil(
                    System.nanoTime() + context.config().connectTimeoutNanos()));
                final DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
                final DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                final Handshake.Message request = Handshake.read(in, Handshake.REQUEST);
                return new DisniConnectionRequest(this, socket, in, out, request.privateData());
            }
            catch (final IOException ex)
            {
                // Not a Reverb peer, or it went away mid-handshake: drop it and keep listening.
                DisniVerbsContext.quietly(socket::close);
                if (System.nanoTime() - deadline >= 0)
                {
                    return null;
                }
            }
        }
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
            DisniVerbsContext.quietly(connId::destroyId);
            return;
        }
        final List<RdmaCmId> stale = new ArrayList<>();
        synchronized (parked)
        {
            if (closed || key == null)
            {
                stale.add(connId);
            }
            else
            {
                final long now = System.nanoTime();
                parked.values().removeIf(p ->
                {
                    final boolean expired = now - p.arrivedNanos() > context.config().connectTimeoutNanos();
                    if (expired)
                    {
                        stale.add(p.id());
                    }
                    return expired;
                });
                parked.put(key, new Parked(connId, now));
                parked.notifyAll();
            }
        }
        for (final RdmaCmId id : stale)
        {
            // Destroying an unanswered request id makes the kernel reject it.
            DisniVerbsContext.quietly(id::destroyId);
        }
    }

    /**
     * Takes the CONNECT_REQUEST of the connector whose rdma_cm source is {@code source}.
     *
     * @param source        the connector's rdma_cm {@code ip:port}, from its SOURCE frame.
     * @param deadlineNanos give up then.
     * @return its rdma_cm id.
     * @throws IOException on timeout or close.
     */
    RdmaCmId claim(final InetSocketAddress source, final long deadlineNanos) throws IOException
    {
        final String key = DisniAddress.format(source);
        synchronized (parked)
        {
            while (true)
            {
                if (closed)
                {
                    throw new IOException("listener " + localAddress + " is closed");
                }
                final Parked found = parked.remove(key);
                if (found != null)
                {
                    return found.id();
                }
                final long remaining = deadlineNanos - System.nanoTime();
                if (remaining <= 0)
                {
                    throw new IOException("no rdma_cm connect request from " + key + " arrived within the connect timeout");
                }
                try
                {
                    TimeUnit.NANOSECONDS.timedWait(parked, remaining);
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while waiting for the connect request of " + key, ex);
                }
            }
        }
    }

    @Override
    public void close()
    {
        final List<Parked> unclaimed;
        synchronized (parked)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            unclaimed = new ArrayList<>(parked.values());
            parked.clear();
            parked.notifyAll();
        }
        DisniVerbsContext.quietly(serverSocket::close);
        context.dispatcher().unregister(listenId);
        for (final Parked p : unclaimed)
        {
            DisniVerbsContext.quietly(p.id()::destroyId);
        }
        DisniVerbsContext.quietly(listenId::destroyId);
        context.untrack(this);
    }

    @Override
    public String toString()
    {
        return "DisniConnectionListener{" + localAddress + ", rdmaCmPort=" + rdmaPort + '}';
    }
}
