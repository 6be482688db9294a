package io.reverb.rdma.rpc;

/**
 * rpc-core's transport for {@code tcp://host:port}: the same connection engine over the tcp verbs
 * provider (software RDMA over TCP). Port 0 binds an ephemeral port; the listener's address
 * reports it. Engine settings ({@link EngineOptions}), shared engines and {@code ?polling=MODE} as for
 * {@link ShmTransportProvider}; the tcp fabric's own knobs (poller reads, NIC busy polling, ACK hold) are fields of
 * {@code EngineConfig.verbsConfig(VerbsConfig)}.
 */
public final class TcpTransportProvider extends EngineTransportProvider
{
    /** ServiceLoader's constructor: a provider with engines of its own ({@code Transports} loads one per JVM). */
    public TcpTransportProvider()
    {
        super(new EngineTransport("tcp"));
    }
}
