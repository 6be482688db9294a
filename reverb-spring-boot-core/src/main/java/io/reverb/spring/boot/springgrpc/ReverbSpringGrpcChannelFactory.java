package io.reverb.spring.boot.springgrpc;

import io.grpc.ChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.reverb.grpc.ReverbChannelBuilder;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.EnvironmentAware;
import org.springframework.core.env.Environment;
import org.springframework.grpc.client.ClientInterceptorsConfigurer;
import org.springframework.grpc.client.DefaultGrpcChannelFactory;
import org.springframework.grpc.client.GrpcChannelBuilderCustomizer;
import org.springframework.grpc.client.VirtualTargets;

/**
 * Spring gRPC's {@link org.springframework.grpc.client.GrpcChannelFactory} for Reverb addresses: it
 * {@linkplain #supports(String) supports} the targets whose scheme is one of Reverb's ({@link #SCHEMES}) and builds
 * their channels with reverb-grpc's {@link ReverbChannelBuilder#forTarget}. Spring gRPC's interceptors, customizers
 * and channel shutdown apply as to its own channels, so
 *
 * <pre>{@code
 * ManagedChannel channel = grpcChannelFactory.createChannel("shm://greeter");   // was "localhost:9090"
 * }</pre>
 *
 * is the only change in a Spring gRPC application; so is {@code spring.grpc.client.channels.NAME.address=shm://greeter}
 * for a channel name. A channel name configured with {@code tcp://host:port} is Reverb's as well (Spring gRPC's own
 * targets map it to {@code host:port}, grpc-java's; {@code static://host:port} and {@code host:port} stay Spring
 * gRPC's). Other targets are left to Spring gRPC's own factories (this one
 * is ordered first among them, and Spring gRPC's composite factory asks each in turn). Reverb's TLS ({@code tcp://})
 * and auth token are engine settings of the Reverb connection, not grpc-java credentials: a target whose configured
 * credentials are not insecure (Spring gRPC's {@code ssl.*}) fails with an {@link IllegalArgumentException} that says
 * where to set them instead (a {@code GrpcChannelBuilderCustomizer<ReverbChannelBuilder>} calling
 * {@code reverbChannel(b -> b.transportOptions(EngineOptions.of(new EngineConfig().tls(tls))))}), rather than dial
 * without the TLS that was asked for.
 */
public class ReverbSpringGrpcChannelFactory extends DefaultGrpcChannelFactory<ReverbChannelBuilder>
    implements EnvironmentAware
{
    /** The URI schemes of Reverb's transports that this factory takes. */
    public static final Set<String> SCHEMES = Set.of("shm", "tcp", "rdma", "reverb", "inproc");
    private static final String CLIENT_PREFIX = "spring.grpc.client.";

    /** A copy of the superclass's: its field is private in Spring gRPC 0.x (Boot 3.5) and protected in 1.x. */
    private VirtualTargets virtualTargets = VirtualTargets.DEFAULT;
    /** Where Spring gRPC's channel properties are read as written; null outside an application context. */
    private Environment environment;

    /**
     * @param globalCustomizers      applied to every channel's builder.
     * @param interceptorsConfigurer Spring gRPC's configurer of the global and per-channel client interceptors.
     */
    public ReverbSpringGrpcChannelFactory(
        final List<GrpcChannelBuilderCustomizer<ReverbChannelBuilder>> globalCustomizers,
        final ClientInterceptorsConfigurer interceptorsConfigurer)
    {
        super(globalCustomizers, interceptorsConfigurer);
        setVirtualTargets(VirtualTargets.DEFAULT); // channel names configured with a Reverb address map to it
    }

    /**
     * @param target a target, or the name of a channel that Spring gRPC's virtual targets map to one.
     * @return whether target (or what its name maps to) is a Reverb address such as {@code shm://name}.
     */
    @Override
    public boolean supports(final String target)
    {
        return reverbTarget(target, virtualTargets) != null;
    }

    /**
     * @param targets Spring gRPC's map of channel names to targets; a name whose configured address is a Reverb
     *                address maps to that address as written (Spring gRPC's own map takes {@code tcp:} off it).
     */
    @Override
    public void setVirtualTargets(final VirtualTargets targets)
    {
        this.virtualTargets = targets;
        super.setVirtualTargets(name ->
        {
            final String reverb = reverbTarget(name, targets);
            return reverb != null ? reverb : targets.getTarget(name);
        });
    }

    /**
     * @param environment where a channel's address is read as written in {@code spring.grpc.client.channels.NAME.address}
     *                    (or {@code spring.grpc.client.default-channel.address} for {@code default}).
     */
    @Override
    public void setEnvironment(final Environment environment)
    {
        this.environment = environment;
    }

    /**
     * @return the Reverb address that target is, or that its channel name is configured with, or that Spring gRPC's
     *     targets map it to; null if none is a Reverb address. Spring gRPC maps {@code tcp://host:port} to
     *     {@code host:port} (its {@code tcp:} is grpc-java's), so the configured address is read before its map.
     */
    private String reverbTarget(final String target, final VirtualTargets targets)
    {
        if (isReverbAddress(target))
        {
            return target;
        }
        final String configured = configuredAddress(target);
        if (isReverbAddress(configured))
        {
            return configured;
        }
        final String mapped = targets.getTarget(target);
        return isReverbAddress(mapped) ? mapped : null;
    }

    /** @return the address configured for channel name, placeholders resolved, or null. */
    private String configuredAddress(final String name)
    {
        if (environment == null || name == null)
        {
            return null;
        }
        final String address;
        if ("default".equals(name))
        {
            address = environment.getProperty(CLIENT_PREFIX + "default-channel.address");
        }
        else
        {
            Map<String, ChannelAddress> channels;
            try
            {
                channels = Binder.get(environment)
                    .bind(CLIENT_PREFIX + "channels", Bindable.mapOf(String.class, ChannelAddress.class))
                    .orElse(Map.of());
            }
            catch (final BindException ex)
            {
                // Spring gRPC's own binding of these properties reports what is wrong with them; here it only means
                // that no channel name is known to be configured with a Reverb address.
                channels = Map.of();
            }
            final ChannelAddress channel = channels.get(name);
            address = channel != null ? channel.getAddress() : null;
        }
        return address != null ? environment.resolvePlaceholders(address.trim()) : null;
    }

    /** The one property of a Spring gRPC channel read here (the others bind to nothing). */
    public static final class ChannelAddress
    {
        private String address;

        /** @return the channel's address as written. */
        public String getAddress()
        {
            return address;
        }

        /** @param address the channel's address as written. */
        public void setAddress(final String address)
        {
            this.address = address;
        }
    }

    /**
     * @param target      a Reverb address.
     * @param credentials the channel's credentials: only insecure ones (Reverb's TLS is an engine setting).
     * @return reverb-grpc's builder for target.
     * @throws IllegalArgumentException if the credentials ask for TLS, or target is a malformed Reverb address.
     */
    @Override
    protected ReverbChannelBuilder newChannelBuilder(final String target, final ChannelCredentials credentials)
    {
        if (credentials != null && !(credentials instanceof InsecureChannelCredentials))
        {
            throw new IllegalArgumentException("grpc-java credentials do not apply to Reverb channels: the " +
                "credentials configured for " + target + " (" + credentials.getClass().getSimpleName() + ") cannot be " +
                "used. Reverb's TLS (tcp://) and auth token are engine settings: configure none (insecure) here and " +
                "set them with a GrpcChannelBuilderCustomizer<ReverbChannelBuilder>: reverbChannel(b -> " +
                "b.transportOptions(EngineOptions.of(new EngineConfig().tls(...).authToken(...))))");
        }
        return ReverbChannelBuilder.forTarget(target);
    }

    /**
     * @param target a target, or null.
     * @return whether its scheme is one of {@link #SCHEMES} and it has something after {@code ://}.
     */
    static boolean isReverbAddress(final String target)
    {
        if (target == null)
        {
            return false;
        }
        final int separator = target.indexOf("://");
        return separator > 0 && separator + 3 < target.length()
            && SCHEMES.contains(target.substring(0, separator).toLowerCase(Locale.ROOT));
    }
}
