package io.reverb.rpc.transport.inproc;

import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportProvider;
import java.io.IOException;
import java.net.URI;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code inproc://name}: connections between a client and a server in the same JVM, for tests. Each direction of a
 * connection buffers at most {@code capacity} bytes (default 256 KiB, {@code inproc://name?capacity=N}) of committed
 * and undelivered messages, so a slow reader really back-pressures the writer. Messages are delivered on a
 * transport thread ("reverb-inproc-N"), as an RDMA poller would; one sent from within a delivery (a server's response,
 * a client's next call from a response's callback) is delivered by the same thread once that delivery returns
 * ({@link InprocDelivery}), so a unary call costs one thread hand-over, not one per message.
 */
public final class InprocTransportProvider implements TransportProvider
{
    /** Default per-direction buffer capacity. */
    public static final int DEFAULT_CAPACITY = 256 * 1024;
    /** Largest message. */
    public static final int MAX_MESSAGE_LENGTH = 64 * 1024 * 1024;

    static final ConcurrentHashMap<String, Listener> LISTENERS = new ConcurrentHashMap<>();
    static final Set<InprocConnection> CONNECTIONS = ConcurrentHashMap.newKeySet();
    static final AtomicLong BUFFERS_IN_USE = new AtomicLong();
    static final AtomicLong BYTES_IN_USE = new AtomicLong();
    static final AtomicLong BYTES_HIGH_WATER_MARK = new AtomicLong();
    private static final AtomicLong CONNECTION_IDS = new AtomicLong();

    private static final ResourceUsage USAGE = new ResourceUsage()
    {
        @Override
        public long buffersInUse()
        {
            return BUFFERS_IN_USE.get();
        }

        @Override
        public long bytesInUse()
        {
            return BYTES_IN_USE.get();
        }

        @Override
        public long bytesInUseHighWaterMark()
        {
            return BYTES_HIGH_WATER_MARK.get();
        }

        @Override
        public void resetHighWaterMark()
        {
            BYTES_HIGH_WATER_MARK.set(BYTES_IN_USE.get());
        }
    };

    @Override
    public String scheme()
    {
        return "inproc";
    }

    @Override
    public boolean isAvailable()
    {
        return true;
    }

    @Override
    public String unavailabilityCause()
    {
        return null;
    }

    @Override
    public CompletableFuture<Connection> connect(final URI uri, final ConnectionHandler handler)
    {
        final String name = nameOf(uri);
        final Listener listener = LISTENERS.get(name);
        if (listener == null)
        {
            return CompletableFuture.failedFuture(new IOException("no inproc server named '" + name + "' is listening"));
        }
        final int capacity = capacityOf(uri);
        final long id = CONNECTION_IDS.incrementAndGet();
        final InprocConnection client = new InprocConnection("inproc-client-" + id, "inproc://" + name, capacity, handler);
        final InprocConnection server = new InprocConnection("inproc://" + name, "inproc-client-" + id, capacity, null);
        client.peer(server);
        server.peer(client);
        // listed before the acceptor runs: an end closed meanwhile (a server shutting down as it accepts) leaves the
        // list when its close is delivered, and must not be put back after
        CONNECTIONS.add(client);
        CONNECTIONS.add(server);
        final ConnectionHandler serverHandler;
        try
        {
            serverHandler = listener.acceptor.onConnection(server);
        }
        catch (final RuntimeException e)
        {
            CONNECTIONS.remove(client);
            CONNECTIONS.remove(server);
            return CompletableFuture.failedFuture(new IOException("inproc server '" + name + "' failed to accept", e));
        }
        if (serverHandler == null)
        {
            CONNECTIONS.remove(client);
            CONNECTIONS.remove(server);
            return CompletableFuture.failedFuture(new IOException("inproc server '" + name + "' rejected the connection"));
        }
        server.handler(serverHandler);
        return CompletableFuture.completedFuture(client);
    }

    @Override
    public ServerListener listen(final URI uri, final ServerListener.Acceptor acceptor) throws IOException
    {
        final String name = nameOf(uri);
        final Listener listener = new Listener(name, acceptor);
        if (LISTENERS.putIfAbsent(name, listener) != null)
        {
            throw new IOException("inproc address already in use: inproc://" + name);
        }
        return listener;
    }

    @Override
    public ResourceUsage resourceUsage()
    {
        return USAGE;
    }

    /**
     * Test hook: every open connection whose server end listens on {@code name} dies at once, as if the peer
     * process were killed: undelivered messages are dropped and both ends see {@code onClose} with an error.
     *
     * @param name an inproc server name.
     * @return how many connections were killed.
     */
    public static int killConnections(final String name)
    {
        int killed = 0;
        for (final InprocConnection connection : connections())
        {
            if (connection.isServerEndOf(name) && connection.isOpen())
            {
                connection.kill(new IOException("inproc peer died"));
                killed++;
            }
        }
        return killed;
    }

    /**
     * Test hook: stops (or resumes) delivering messages to server ends listening on {@code name}, as a peer that
     * hangs without closing: only a keep-alive notices.
     *
     * @param name   an inproc server name.
     * @param frozen true to stop delivery.
     */
    public static void freezeServer(final String name, final boolean frozen)
    {
        for (final InprocConnection connection : connections())
        {
            if (connection.isServerEndOf(name))
            {
                connection.frozen(frozen);
            }
        }
    }

    /**
     * Test hook: stops (or resumes) delivering messages to the client ends of the connections to server {@code name},
     * as a client whose host vanished: only the server's keep-alive notices.
     *
     * @param name   an inproc server name.
     * @param frozen true to stop delivery.
     * @return client ends affected.
     */
    public static int freezeClients(final String name, final boolean frozen)
    {
        // found through their own entries, not their server ends': a server end that closed meanwhile has left the
        // registry, and a frozen client end (its close undelivered) must still be thawed
        int n = 0;
        for (final InprocConnection connection : connections())
        {
            final InprocConnection server = connection.peer();
            if (server != null && server.isServerEndOf(name))
            {
                connection.frozen(frozen);
                n++;
            }
        }
        return n;
    }

    /**
     * Test hook: the server ends open (not yet closed) on {@code name}.
     *
     * @param name an inproc server name.
     * @return their count.
     */
    public static int serverEnds(final String name)
    {
        int n = 0;
        for (final InprocConnection connection : connections())
        {
            n += connection.isServerEndOf(name) ? 1 : 0;
        }
        return n;
    }

    static Collection<InprocConnection> connections()
    {
        return CONNECTIONS;
    }

    private static String nameOf(final URI uri)
    {
        String name = uri.getAuthority();
        if (name == null || name.isEmpty())
        {
            name = uri.getSchemeSpecificPart();
        }
        if (name == null || name.isEmpty())
        {
            throw new IllegalArgumentException("inproc address needs a name: inproc://name, got " + uri);
        }
        return name;
    }

    private static int capacityOf(final URI uri)
    {
        final String query = uri.getQuery();
        if (query != null)
        {
            for (final String param : query.split("&"))
            {
                if (param.startsWith("capacity="))
                {
                    return Integer.parseInt(param.substring("capacity=".length()));
                }
            }
        }
        return DEFAULT_CAPACITY;
    }

    static void acquired(final int bytes)
    {
        BUFFERS_IN_USE.incrementAndGet();
        final long now = BYTES_IN_USE.addAndGet(bytes);
        long hwm;
        while (now > (hwm = BYTES_HIGH_WATER_MARK.get()) && !BYTES_HIGH_WATER_MARK.compareAndSet(hwm, now))
        {
            Thread.onSpinWait();
        }
    }

    static void released(final int bytes)
    {
        BUFFERS_IN_USE.decrementAndGet();
        BYTES_IN_USE.addAndGet(-bytes);
    }

    static final class Listener implements ServerListener
    {
        final String name;
        final Acceptor acceptor;

        Listener(final String name, final Acceptor acceptor)
        {
            this.name = name;
            this.acceptor = acceptor;
        }

        @Override
        public String address()
        {
            return "inproc://" + name;
        }

        @Override
        public int port()
        {
            return -1;
        }

        @Override
        public void close()
        {
            LISTENERS.remove(name, this);
        }
    }
}
