package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rpc.transport.TransportOptions;

/**
 * Engine settings for one server or channel over {@code shm://}, {@code tcp://} or {@code rdma://}: polling mode,
 * ring geometry, auth token, metrics, everything {@link EngineConfig} holds.
 *
 * <pre>{@code
 * EngineConfig engine = new EngineConfig().authToken("s3cret").pollingMode(PollingMode.BUSY);
 * RpcServer.builder("tcp://0.0.0.0:7000").transportOptions(EngineOptions.of(engine))...
 * RpcChannel.builder("tcp://host:7000?polling=event").transportOptions(EngineOptions.of(engine))...
 * }</pre>
 *
 * <p>The address's query parameters override single fields ({@code ?polling=busy|event|adaptive}) and keep the
 * others. Servers and channels given the same {@code EngineConfig} object with the same overrides share one engine
 * (its poller threads and memory); an address without options uses the scheme's default engine of this JVM. An
 * engine, once opened, stays open for the life of the JVM (its threads are daemons): reuse one {@code EngineConfig}
 * object per set of settings rather than building a new one per channel.
 */
public final class EngineOptions
{
    /** The engine configuration; a copy is taken when an engine is opened with it. */
    public static final TransportOptions.Key<EngineConfig> ENGINE_CONFIG =
        TransportOptions.Key.of("reverb.engine", EngineConfig.class);

    private EngineOptions()
    {
    }

    /**
     * @param config the engine settings.
     * @return transport options carrying them.
     */
    public static TransportOptions of(final EngineConfig config)
    {
        return TransportOptions.of(ENGINE_CONFIG, config);
    }
}
