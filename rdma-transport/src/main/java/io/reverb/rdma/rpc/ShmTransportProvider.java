package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import java.io.IOException;
import java.net.URI;

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
public final class ShmTransportProvider extends EngineTransportProvider
{
    private static final String SCHEME = "shm";
    private static final EngineTransport TRANSPORT = new EngineTransport(SCHEME);

    /** ServiceLoader's constructor; every instance serves the JVM-wide {@code shm://} transport. */
    public ShmTransportProvider()
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

    static RdmaEngine engineFor(final URI uri) throws IOException
    {
        return TRANSPORT.engineFor(uri);
    }

    static PollingMode pollingMode(final URI uri)
    {
        return EngineTransport.pollingMode(uri);
    }

    /** Closes the engine of a polling mode (tests: a BUSY engine spins a core until closed). */
    static void closeEngine(final PollingMode mode)
    {
        TRANSPORT.closeEngine(mode);
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
        return TRANSPORT.killServerConnections(name);
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
        return TRANSPORT.freezeServer(name, frozen);
    }
}
