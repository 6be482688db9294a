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
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.ToLongFunction;

/**
 * What the transport provider of one verbs scheme holds: its engines ({@link SharedEngines}), the live connections,
 * and the connect/listen logic. The scheme's address (a name for shm, host:port for tcp) is the URI's authority.
 *
 * <p>Which engine serves a server or channel: the one the builder's {@link EngineOptions} name
 * ({@link EngineOptions#of(RdmaEngine)}: the caller's own), else the shared engine of the builder's settings
 * ({@link EngineOptions#of(EngineConfig)}, or the scheme's defaults without options) and of the address's
 * {@code ?polling=MODE} and {@code ?directWrite=true|false} overrides, opened on first use and closed when its last
 * listener or connection closes. The RPC layer's
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
    private final SharedEngines engines;
    private final Set<EngineTransportConnection> connections = ConcurrentHashMap.newKeySet();

    EngineTransport(final String scheme)
    {
        this.scheme = scheme;
        this.engines = new SharedEngines(scheme);
    }

    String scheme()
    {
        return scheme;
    }

    /**
     * @param uri     the address; its {@code ?polling=} and {@code ?directWrite=} override those fields of the settings.
     * @param options the builder's options: {@link EngineOptions#ENGINE} (the caller's engine) or
     *                {@link EngineOptions#ENGINE_CONFIG} (settings of a shared engine), else the scheme's defaults.
     * @return a lease on the engine for them, opened now if it is a shared one not open yet; release it when done.
     * @throws IOException              if it cannot be opened.
     * @throws IllegalArgumentException if the options contradict each other or the address.
     */
    SharedEngines.Lease acquire(final URI uri, final TransportOptions options) throws IOException
    {
        final PollingMode polling = pollingMode(uri);
        final Boolean directWrite = directWrite(uri);
        final RdmaEngine own = options.get(EngineOptions.ENGINE);
        if (own == null)
        {
            return engines.acquire(options.get(EngineOptions.ENGINE_CONFIG), polling, directWrite);
        }
        if (options.get(EngineOptions.ENGINE_CONFIG) != null)
        {
            throw new IllegalArgumentException("transport options name both an engine and engine settings; give " +
                "EngineOptions.of(engine) or EngineOptions.of(config), not both");
        }
        final String engineScheme = own.context().provider().scheme();
        if (!scheme.equalsIgnoreCase(engineScheme))
        {
            throw new IllegalArgumentException("the engine given with EngineOptions.of(engine) runs " + engineScheme +
                "://, not " + scheme + ":// as " + uri + " asks");
        }
        if (polling != null && polling != own.config().pollingMode())
        {
            throw new IllegalArgumentException(uri + " asks for " + polling + " polling, but the engine given with " +
                "EngineOptions.of(engine) runs " + own.config().pollingMode() + "; drop ?polling= or open the engine " +
                "with that mode");
        }
        if (directWrite != null && directWrite != own.config().directWrite())
        {
            throw new IllegalArgumentException(uri + " asks for directWrite=" + directWrite + ", but the engine given " +
                "with EngineOptions.of(engine) has directWrite=" + own.config().directWrite());
        }
        return engines.own(own);
    }

    /**
     * @param uri     an address.
     * @param options the builder's options.
     * @return the shared engine open for them now, or null (test hooks: its counters while a server or channel holds
     *         it); never opens one.
     */
    RdmaEngine sharedEngine(final URI uri, final TransportOptions options)
    {
        return engines.peek(options.get(EngineOptions.ENGINE_CONFIG), pollingMode(uri), directWrite(uri));
    }

    /** @return shared engines open now (test hooks: each closes when its last listener or connection does). */
    int openEngines()
    {
        return engines.openEngines();
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
        final SharedEngines.Lease lease;
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - two Connection types: rpc-core's is imported, the engine's is spelled out
        final CompletableFuture<io.reverb.rdma.engine.Connection> connecting;
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        final int limit = inboundLimit(options);
        try
        {
            address = address(uri);
            lease = acquire(uri, options);
        }
        catch (final IOException | RuntimeException ex)
        {
            return CompletableFuture.failedFuture(ex instanceof IOException ? ex : new IOException(ex.getMessage(), ex));
        }
        final RdmaEngine e = lease.engine();
        try
        {
            connecting = e.connectAsync(address);
        }
        catch (final RuntimeException ex)
        {
            lease.release();
            return CompletableFuture.failedFuture(new IOException(ex.getMessage(), ex));
        }
        return connecting.handle((engineConnection, failure) ->
        {
            if (failure != null)
            {
                lease.release();
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
                scheme + "://" + localEnd(engineConnection.localAddress()), scheme + "://" + address,
                e.config().maxOutboundMessageSize());
            track(connection, lease);
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
        final SharedEngines.Lease lease = acquire(uri, options);
        final RdmaEngine e = lease.engine();
        final int limit = inboundLimit(options);
        final AtomicReference<EngineListener> bound = new AtomicReference<>();
        final EngineListener listener;
        try
        {
            listener = e.listen(address(uri), engineConnection -> accepted(engineConnection, lease, limit, bound, acceptor));
        }
        catch (final IOException | RuntimeException ex)
        {
            lease.release();
            throw ex;
        }
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
                lease.release(); // the engine stays open while connections accepted here are
            }
        };
    }

    /** An accepted connection: bound to the acceptor's handler, holding the engine until it closes. */
    // CHECKSTYLE.OFF: InlineFullyQualifiedName - two Connection types: rpc-core's is imported, the engine's is spelled out
    private void accepted(final io.reverb.rdma.engine.Connection engineConnection, final SharedEngines.Lease lease,
        final int limit, final AtomicReference<EngineListener> bound, final ServerListener.Acceptor acceptor)
    // CHECKSTYLE.ON: InlineFullyQualifiedName
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
            scheme + "://" + self.address(), engineConnection.remoteAddress(),
            lease.engine().config().maxOutboundMessageSize());
        final ConnectionHandler handler = acceptor.onConnection(connection);
        if (handler == null)
        {
            engineConnection.closeAsync();
            return;
        }
        track(connection, lease.retain());
        connection.bind(handler);
    }

    /** Counts the connection as live, and as a user of its engine, until it closes. */
    private void track(final EngineTransportConnection connection, final SharedEngines.Lease lease)
    {
        connections.add(connection);
        connection.engineConnection().onClose(cause ->
        {
            connections.remove(connection);
            lease.release();
        });
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

    /**
     * @param local this end of a connection this process made as its queue pair names it ({@code ip:port}), or null.
     * @return this end as a peer would describe it: that address (the socket's over {@code tcp://}, the handshake
     *         socket's over {@code rdma://}, as the server's side names the client), else this process ({@code pid:N}).
     */
    static String localEnd(final String local)
    {
        return local != null ? local : "pid:" + ProcessHandle.current().pid();
    }
}
