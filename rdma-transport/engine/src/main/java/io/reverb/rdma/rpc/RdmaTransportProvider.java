package io.reverb.rdma.rpc;

/**
 * rpc-core's transport for {@code rdma://host:port}: the connection engine over the DiSNi verbs
 * provider (InfiniBand, RoCE, Soft-RoCE; iWARP devices are refused: they lack RDMA_WRITE_WITH_IMM and RNR
 * retry, which the engine needs). The provider is in an artifact of its own,
 * {@value io.reverb.rdma.verbs.VerbsProviders#RDMA_ARTIFACT}, which alone brings DiSNi; without it on the class path
 * this transport is unavailable with a cause that names it. With it, unavailable, with the DiSNi provider's cause,
 * on machines without an RDMA device or libdisni; the JVM also needs
 * {@code --add-exports java.base/sun.nio.ch=ALL-UNNAMED}. Engine settings ({@link EngineOptions}), shared engines
 * and {@code ?polling=MODE} as for {@link ShmTransportProvider}.
 *
 * <p>Not run on RDMA hardware in this project's development or CI (none was available): see
 * {@code rdma-transport/RDMA-HARDWARE.md} ("Running Reverb on RDMA hardware") and {@code bin/reverb-rdma-check}.
 */
public final class RdmaTransportProvider extends EngineTransportProvider
{
    /** ServiceLoader's constructor: a provider with engines of its own ({@code Transports} loads one per JVM). */
    public RdmaTransportProvider()
    {
        super(new EngineTransport("rdma"));
    }
}
