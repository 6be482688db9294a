package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.RdmaEngine;
import java.io.IOException;

/**
 * rpc-core's transport for {@code tcp://host:port}: the same connection engine over the tcp verbs
 * provider (software RDMA over TCP). Port 0 binds an ephemeral port; the listener's address
 * reports it. {@code ?polling=MODE} as for {@link ShmTransportProvider}.
 */
public final class TcpTransportProvider extends EngineTransportProvider
{
    private static final String SCHEME = "tcp";
    private static final EngineTransport TRANSPORT = new EngineTransport(SCHEME);

    /** ServiceLoader's constructor; every instance serves the JVM-wide {@code tcp://} transport. */
    public TcpTransportProvider()
    {
        super(TRANSPORT);
    }

    /**
     * Sets the default engine's configuration; only before that engine is first used.
     *
     * @param engineConfig the configuration (concluded here).
     * @throws IllegalStateException if the default engine is already open.
     */
    public static void configure(final EngineConfig engineConfig)
    {
        TRANSPORT.configure(engineConfig);
    }

    static RdmaEngine engine() throws IOException
    {
        return TRANSPORT.defaultEngine();
    }

    /**
     * Test support: fails the server side of every connection accepted on {@code hostPort} abruptly.
     *
     * @param hostPort the listener's bound address.
     * @return connections failed.
     */
    public static int killServerConnections(final String hostPort)
    {
        return TRANSPORT.killServerConnections(hostPort);
    }

    /**
     * Test support: the server side of every connection accepted on {@code hostPort} stops (or resumes) reading.
     *
     * @param hostPort the listener's bound address.
     * @param frozen   true to hang.
     * @return connections affected.
     */
    public static int freezeServer(final String hostPort, final boolean frozen)
    {
        return TRANSPORT.freezeServer(hostPort, frozen);
    }
}
