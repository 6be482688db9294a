package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rpc.transport.TransportOptions;
import java.util.Objects;

/**
 * Which engine serves one server or channel over {@code shm://}, {@code tcp://} or {@code rdma://}: engine settings
 * (polling mode, ring geometry, auth token, metrics, everything {@link EngineConfig} holds) for an engine the
 * transport opens and shares, or an engine the caller opened and owns.
 *
 * <pre>{@code
 * EngineConfig engine = new EngineConfig().authToken("s3cret").pollingMode(PollingMode.BUSY);
 * RpcServer.builder("tcp://0.0.0.0:7000").transportOptions(EngineOptions.of(engine))...
 * RpcChannel.builder("tcp://host:7000?polling=event").transportOptions(EngineOptions.of(engine))...
 *
 * try (RdmaEngine mine = RdmaEngine.open("shm", new EngineConfig())) // its counters: mine.stats()
 * {
 *     RpcChannel.builder("shm://greeter").transportOptions(EngineOptions.of(mine))...
 * }
 * }</pre>
 *
 * <p><b>Settings</b> ({@link #of(EngineConfig)}): the address's query parameters override single fields
 * ({@code ?polling=busy|event|adaptive}, {@code ?directWrite=true|false}) and keep the others. Servers and channels
 * given the same {@code EngineConfig} object with the same overrides share one engine (its poller threads and
 * memory); an address without options shares the scheme's default engine (the {@link EngineConfig} defaults). A
 * shared engine is opened by its first user and closed when its last listener or connection closes, so reuse one
 * {@code EngineConfig} object for the channels that should share pollers; two objects, even with equal settings,
 * are two engines.
 *
 * <p><b>An engine of your own</b> ({@link #of(RdmaEngine)}): the transport uses it as is and never closes it; you
 * close it after the servers and channels that use it. Its counters and settings are yours to read
 * ({@link RdmaEngine#stats()}). An address override that contradicts it ({@code ?polling=} of another mode) is refused.
 */
public final class EngineOptions
{
    /** The engine configuration of a shared engine; a copy is taken when the engine is opened with it. */
    public static final TransportOptions.Key<EngineConfig> ENGINE_CONFIG =
        TransportOptions.Key.of("reverb.engine", EngineConfig.class);
    /** An engine the caller opened and closes; the transport uses it and never closes it. */
    public static final TransportOptions.Key<RdmaEngine> ENGINE =
        TransportOptions.Key.of("reverb.engine.instance", RdmaEngine.class);

    private EngineOptions()
    {
    }

    /**
     * @param config the engine settings.
     * @return transport options carrying them (an engine shared by every user of this config object).
     */
    public static TransportOptions of(final EngineConfig config)
    {
        return TransportOptions.of(ENGINE_CONFIG, Objects.requireNonNull(config, "config"));
    }

    /**
     * @param engine an open engine of the address's scheme, owned by the caller.
     * @return transport options that make the server or channel use it.
     */
    public static TransportOptions of(final RdmaEngine engine)
    {
        return TransportOptions.of(ENGINE, Objects.requireNonNull(engine, "engine"));
    }
}
