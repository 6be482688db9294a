package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.EngineListener;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.verbs.VerbsProvider;
import io.reverb.rdma.verbs.VerbsProviders;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportProvider;
import java.io.IOException;
import java.net.URI;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * rpc-core's transport for {@code shm://name}: the connection engine over the shm verbs provider
 * (processes on one host). One engine per JVM, opened on first use with {@link EngineConfig}
 * defaults (ADAPTIVE polling, one poller); its threads are daemons.
 */
public final class ShmTransportProvider implements TransportProvider
{
    private static final String SCHEME = "shm";
    private static final Set<EngineTransportConnection> CONNECTIONS = ConcurrentHashMap.newKeySet();
    private static volatile RdmaEngine engine;
    private static volatile EngineConfig config;

    @Override
    public String scheme()
    {
        return SCHEME;
    }

    @Override
    public boolean isAvailable()
    {
        return unavailabilityCause() == null;
    }

    @Override
    public String unavailabilityCause()
    {
        try
        {
            final VerbsProvider provider = VerbsProviders.forScheme(SCHEME);
            return provider.isAvailable() ? null : provider.unavailabilityCause();
        }
        catch (final IllegalArgumentException ex)
        {
            return ex.getMessage();
        }
    }

    static EngineConfig config()
    {
        EngineConfig c = config;
        if (c == null)
        {
            synchronized (ShmTransportProvider.class)
            {
                c = config;
                if (c == null)
                {
                    c = new EngineConfig().name("reverb-shm").conclude();
                    config = c;
                }
            }
        }
        return c;
    }

    static RdmaEngine engine() throws IOException
    {
        RdmaEngine e = engine;
        if (e == null)
        {
            synchronized (ShmTransportProvider.class)
            {
                e = engine;
                if (e == null)
                {
                    e = RdmaEngine.open(SCHEME, config());
                    engine = e;
                }
            }
        }
        return e;
    }

    private static String name(final URI uri)
    {
        final String name = uri.getAuthority() != null ? uri.getAuthority() : uri.getSchemeSpecificPart().replaceFirst("^//", "");
        if (name == null || name.isEmpty())
        {
            throw new IllegalArgumentException("shm address needs a name: shm://name, got " + uri);
        }
        return name;
    }

    @Override
    public CompletableFuture<Connection> connect(final URI uri, final ConnectionHandler handler)
    {
        final String name;
        final RdmaEngine e;
        try
        {
            name = name(uri);
            e = engine();
        }
        catch (final IOException | RuntimeException ex)
        {
            return CompletableFuture.failedFuture(ex instanceof IOException ? ex : new IOException(ex.getMessage(), ex));
        }
        return e.connectAsync(name).handle((engineConnection, failure) ->
        {
            if (failure != null)
            {
                final Throwable cause = failure instanceof java.util.concurrent.CompletionException ? failure.getCause() : failure;
                throw new java.util.concurrent.CompletionException(cause instanceof IOException ? cause :
                    new IOException("cannot connect to " + uri + ": " + cause.getMessage(), cause));
            }
            final EngineTransportConnection connection = new EngineTransportConnection(
                engineConnection, "shm://pid:" + ProcessHandle.current().pid(), "shm://" + name);
            track(connection);
            connection.bind(handler);
            return connection;
        });
    }

    @Override
    public ServerListener listen(final URI uri, final ServerListener.Acceptor acceptor) throws IOException
    {
        final String name = name(uri);
        final String address = "shm://" + name;
        final EngineListener listener = engine().listen(name, engineConnection ->
        {
            final EngineTransportConnection connection =
                new EngineTransportConnection(engineConnection, address, engineConnection.remoteAddress());
            final ConnectionHandler handler = acceptor.onConnection(connection);
            if (handler == null)
            {
                engineConnection.closeAsync();
                return;
            }
            track(connection);
            connection.bind(handler);
        });
        return new ServerListener()
        {
            @Override
            public String address()
            {
                return address;
            }

            @Override
            public int port()
            {
                return -1;
            }

            @Override
            public void close()
            {
                listener.close();
            }
        };
    }

    private static void track(final EngineTransportConnection connection)
    {
        CONNECTIONS.add(connection);
        connection.engineConnection().onClose(cause -> CONNECTIONS.remove(connection));
    }

    /**
     * Test support: makes the server side of every connection accepted on {@code name} fail abruptly,
     * as if its process had died (no graceful close; the peer sees a disconnect).
     *
     * @param name the listener's name.
     * @return connections failed.
     */
    public static int killServerConnections(final String name)
    {
        int n = 0;
        for (final EngineTransportConnection connection : CONNECTIONS)
        {
            if (connection.localAddress().equals("shm://" + name))
            {
                connection.engineConnection().abort(new IOException("killed for a test"));
                n++;
            }
        }
        return n;
    }

    /**
     * Test support: the server side of every connection accepted on {@code name} stops (or resumes)
     * reading, without closing anything: a hung peer.
     *
     * @param name   the listener's name.
     * @param frozen true to hang.
     * @return connections affected.
     */
    public static int freezeServer(final String name, final boolean frozen)
    {
        int n = 0;
        for (final EngineTransportConnection connection : CONNECTIONS)
        {
            if (connection.localAddress().equals("shm://" + name))
            {
                connection.engineConnection().pauseReceiving(frozen);
                n++;
            }
        }
        return n;
    }

    @Override
    public ResourceUsage resourceUsage()
    {
        return new ResourceUsage()
        {
            @Override
            public long buffersInUse()
            {
                long n = 0;
                for (final EngineTransportConnection connection : CONNECTIONS)
                {
                    n += connection.buffersInUse();
                }
                return n;
            }

            @Override
            public long bytesInUse()
            {
                long n = 0;
                for (final EngineTransportConnection connection : CONNECTIONS)
                {
                    n += connection.bytesInUse();
                }
                return n;
            }
        };
    }
}
