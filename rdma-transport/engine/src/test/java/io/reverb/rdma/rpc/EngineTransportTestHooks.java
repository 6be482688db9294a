package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.transport.TransportProvider;
import io.reverb.rpc.transport.Transports;
import java.io.IOException;
import java.net.URI;
import java.util.concurrent.TimeUnit;

/**
 * Test-only faults and probes for the engine transports of this JVM's providers (those {@link Transports} loaded),
 * reached through the package-private {@link EngineTransport} seam (the providers carry no test hooks).
 */
final class EngineTransportTestHooks
{
    private EngineTransportTestHooks()
    {
    }

    /**
     * Makes the server side of every connection accepted on the address fail abruptly, as if its process had died
     * (no graceful close; the peer sees a disconnect).
     *
     * @param serverUri the listener's address, e.g. {@code shm://name} or {@code tcp://127.0.0.1:7000}.
     * @return connections failed.
     */
    static int killServerConnections(final String serverUri)
    {
        int n = 0;
        for (final EngineTransportConnection connection : transportOf(serverUri).connections())
        {
            if (connection.localAddress().equals(withoutQuery(serverUri)))
            {
                connection.engineConnection().abort(new IOException("killed for a test"));
                n++;
            }
        }
        return n;
    }

    /**
     * The server side of every connection accepted on the address stops (or resumes) reading, without closing
     * anything: a hung peer.
     *
     * @param serverUri the listener's address.
     * @param frozen    true to hang.
     * @return connections affected.
     */
    static int freezeServer(final String serverUri, final boolean frozen)
    {
        int n = 0;
        for (final EngineTransportConnection connection : transportOf(serverUri).connections())
        {
            if (connection.localAddress().equals(withoutQuery(serverUri)))
            {
                connection.engineConnection().pauseReceiving(frozen);
                n++;
            }
        }
        return n;
    }

    /**
     * The client side of every connection to the address stops (or resumes) reading, without closing anything: a
     * client whose host vanished, as far as the server can tell (nothing answers).
     *
     * @param serverUri the listener's address.
     * @param frozen    true to hang.
     * @return connections affected.
     */
    static int freezeClients(final String serverUri, final boolean frozen)
    {
        int n = 0;
        final String server = withoutQuery(serverUri);
        for (final EngineTransportConnection connection : transportOf(serverUri).connections())
        {
            if (!connection.localAddress().equals(server) && connection.remoteAddress().equals(server))
            {
                connection.engineConnection().pauseReceiving(frozen);
                n++;
            }
        }
        return n;
    }

    /**
     * @param serverUri a listener's address.
     * @return messages (data frames) the client ends of the connections to it have posted, i.e. handed to the peer.
     */
    static long clientMessagesSent(final String serverUri)
    {
        long n = 0;
        final String server = withoutQuery(serverUri);
        for (final EngineTransportConnection connection : transportOf(serverUri).connections())
        {
            if (!connection.localAddress().equals(server) && connection.remoteAddress().equals(server))
            {
                n += connection.engineConnection().stats().eagerMessagesSent();
            }
        }
        return n;
    }

    /**
     * @param uri     an address (its {@code ?polling=} and {@code ?directWrite=} pick the engine as they do on connect).
     * @param options the builder's options.
     * @return the shared engine open for them now, or null; never opens one.
     */
    static RdmaEngine sharedEngine(final String uri, final TransportOptions options)
    {
        return transportOf(uri).sharedEngine(URI.create(uri), options);
    }

    /**
     * Waits until no shared engine is open for these settings and the one given is closed (its last listener or
     * connection closed: the engine closes on a thread of its own).
     *
     * @param uri     an address.
     * @param options the builder's options.
     * @param engine  the engine they had, or null to wait only for the transport to let go of it.
     */
    static void awaitEngineClosed(final String uri, final TransportOptions options, final RdmaEngine engine)
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (sharedEngine(uri, options) != null || (engine != null && !engine.isClosed()))
        {
            if (System.nanoTime() > deadline)
            {
                throw new AssertionError("the engine of " + uri + " and " + options + " is still open 30 s after " +
                    "its last user closed");
            }
            Thread.onSpinWait();
        }
    }

    private static EngineTransport transportOf(final String uri)
    {
        final String scheme = URI.create(uri).getScheme();
        for (final TransportProvider provider : Transports.providers())
        {
            if (provider instanceof EngineTransportProvider && provider.scheme().equals(scheme))
            {
                return ((EngineTransportProvider)provider).transport();
            }
        }
        throw new IllegalArgumentException("not an engine transport address: " + uri);
    }

    private static String withoutQuery(final String uri)
    {
        final int query = uri.indexOf('?');
        return query < 0 ? uri : uri.substring(0, query);
    }
}
