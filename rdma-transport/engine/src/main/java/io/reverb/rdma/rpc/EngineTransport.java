package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.EngineListener;
import io.reverb.rdma.engine.HandshakeException;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.verbs.PeerAuthenticationException;
import io.reverb.rdma.verbs.VerbsProvider;
import io.reverb.rdma.verbs.VerbsProviders;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.transport.UnauthenticatedException;
import java.io.IOException;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.ToLongFunction;

/**
 * What the transport providers of one verbs scheme share: the engines of this JVM, the live connections, and the
 * connect/listen logic. The scheme's address (a name for shm, host:port for tcp) is the URI's authority.
 *
 * <p>An engine is opened per distinct (engine settings, polling override) and shared by every server and channel
 * that asks for the same: the settings are the builder's {@link EngineOptions} ({@link EngineConfig} object,
 * compared by identity), or the scheme's default when there are none; the overrides are the address's
 * {@code ?polling=MODE} and {@code ?directWrite=true|false}, which change only those fields of a copy of the settings.
 * The RPC layer's
 * {@link TransportOptions#MAX_INBOUND_MESSAGE_SIZE} (its {@code maxInboundMessageSize}, plus
 * {@value #RPC_FRAMING_HEADROOM} bytes for the frames around a message) lowers the inbound limit of each of its
 * connections ({@code Connection.limitInboundMessageSize}), so that the engine refuses a message the RPC layer
 * would reject before it reserves any memory for it (the sender's call fails with RESOURCE_EXHAUSTED).
 */
final class EngineTransport
{
    /** Bytes allowed beyond the RPC payload limit in one transport message: frame headers, the call's metadata. */
    static final int RPC_FRAMING_HEADROOM = 64 * 1024;

    private final String scheme;
    // guarded by this
    private EngineConfig defaultConfig;
    private final Map<EngineKey, RdmaEngine> engines = new HashMap<>();
    private final Set<EngineTransportConnection> connections = ConcurrentHashMap.newKeySet();

    /**
     * What an engine was opened from: the options' config (null: the scheme's default), a polling override and a
     * direct-write override (null: none).
     */
    private record EngineKey(EngineConfig base, PollingMode polling, Boolean directWrite)
    {
        @Override
        public boolean equals(final Object other)
        {
            return other instanceof EngineKey && ((EngineKey)other).base == base && ((EngineKey)other).polling == polling &&
                Objects.equals(((EngineKey)other).directWrite, directWrite);
        }

        @Override
        public int hashCode()
        {
            return 31 * (31 * System.identityHashCode(base) + (polling == null ? 0 : polling.hashCode())) +
                Objects.hashCode(directWrite);
        }
    }

    EngineTransport(final String scheme)
    {
        this.scheme = scheme;
    }

    String scheme()
    {
        return scheme;
    }

    /**
     * Sets the default engine's configuration (used by addresses without {@link EngineOptions}); only before an
     * engine of the default configuration is first used.
     *
     * @param engineConfig the configuration (concluded here).
     * @throws IllegalStateException if an engine of the default configuration is already open.
     */
    synchronized void configure(final EngineConfig engineConfig)
    {
        for (final EngineKey key : engines.keySet())
        {
            if (key.base() == null)
            {
                throw new IllegalStateException("the default " + scheme + ":// engine of this JVM is already open with " +
                    defaultConfig + "; configure it before the first " + scheme + ":// connect or listen, or give " +
                    "the server or channel builder transportOptions(EngineOptions.of(config))");
            }
        }
        defaultConfig = engineConfig.conclude();
    }

    /** @return the scheme's default engine (EngineConfig defaults, or what {@link #configure} set), opened on first use. */
    RdmaEngine defaultEngine() throws IOException
    {
        return engine(null, null, null);
    }

    /**
     * @param uri     the address; its {@code ?polling=} and {@code ?directWrite=} override those fields of the settings.
     * @param options the builder's options; {@link EngineOptions#ENGINE_CONFIG} if set, else the default settings.
     * @return the engine for them, opened on first use.
     * @throws IOException if it cannot be opened.
     */
    RdmaEngine engineFor(final URI uri, final TransportOptions options) throws IOException
    {
        return engine(options.get(EngineOptions.ENGINE_CONFIG), pollingMode(uri), directWrite(uri));
    }

    /**
     * @param options the builder's options.
     * @return the RPC layer's inbound limit plus {@value #RPC_FRAMING_HEADROOM} bytes, or -1 if it set none.
     */
    static int inboundLimit(final TransportOptions options)
    {
        final Integer rpcLimit = options.get(TransportOptions.MAX_INBOUND_MESSAGE_SIZE);
        return rpcLimit == null || rpcLimit <= 0 ? -1 : (int)Math.min(Integer.MAX_VALUE, (long)rpcLimit + RPC_FRAMING_HEADROOM);
    }

    private synchronized RdmaEngine engine(final EngineConfig base, final PollingMode polling, final Boolean directWrite)
        throws IOException
    {
        final EngineKey key = new EngineKey(base, polling, directWrite);
        RdmaEngine engine = engines.get(key);
        if (engine == null)
        {
            final EngineConfig config = (base != null ? base : defaultConfig()).copy();
            if (polling != null)
            {
                config.pollingMode(polling).name(config.name() + "-" + polling.name().toLowerCase(Locale.ROOT));
            }
            if (directWrite != null)
            {
                config.directWrite(directWrite).name(config.name() + (directWrite ? "-direct" : "-copying"));
            }
            engine = RdmaEngine.open(scheme, config);
            engines.put(key, engine);
        }
        return engine;
    }

    // guarded by this
    private EngineConfig defaultConfig()
    {
        if (defaultConfig == null)
        {
            defaultConfig = new EngineConfig().name("reverb-" + scheme).conclude();
        }
        return defaultConfig;
    }

    /**
     * Closes the engines opened for these settings, if any, whatever their direct-write override (tests: a BUSY engine
     * spins a core until closed).
     *
     * @param base    the options' config, or null for the default.
     * @param polling the polling override, or null.
     */
    void closeEngine(final EngineConfig base, final PollingMode polling)
    {
        final List<RdmaEngine> closing = new ArrayList<>();
        synchronized (this)
        {
            final Iterator<Map.Entry<EngineKey, RdmaEngine>> entries = engines.entrySet().iterator();
            while (entries.hasNext())
            {
                final Map.Entry<EngineKey, RdmaEngine> entry = entries.next();
                if (entry.getKey().base() == base && entry.getKey().polling() == polling)
                {
                    closing.add(entry.getValue());
                    entries.remove();
                }
            }
        }
        for (final RdmaEngine engine : closing)
        {
            engine.close();
        }
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

    static PollingMode pollingMode(final URI uri)
    {
        final String value = parameter(uri, "polling");
        if (value == null)
        {
            return null;
        }
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

    /**
     * @param uri the address.
     * @return its {@code ?directWrite=true|false} ({@link EngineConfig#directWrite(boolean)}), or null if absent.
     */
    static Boolean directWrite(final URI uri)
    {
        final String value = parameter(uri, "directWrite");
        if (value == null)
        {
            return null;
        }
        if ("true".equalsIgnoreCase(value) || "false".equalsIgnoreCase(value))
        {
            return Boolean.valueOf(value);
        }
        throw new IllegalArgumentException("directWrite must be true or false, got '" + value + "' in " + uri);
    }

    /** @return the value of the query parameter {@code name} (case-insensitive; "" if it has none), or null. */
    private static String parameter(final URI uri, final String name)
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
            if (name.equalsIgnoreCase(key))
            {
                return eq < 0 ? "" : parameter.substring(eq + 1);
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

    CompletableFuture<Connection> connect(final URI uri, final TransportOptions options, final ConnectionHandler handler)
    {
        final String address;
        final RdmaEngine e;
        final int limit = inboundLimit(options);
        try
        {
            address = address(uri);
            e = engineFor(uri, options);
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
                throw new CompletionException(isAuthenticationFailure(cause) ?
                    new UnauthenticatedException(cause.getMessage(), cause) : cause instanceof IOException ? cause :
                    new IOException("cannot connect to " + uri + ": " + cause.getMessage(), cause));
            }
            if (limit >= 0)
            {
                engineConnection.limitInboundMessageSize(limit);
            }
            final EngineTransportConnection connection = new EngineTransportConnection(engineConnection,
                scheme + "://pid:" + ProcessHandle.current().pid(), scheme + "://" + address,
                e.config().maxOutboundMessageSize());
            track(connection);
            connection.bind(handler);
            return connection;
        });
    }

    /**
     * @param failure why a connect failed.
     * @return true if it was refused for want of trust (token, TLS certificate, TLS on one side only), not for the
     *         network: the RPC layer then fails calls UNAUTHENTICATED rather than UNAVAILABLE.
     */
    static boolean isAuthenticationFailure(final Throwable failure)
    {
        return failure instanceof PeerAuthenticationException || (failure instanceof HandshakeException &&
            ((HandshakeException)failure).reason() == HandshakeException.Reason.AUTHENTICATION);
    }

    ServerListener listen(final URI uri, final TransportOptions options, final ServerListener.Acceptor acceptor)
        throws IOException
    {
        final RdmaEngine e = engineFor(uri, options);
        final int limit = inboundLimit(options);
        final AtomicReference<EngineListener> bound = new AtomicReference<>();
        final EngineListener listener = e.listen(address(uri), engineConnection ->
        {
            if (limit >= 0)
            {
                engineConnection.limitInboundMessageSize(limit); // before the connection is polled
            }
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

    /** @return the live connections (test hooks reach them through this package-private seam). */
    Set<EngineTransportConnection> connections()
    {
        return connections;
    }

    ResourceUsage resourceUsage()
    {
        return new ResourceUsage()
        {
            @Override
            public long buffersInUse()
            {
                return sum(EngineTransportConnection::buffersInUse);
            }

            @Override
            public long bytesInUse()
            {
                return sum(EngineTransportConnection::bytesInUse);
            }
        };
    }

    private long sum(final ToLongFunction<EngineTransportConnection> usage)
    {
        return connections.stream().mapToLong(usage).sum();
    }
}
