package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;

/**
 * rpc-core's transport for {@code rdma://host:port}: the connection engine over the DiSNi verbs
 * provider (InfiniBand, RoCE, Soft-RoCE; iWARP devices are refused: they lack RDMA_WRITE_WITH_IMM and RNR
 * retry, which the engine needs). The provider is in an artifact of its own,
 * {@value io.reverb.rdma.verbs.VerbsProviders#RDMA_ARTIFACT}, which alone brings DiSNi; without it on the class path
 * this transport is unavailable with a cause that names it. With it, unavailable, with the DiSNi provider's cause,
 * on machines without an RDMA device or libdisni; the JVM also needs
 * {@code --add-exports java.base/sun.nio.ch=ALL-UNNAMED}. Engine settings ({@link EngineOptions})
 * and {@code ?polling=MODE} as for {@link ShmTransportProvider}.
 *
 * <p>Not run on RDMA hardware in this project's development or CI (none was available): see
 * {@code rdma-transport/RDMA-HARDWARE.md} ("Running Reverb on RDMA hardware") and {@code bin/reverb-rdma-check}.
 */
public final class RdmaTransportProvider extends EngineTransportProvider
{
    /** The JVM-wide {@code rdma://} transport (package-private: test hooks reach it from the same package). */
    static final EngineTransport TRANSPORT = new EngineTransport("rdma");

    /** ServiceLoader's constructor; every instance serves the JVM-wide {@code rdma://} transport. */
    public RdmaTransportProvider()
    {
        super(TRANSPORT);
    }

    /**
     * Sets the JVM-wide default engine configuration, used by servers and channels without {@link EngineOptions};
     * only before that engine is first used. Prefer per-builder {@code transportOptions(EngineOptions.of(config))}.
     *
     * @param engineConfig the configuration (concluded here).
     * @throws IllegalStateException if the default engine is already open.
     */
    public static void configure(final EngineConfig engineConfig)
    {
        TRANSPORT.configure(engineConfig);
    }
}
