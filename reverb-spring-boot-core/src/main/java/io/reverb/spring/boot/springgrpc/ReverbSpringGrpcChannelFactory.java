package io.reverb.spring.boot.springgrpc;

import io.grpc.ChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.reverb.grpc.ReverbChannelBuilder;
import java.util.List;
import java.util.Locale;
import java.util.Set;
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
 * is the only change in a Spring gRPC application. Other targets are left to Spring gRPC's own factories (this one
 * is ordered first among them, and Spring gRPC's composite factory asks each in turn). Reverb's TLS ({@code tcp://})
 * and auth token are engine settings of the Reverb connection, not grpc-java credentials: a target whose configured
 * credentials are not insecure (Spring gRPC's {@code ssl.*}) fails with an {@link IllegalArgumentException} that says
 * where to set them instead (a {@code GrpcChannelBuilderCustomizer<ReverbChannelBuilder>} calling
 * {@code reverbChannel(b -> b.transportOptions(EngineOptions.of(new EngineConfig().tls(tls))))}), rather than dial
 * without the TLS that was asked for.
 */
public class ReverbSpringGrpcChannelFactory extends DefaultGrpcChannelFactory<ReverbChannelBuilder>
{
    /** The URI schemes of Reverb's transports that this factory takes. */
    public static final Set<String> SCHEMES = Set.of("shm", "tcp", "rdma", "reverb", "inproc");

    /** A copy of the superclass's: its field is private in Spring gRPC 0.x (Boot 3.5) and protected in 1.x. */
    private VirtualTargets virtualTargets = VirtualTargets.DEFAULT;

    /**
     * @param globalCustomizers      applied to every channel's builder.
     * @param interceptorsConfigurer Spring gRPC's configurer of the global and per-channel client interceptors.
     */
    public ReverbSpringGrpcChannelFactory(
        final List<GrpcChannelBuilderCustomizer<ReverbChannelBuilder>> globalCustomizers,
        final ClientInterceptorsConfigurer interceptorsConfigurer)
    {
        super(globalCustomizers, interceptorsConfigurer);
    }

    /**
     * @param target a target, or the name of a channel that Spring gRPC's virtual targets map to one.
     * @return whether target (or what its name maps to) is a Reverb address such as {@code shm://name}.
     */
    @Override
    public boolean supports(final String target)
    {
        return isReverbAddress(target) || isReverbAddress(virtualTargets.getTarget(target));
    }

    /**
     * @param targets Spring gRPC's map of channel names to targets.
     */
    @Override
    public void setVirtualTargets(final VirtualTargets targets)
    {
        super.setVirtualTargets(targets);
        this.virtualTargets = targets;
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
