package io.reverb.spring.boot.springgrpc;

import io.reverb.grpc.ReverbServerBuilder;
import java.util.List;
import org.springframework.grpc.server.DefaultGrpcServerFactory;
import org.springframework.grpc.server.ServerBuilderCustomizer;

/**
 * Spring gRPC's {@link org.springframework.grpc.server.GrpcServerFactory} serving on a Reverb address with
 * reverb-grpc's {@link ReverbServerBuilder#forAddress}: Spring gRPC's services, interceptors and customizers, over
 * {@code shm://name}, {@code tcp://host:port}, {@code rdma://host:port} or {@code inproc://name}. TLS ({@code tcp://})
 * and the auth token are Reverb engine settings, not grpc-java's, so there is no constructor with key managers (and
 * {@code spring.grpc.server.ssl.*} does not apply): set them in a customizer, {@code builder.reverbServer(b ->
 * b.transportOptions(EngineOptions.of(new EngineConfig().tls(tls).authToken(token))))}, or serve through the starter's
 * own server, which takes {@code reverb.server.auth-token} and {@code reverb.server.tls.*}.
 *
 * <pre>{@code
 * @Bean
 * GrpcServerFactory reverbGrpcServerFactory(List<ServerBuilderCustomizer<ReverbServerBuilder>> customizers)
 * {
 *     return new ReverbSpringGrpcServerFactory("shm://greeter", customizers);
 * }
 * }</pre>
 *
 * With Spring gRPC's server auto-configuration, {@code spring.grpc.server.address=shm://greeter} makes one with Spring
 * gRPC's services and a lifecycle ({@link ReverbSpringGrpcServerAutoConfiguration}); declare one yourself, as above,
 * only to build it differently. Without a Spring gRPC server the starter itself serves every grpc-java
 * {@code BindableService} bean on {@code reverb.server.address}; with this factory (as with any
 * {@code GrpcServerFactory} bean) the starter's server leaves the {@code BindableService} beans to Spring gRPC unless
 * {@code reverb.server.grpc-services=true}.
 */
public class ReverbSpringGrpcServerFactory extends DefaultGrpcServerFactory<ReverbServerBuilder>
{
    /**
     * @param address     the Reverb address to serve on, such as {@code shm://name} or {@code tcp://0.0.0.0:9090}.
     * @param customizers applied to the server's builder after the services are added.
     * @throws IllegalArgumentException if address is not a Reverb address.
     */
    public ReverbSpringGrpcServerFactory(
        final String address, final List<ServerBuilderCustomizer<ReverbServerBuilder>> customizers)
    {
        super(requireReverbAddress(address), customizers);
    }

    /**
     * @return reverb-grpc's builder for this factory's address.
     */
    @Override
    protected ReverbServerBuilder newServerBuilder()
    {
        return ReverbServerBuilder.forAddress(address());
    }

    private static String requireReverbAddress(final String address)
    {
        if (!ReverbSpringGrpcChannelFactory.isReverbAddress(address))
        {
            throw new IllegalArgumentException("not a Reverb address: " + address + " (expected one of " +
                ReverbSpringGrpcChannelFactory.SCHEMES + " followed by ://, such as shm://name)");
        }
        return address;
    }
}
