package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.PollingMode;
import java.io.IOException;

/**
 * Test-only faults for the engine transports, reached through the package-private {@link EngineTransport} seam (the
 * providers carry no test hooks).
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
     * Closes the engine opened for these settings (a BUSY engine spins a core until closed).
     *
     * @param scheme  {@code shm} or {@code tcp}.
     * @param base    the {@link EngineOptions} config, or null for the default.
     * @param polling the {@code ?polling=} override, or null.
     */
    static void closeEngine(final String scheme, final EngineConfig base, final PollingMode polling)
    {
        transportOf(scheme + "://").closeEngine(base, polling);
    }

    private static EngineTransport transportOf(final String uri)
    {
        if (uri.startsWith("shm://"))
        {
            return ShmTransportProvider.TRANSPORT;
        }
        if (uri.startsWith("tcp://"))
        {
            return TcpTransportProvider.TRANSPORT;
        }
        if (uri.startsWith("rdma://"))
        {
            return RdmaTransportProvider.TRANSPORT;
        }
        throw new IllegalArgumentException("not an engine transport address: " + uri);
    }

    private static String withoutQuery(final String uri)
    {
        final int query = uri.indexOf('?');
        return query < 0 ? uri : uri.substring(0, query);
    }
}
