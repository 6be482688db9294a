package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rpc.transport.TransportOptions;
import java.io.IOException;
import java.net.URI;

/**
 * rpc-core's transport for {@code shm://name}: the connection engine over the shm verbs provider
 * (processes on one host).
 *
 * <p>Engine settings are given per server and channel builder with
 * {@code transportOptions(EngineOptions.of(engineConfig))}; {@code shm://name?polling=busy} (or {@code event},
 * {@code adaptive}) overrides the polling mode of those settings and keeps the others, and
 * {@code shm://name?directWrite=false} turns off direct writes (a large message is then serialised into this side's
 * rendezvous buffer and copied into the receiver's by the fabric, instead of written straight into the receiver's
 * granted buffer; see {@link EngineConfig#directWrite(boolean)}). Engines are shared per JVM
 * and settings, opened on first use; their threads are daemons. Servers and channels without options use the
 * default engine ({@link EngineConfig} defaults, ADAPTIVE polling, or what {@link #configure(EngineConfig)} set
 * before first use).
 */
public final class ShmTransportProvider extends EngineTransportProvider
{
    /** The JVM-wide {@code shm://} transport (package-private: test hooks reach it from the same package). */
    static final EngineTransport TRANSPORT = new EngineTransport("shm");

    /** ServiceLoader's constructor; every instance serves the JVM-wide {@code shm://} transport. */
    public ShmTransportProvider()
    {
        super(TRANSPORT);
    }

    /**
     * Sets the JVM-wide default engine configuration, used by servers and channels without
     * {@link EngineOptions}; only before that engine is first used. Prefer per-builder
     * {@code transportOptions(EngineOptions.of(config))}.
     *
     * @param engineConfig the configuration (concluded here).
     * @throws IllegalStateException if the default engine is already open.
     */
    public static void configure(final EngineConfig engineConfig)
    {
        TRANSPORT.configure(engineConfig);
    }

    // Package-private seams read reflectively by the examples' tests and the benchmarks' tools (engine counters,
    // whether ?polling= is understood); not API.

    static RdmaEngine engine() throws IOException
    {
        return TRANSPORT.defaultEngine();
    }

    static RdmaEngine engineFor(final URI uri) throws IOException
    {
        return TRANSPORT.engineFor(uri, TransportOptions.EMPTY);
    }

    static PollingMode pollingMode(final URI uri)
    {
        return EngineTransport.pollingMode(uri);
    }
}
