package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.EngineListener;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.verbs.VerbsProvider;
import io.reverb.rdma.verbs.VerbsProviders;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.ServerListener;
import java.io.IOException;
import java.net.URI;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the transport providers of one verbs scheme share: the engines of this JVM (the default one
 * and one per polling mode asked for with {@code ?polling=MODE}), the live connections, and the
 * connect/listen logic. The scheme's address (a name for shm, host:port for tcp) is the URI's
 * authority.
 */
final class EngineTransport
{
    private final String scheme;
    private RdmaEngine defaultEngine;
    private EngineConfig defaultConfig;
    private final Map<PollingMode, RdmaEngine> enginesByMode = new EnumMap<>(PollingMode.class);
    private final Set<EngineTransportConnection> connections = ConcurrentHashMap.newKeySet();

    EngineTransport(final String scheme)
    {
        this.scheme = scheme;
    }

    String scheme()
    {
        return scheme;
    }

    /**
     * Sets the default engine's configuration; only before that engine is first used.
     *
     * @param engineConfig the configuration (concluded here).
     * @throws IllegalStateException if the default engine is already open.
     */
    synchronized void configure(final EngineConfig engineConfig)
    {
        if (defaultEngine != null)
        {
            throw new IllegalStateException("the default " + scheme + ":// engine of this JVM is already open with " +
                defaultConfig + "; configure it before the first " + scheme + ":// connect or listen, or use " +
                scheme + "://...?polling=MODE");
        }
        defaultConfig = engineConfig.conclude();
    }

    /** @return the scheme's default engine (EngineConfig defaults, or what {@link #configure} set), opened on first use. */
    synchronized RdmaEngine defaultEngine() throws IOException
    {
        if (defaultEngine == null)
        {
            if (defaultConfig == null)
            {
                defaultConfig = new EngineConfig().name("reverb-" + scheme).conclude();
            }
            defaultEngine = RdmaEngine.open(scheme, defaultConfig);
        }
        return defaultEngine;
    }

    String unavailabilityCause()
    {
        try
        {
            final VerbsProvider provider = VerbsProviders.forScheme(scheme);
            return provider.isAvailable() ? null : provider.unavailabilityCause();
        }
        catch (final IllegalArgumentException ex)
        {
            return ex.getMessage();
        }
    }

    RdmaEngine engineFor(final URI uri) throws IOException
    {
        final PollingMode mode = pollingMode(uri);
        if (mode == null)
        {
            return defaultEngine();
        }
        synchronized (enginesByMode)
        {
            RdmaEngine e = enginesByMode.get(mode);
            if (e == null)
            {
                e = RdmaEngine.open(scheme, new EngineConfig()
                    .name("reverb-" + scheme + "-" + mode.name().toLowerCase(Locale.ROOT)).pollingMode(mode));
                enginesByMode.put(mode, e);
            }
            return e;
        }
    }

    void closeEngine(final PollingMode mode)
    {
        final RdmaEngine e;
        synchronized (enginesByMode)
        {
            e = enginesByMode.remove(mode);
        }
        if (e != null)
        {
            e.close();
        }
    }

    static PollingMode pollingMode(final URI uri)
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
                    return PollingMode.valueOf(value.toUpperCase(Locale.ROOT));
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

    private String address(final URI uri)
    {
        final String address = uri.getAuthority();
        if (address == null || address.isEmpty())
        {
            throw new IllegalArgumentException(scheme + " address needs an authority: " + scheme + "://" +
                ("shm".equals(scheme) ? "name" : "host:port") + ", got " + uri);
        }
        return address;
    }

    CompletableFuture<Connection> connect(final URI uri, final ConnectionHandler handler)
    {
        final String address;
        final RdmaEngine e;
        try
        {
            address = address(uri);
            e = engineFor(uri);
        }
        catch (final IOException | RuntimeException ex)
        {
            return CompletableFuture.failedFuture(ex instanceof IOException ? ex : new IOException(ex.getMessage(), ex));
        }
        return e.connectAsync(address).handle((engineConnection, failure) ->
        {
            if (failure != null)
            {
                final Throwable cause = failure instanceof CompletionException ? failure.getCause() : failure;
                throw new CompletionException(cause instanceof IOException ? cause :
                    new IOException("cannot connect to " + uri + ": " + cause.getMessage(), cause));
            }
            final EngineTransportConnection connection = new EngineTransportConnection(engineConnection,
                scheme + "://pid:" + ProcessHandle.current().pid(), scheme + "://" + address,
                e.config().maxOutboundMessageSize());
            track(connection);
            connection.bind(handler);
            return connection;
        });
    }

    ServerListener listen(final URI uri, final ServerListener.Acceptor acceptor) throws IOException
    {
        final RdmaEngine e = engineFor(uri);
        final java.util.concurrent.atomic.AtomicReference<EngineListener> bound = new java.util.concurrent.atomic.AtomicReference<>();
        final EngineListener listener = e.listen(address(uri), engineConnection ->
        {
            EngineListener self;
            while ((self = bound.get()) == null)
            {
                Thread.yield(); // accepted before listen() returned: the bound address is a moment away
            }
            final EngineTransportConnection connection = new EngineTransportConnection(engineConnection,
                scheme + "://" + self.address(), engineConnection.remoteAddress(), e.config().maxOutboundMessageSize());
            final ConnectionHandler handler = acceptor.onConnection(connection);
            if (handler == null)
            {
                engineConnection.closeAsync();
                return;
            }
            track(connection);
            connection.bind(handler);
        });
        bound.set(listener);
        final String address = scheme + "://" + listener.address();
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
                if ("shm".equals(scheme))
                {
                    return -1;
                }
                final String bound = listener.address();
                try
                {
                    return Integer.parseInt(bound.substring(bound.lastIndexOf(':') + 1));
                }
                catch (final NumberFormatException ex)
                {
                    return -1;
                }
            }

            @Override
            public void close()
            {
                listener.close();
            }
        };
    }

    private void track(final EngineTransportConnection connection)
    {
        connections.add(connection);
        connection.engineConnection().onClose(cause -> connections.remove(connection));
    }

    int killServerConnections(final String address)
    {
        int n = 0;
        for (final EngineTransportConnection connection : connections)
        {
            if (connection.localAddress().equals(scheme + "://" + address))
            {
                connection.engineConnection().abort(new IOException("killed for a test"));
                n++;
            }
        }
        return n;
    }

    int freezeServer(final String address, final boolean frozen)
    {
        int n = 0;
        for (final EngineTransportConnection connection : connections)
        {
            if (connection.localAddress().equals(scheme + "://" + address))
            {
                connection.engineConnection().pauseReceiving(frozen);
                n++;
            }
        }
        return n;
    }

    ResourceUsage resourceUsage()
    {
        return new ResourceUsage()
        {
            @Override
            public long buffersInUse()
            {
                long n = 0;
                for (final EngineTransportConnection connection : connections)
                {
                    n += connection.buffersInUse();
                }
                return n;
            }

            @Override
            public long bytesInUse()
            {
                long n = 0;
                for (final EngineTransportConnection connection : connections)
                {
                    n += connection.bytesInUse();
                }
                return n;
            }
        };
    }
}
