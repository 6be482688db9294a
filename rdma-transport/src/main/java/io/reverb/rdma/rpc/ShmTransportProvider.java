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
 * (processes on one host).
 *
 * <p>Engines are shared per JVM and opened on first use; their threads are daemons. A URI without
 * a polling setting uses the default engine ({@link EngineConfig} defaults, ADAPTIVE polling, or
 * what {@link #configure(EngineConfig)} set before first use). {@code shm://name?polling=busy}
 * (or {@code event}, {@code adaptive}) uses an engine of that polling mode, so one JVM can run a
 * server and clients with different modes.
 */
public final class ShmTransportProvider implements TransportProvider
{
    private static final String SCHEME = "shm";
    private static final Set<EngineTransportConnection> CONNECTIONS = ConcurrentHashMap.newKeySet();
    private static final java.util.Map<io.reverb.rdma.engine.PollingMode, RdmaEngine> ENGINES_BY_MODE =
        new java.util.EnumMap<>(io.reverb.rdma.engine.PollingMode.class);
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

    /**
     * Sets the default engine's configuration; only before that engine is first used.
     *
     * @param engineConfig the configuration (concluded here).
     * @throws IllegalStateException if the default engine is already open.
     */
    public static synchronized void configure(final EngineConfig engineConfig)
    {
        if (engine != null)
        {
            throw new IllegalStateException("the default shm:// engine of this JVM is already open with " + config +
                "; configure it before the first shm:// connect or listen, or use shm://name?polling=MODE");
        }
        config = engineConfig.conclude();
    }

    /**
     * @param uri a shm URI, possibly with {@code ?polling=MODE}.
     * @return the engine serving it, opened if needed.
     * @throws IOException if the engine cannot be opened.
     */
    static RdmaEngine engineFor(final URI uri) throws IOException
    {
        final io.reverb.rdma.engine.PollingMode mode = pollingMode(uri);
        if (mode == null)
        {
            return engine();
        }
        synchronized (ENGINES_BY_MODE)
        {
            RdmaEngine e = ENGINES_BY_MODE.get(mode);
            if (e == null)
            {
                e = RdmaEngine.open(SCHEME, new EngineConfig()
                    .name("reverb-shm-" + mode.name().toLowerCase(java.util.Locale.ROOT)).pollingMode(mode));
                ENGINES_BY_MODE.put(mode, e);
            }
            return e;
        }
    }

    /** Closes the engine of a polling mode (tests: a BUSY engine spins a core until closed). */
    static void closeEngine(final io.reverb.rdma.engine.PollingMode mode)
    {
        final RdmaEngine e;
        synchronized (ENGINES_BY_MODE)
        {
            e = ENGINES_BY_MODE.remove(mode);
        }
        if (e != null)
        {
            e.close();
        }
    }

    static io.reverb.rdma.engine.PollingMode pollingMode(final URI uri)
    {
        final String query = uri.getQuery();
        if (query == null || query.isEmpty())
        {
            return null;
        }
        for (final String parameter : query.split("&"))
        {
            final int eq = parameter.indexOf('=');
            final String key = eq < 0 ? parameter : parameter.substring(0, eq);
            if ("polling".equalsIgnoreCase(key))
            {
                final String value = eq < 0 ? "" : parameter.substring(eq + 1);
                try
                {
                    return io.reverb.rdma.engine.PollingMode.valueOf(value.toUpperCase(java.util.Locale.ROOT));
                }
                catch (final IllegalArgumentException ex)
                {
                    throw new IllegalArgumentException("unknown polling mode '" + value + "' in " + uri +
                        "; use polling=busy, polling=event or polling=adaptive", ex);
                }
            }
        }
        return null;
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
            e = engineFor(uri);
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
                engineConnection, "shm://pid:" + ProcessHandle.current().pid(), "shm://" + name,
                e.config().maxOutboundMessageSize());
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
        final RdmaEngine e = engineFor(uri);
        final EngineListener listener = e.listen(name, engineConnection ->
        {
            final EngineTransportConnection connection = new EngineTransportConnection(
                engineConnection, address, engineConnection.remoteAddress(), e.config().maxOutboundMessageSize());
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
