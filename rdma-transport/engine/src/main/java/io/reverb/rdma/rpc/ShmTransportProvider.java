package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;

/**
 * rpc-core's transport for {@code shm://name}: the connection engine over the shm verbs provider
 * (processes on one host).
 *
 * <p>Engine settings are given per server and channel builder with
 * {@code transportOptions(EngineOptions.of(engineConfig))}, or an engine of the caller's with
 * {@code EngineOptions.of(engine)}; {@code shm://name?polling=busy} (or {@code event}, {@code adaptive}) overrides the
 * polling mode of those settings and keeps the others, and {@code shm://name?directWrite=false} turns off direct
 * writes (a large message is then serialised into this side's rendezvous buffer and copied into the receiver's by the
 * fabric, instead of written straight into the receiver's granted buffer; see {@link EngineConfig#directWrite(boolean)}).
 * Engines are shared per settings, opened on first use and closed when their last listener or connection closes
 * (see {@link EngineOptions}); their threads are daemons. Servers and channels without options share the default
 * engine ({@link EngineConfig} defaults, ADAPTIVE polling). There is no JVM-wide setting.
 */
public final class ShmTransportProvider extends EngineTransportProvider
{
    /** ServiceLoader's constructor: a provider with engines of its own ({@code Transports} loads one per JVM). */
    public ShmTransportProvider()
    {
        super(new EngineTransport("shm"));
    }
}
