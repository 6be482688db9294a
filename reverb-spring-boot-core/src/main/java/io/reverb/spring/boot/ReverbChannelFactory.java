package io.reverb.spring.boot;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.rpc.RpcChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.ssl.SslBundles;

/**
 * The application's Reverb channels, by name: {@code reverb.client.channels.NAME.address} and the other settings of
 * that name (its {@code auth-token} and {@code tls.*} as the engine settings of its transport), then every
 * {@link ReverbChannelCustomizer}. Each name gets one channel, made on first use and shared by
 * every stub; all are closed when the context closes. A stub bean:
 *
 * <pre>{@code
 * @Bean
 * GreeterRpc.GreeterReactorStub greeter(ReverbChannelFactory channels)
 * {
 *     return channels.stub("greeter", GreeterRpc::newReactorStub);
 * }
 * }</pre>
 *
 * or a field: {@code @ReverbClient("greeter") GreeterRpc.GreeterReactorStub greeter;} (see {@link ReverbClient}).
 */
public class ReverbChannelFactory implements DisposableBean
{
    private final ReverbProperties.Client properties;
    private final List<ReverbChannelCustomizer> customizers;
    private final SslBundles bundles;
    private final Map<String, RpcChannel> channels = new ConcurrentHashMap<>();
    /** Each name's token and TLS, made once: every connection of a name shares one engine. */
    private final Map<String, Optional<EngineConfig>> engines = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /**
     * @param properties  the channels' settings.
     * @param customizers applied to each channel's builder after the settings, in this order.
     */
    public ReverbChannelFactory(final ReverbProperties.Client properties, final List<ReverbChannelCustomizer> customizers)
    {
        this(properties, customizers, null);
    }

    /**
     * @param properties  the channels' settings.
     * @param customizers applied to each channel's builder after the settings, in this order.
     * @param bundles     Spring Boot's SSL bundles for {@code reverb.client.channels.NAME.tls.bundle}, or null.
     */
    public ReverbChannelFactory(final ReverbProperties.Client properties, final List<ReverbChannelCustomizer> customizers,
        final SslBundles bundles)
    {
        this.properties = Objects.requireNonNull(properties, "properties");
        this.customizers = List.copyOf(customizers);
        this.bundles = bundles;
        properties.getChannels().forEach(ReverbChannelFactory::check);
    }

    /**
     * Fails on settings that binding accepts but no channel can use, naming the property.
     *
     * @param name     the channel's name.
     * @param settings its settings.
     * @throws IllegalArgumentException on a default deadline that is not positive (every call would fail
     *                                  DEADLINE_EXCEEDED) or a message size that is not positive or beyond an int.
     */
    static void check(final String name, final ReverbProperties.Channel settings)
    {
        final String prefix = "reverb.client.channels." + name + ".";
        if (settings.getDefaultDeadline() != null)
        {
            PropertyChecks.positive(prefix + "default-deadline", settings.getDefaultDeadline());
        }
        if (settings.getMaxInboundMessageSize() != null)
        {
            PropertyChecks.messageSize(prefix + "max-inbound-message-size", settings.getMaxInboundMessageSize());
        }
    }

    /**
     * @param name a channel's name under {@code reverb.client.channels}, or an address ({@code tcp://host:port}...).
     * @return the channel of that name (the same one on every call).
     * @throws IllegalArgumentException if no channel of that name is configured and it is not an address.
     * @throws IllegalStateException    once the context is closing.
     */
    public RpcChannel channel(final String name)
    {
        if (closed)
        {
            // before the map: it still holds the channels destroy() closed
            throw new IllegalStateException("the Reverb channels are closed (the application context is closing)");
        }
        final RpcChannel existing = channels.get(name);
        if (existing != null)
        {
            return existing;
        }
        final String address = address(name);
        synchronized (this)
        {
            if (closed)
            {
                throw new IllegalStateException("the Reverb channels are closed (the application context is closing)");
            }
            return channels.computeIfAbsent(name, n -> build(n, address));
        }
    }

    /**
     * @param name    a channel's name (or an address), as in {@link #channel(String)}.
     * @param newStub makes the stub, e.g. {@code GreeterRpc::newReactorStub}.
     * @param <S>     the stub's type.
     * @return a stub on the channel of that name.
     */
    public <S> S stub(final String name, final Function<RpcChannel, S> newStub)
    {
        return newStub.apply(channel(name));
    }

    /**
     * @return the names configured under {@code reverb.client.channels}.
     */
    public List<String> names()
    {
        return List.copyOf(properties.getChannels().keySet());
    }

    /**
     * @return the channels made so far, by name.
     */
    public Map<String, RpcChannel> channels()
    {
        return Map.copyOf(channels);
    }

    /**
     * The address a name stands for.
     *
     * @param name a configured name or an address.
     * @return its {@code address} setting, or the name itself when it is an address.
     * @throws IllegalArgumentException if neither.
     */
    public String address(final String name)
    {
        Objects.requireNonNull(name, "name");
        final ReverbProperties.Channel settings = properties.getChannels().get(name);
        if (settings != null)
        {
            final String address = settings.getAddress();
            if (address == null || address.isBlank())
            {
                throw new IllegalArgumentException("reverb.client.channels." + name + ".address is not set");
            }
            return address.trim();
        }
        if (name.contains(":/"))
        {
            return name;
        }
        throw new IllegalArgumentException("no Reverb channel named '" + name + "': set reverb.client.channels." + name +
            ".address (configured: " + properties.getChannels().keySet() + "), or ask for an address such as tcp://host:port");
    }

    /**
     * Applies a name's settings and the customizers to a builder (also for the Reverb connections of grpc-java
     * channels, where only the connection-level settings apply).
     *
     * @param name         the channel's name or address.
     * @param builder      the builder.
     * @param channelLevel false for a grpc-java channel's connections: balancing and health checking are grpc-java's.
     * @return the builder.
     */
    RpcChannel.Builder configure(final String name, final RpcChannel.Builder builder, final boolean channelLevel)
    {
        final ReverbProperties.Channel settings = properties.getChannels().get(name);
        if (settings != null)
        {
            check(name, settings);
            if (settings.getDefaultDeadline() != null)
            {
                builder.defaultDeadline(settings.getDefaultDeadline());
            }
            if (settings.getMaxInboundMessageSize() != null)
            {
                builder.maxInboundMessageSize(PropertyChecks.messageSize(
                    "reverb.client.channels." + name + ".max-inbound-message-size", settings.getMaxInboundMessageSize()));
            }
            if (settings.getKeepAliveTime() != null || settings.getKeepAliveTimeout() != null)
            {
                final Duration time = settings.getKeepAliveTime() != null ? settings.getKeepAliveTime() : builder.keepAliveTime();
                final Duration timeout = settings.getKeepAliveTimeout() != null ?
                    settings.getKeepAliveTimeout() : builder.keepAliveTimeout();
                builder.keepAlive(time, timeout);
            }
            if (channelLevel && settings.getLoadBalancingPolicy() != null)
            {
                builder.loadBalancingPolicy(settings.getLoadBalancingPolicy());
            }
            if (channelLevel && settings.getHealthCheck() != null)
            {
                builder.healthCheck(settings.getHealthCheck());
            }
            final Optional<EngineConfig> engine = engines.computeIfAbsent(name,
                n -> Optional.ofNullable(ReverbSecurity.channel(n, settings, bundles)));
            engine.ifPresent(config ->
                builder.transportOptions(builder.transportOptions().with(EngineOptions.ENGINE_CONFIG, config)));
        }
        for (final ReverbChannelCustomizer customizer : customizers)
        {
            customizer.customize(name, builder);
        }
        return builder;
    }

    /**
     * @param name a configured name.
     * @return its settings, or null.
     */
    ReverbProperties.Channel settings(final String name)
    {
        return properties.getChannels().get(name);
    }

    private RpcChannel build(final String name, final String address)
    {
        final List<String> addresses = new ArrayList<>();
        for (final String a : Arrays.asList(address.split(",")))
        {
            if (!a.isBlank())
            {
                addresses.add(a.trim());
            }
        }
        final RpcChannel.Builder builder = addresses.size() > 1 ? RpcChannel.builder(addresses) : RpcChannel.builder(address);
        return configure(name, builder, true).build();
    }

    /** Closes every channel; later {@link #channel} calls fail. */
    @Override
    public void destroy()
    {
        synchronized (this)
        {
            closed = true;
        }
        channels.values().forEach(RpcChannel::close);
    }
}
