package io.reverb.spring.boot;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.reverb.grpc.ReverbChannelBuilder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.springframework.beans.factory.DisposableBean;

/**
 * grpc-java channels over Reverb (reverb-grpc's {@link ReverbChannelBuilder}) by name, from the same
 * {@code reverb.client.channels.NAME.*} settings as {@link ReverbChannelFactory}'s native channels, for stubs generated
 * by {@code protoc-gen-grpc-java}:
 *
 * <pre>{@code
 * @Bean
 * GreeterGrpc.GreeterBlockingStub greeter(ReverbGrpcChannelFactory channels)
 * {
 *     return channels.stub("greeter", GreeterGrpc::newBlockingStub);
 * }
 * }</pre>
 *
 * Each name gets one {@link ManagedChannel}, made on first use; all are shut down when the context closes. The
 * {@code load-balancing-policy} setting becomes grpc-java's default policy; {@code health-check} is not applied (set
 * grpc-java's health-checking service config with a {@link ReverbGrpcChannelCustomizer}).
 */
public class ReverbGrpcChannelFactory implements DisposableBean
{
    private final ReverbChannelFactory reverb;
    private final List<ReverbGrpcChannelCustomizer> customizers;
    private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /**
     * @param reverb      the native channels' factory, whose settings and customizers configure each connection.
     * @param customizers applied to each grpc-java channel's builder, in this order.
     */
    public ReverbGrpcChannelFactory(final ReverbChannelFactory reverb, final List<ReverbGrpcChannelCustomizer> customizers)
    {
        this.reverb = reverb;
        this.customizers = List.copyOf(customizers);
    }

    /**
     * @param name a channel's name under {@code reverb.client.channels}, or an address.
     * @return the grpc-java channel of that name (the same one on every call).
     * @throws IllegalArgumentException if no channel of that name is configured and it is not an address.
     * @throws IllegalStateException    once the context is closing.
     */
    public ManagedChannel channel(final String name)
    {
        if (closed)
        {
            // before the map: it still holds the channels destroy() shut down
            throw new IllegalStateException("the Reverb channels are closed (the application context is closing)");
        }
        final ManagedChannel existing = channels.get(name);
        if (existing != null)
        {
            return existing;
        }
        final String address = reverb.address(name);
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
     * @param name    a channel's name (or an address).
     * @param newStub makes the stub, e.g. {@code GreeterGrpc::newBlockingStub}.
     * @param <S>     the stub's type.
     * @return a stub on the channel of that name.
     */
    public <S> S stub(final String name, final Function<Channel, S> newStub)
    {
        return newStub.apply(channel(name));
    }

    private ManagedChannel build(final String name, final String address)
    {
        final List<String> addresses = new ArrayList<>();
        for (final String a : Arrays.asList(address.split(",")))
        {
            if (!a.isBlank())
            {
                addresses.add(a.trim());
            }
        }
        final ReverbChannelBuilder builder = addresses.size() > 1 ?
            ReverbChannelBuilder.forAddresses(addresses) : ReverbChannelBuilder.forTarget(
            addresses.isEmpty() ? address : addresses.get(0));
        builder.reverbChannel(b -> reverb.configure(name, b, false));
        final ReverbProperties.Channel settings = reverb.settings(name);
        if (settings != null)
        {
            ReverbChannelFactory.check(name, settings); // a deadline of zero would fail every call DEADLINE_EXCEEDED
        }
        if (settings != null && settings.getLoadBalancingPolicy() != null)
        {
            builder.defaultLoadBalancingPolicy(settings.getLoadBalancingPolicy());
        }
        if (settings != null && settings.getDefaultDeadline() != null)
        {
            // grpc-java's calls take their deadline from grpc-java's CallOptions only: the Reverb channel's default
            // never reached them (a stub without withDeadline waited for ever)
            final long nanos = settings.getDefaultDeadline().toNanos();
            builder.intercept(new ClientInterceptor()
            {
                @Override
                public <Q, A> ClientCall<Q, A> interceptCall(final MethodDescriptor<Q, A> method,
                    final CallOptions options, final Channel next)
                {
                    return next.newCall(method, options.getDeadline() != null ? options :
                        options.withDeadlineAfter(nanos, TimeUnit.NANOSECONDS));
                }
            });
        }
        for (final ReverbGrpcChannelCustomizer customizer : customizers)
        {
            customizer.customize(name, builder);
        }
        return builder.build();
    }

    /** Shuts every channel down, waiting briefly for their calls; later {@link #channel} calls fail. */
    @Override
    public void destroy() throws InterruptedException
    {
        synchronized (this)
        {
            closed = true;
        }
        channels.values().forEach(ManagedChannel::shutdown);
        for (final ManagedChannel channel : channels.values())
        {
            if (!channel.awaitTermination(5, TimeUnit.SECONDS))
            {
                channel.shutdownNow();
            }
        }
    }
}
