package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;

/**
 * rpc-core's transport for {@code tcp://host:port}: the same connection engine over the tcp verbs
 * provider (software RDMA over TCP). Port 0 binds an ephemeral port; the listener's address
 * reports it. Engine settings ({@link EngineOptions}) and {@code ?polling=MODE} as for {@link ShmTransportProvider}.
 */
public final class TcpTransportProvider extends EngineTransportProvider
{
    /** The JVM-wide {@code tcp://} transport (package-private: test hooks reach it from the same package). */
    static final EngineTransport TRANSPORT = new EngineTransport("tcp");

    /** ServiceLoader's constructor; every instance serves the JVM-wide {@code tcp://} transport. */
    public TcpTransportProvider()
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
}
