package io.reverb.spring.boot.springgrpc;

import io.grpc.BindableService;
import io.reverb.grpc.ReverbServerBuilder;
import java.time.Duration;
import java.util.List;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.grpc.server.GrpcServerFactory;
import org.springframework.grpc.server.ServerBuilderCustomizer;
import org.springframework.grpc.server.lifecycle.GrpcServerLifecycle;
import org.springframework.grpc.server.service.GrpcServiceConfigurer;
import org.springframework.grpc.server.service.GrpcServiceDiscoverer;
import org.springframework.util.ClassUtils;

/**
 * Spring gRPC's server on a Reverb address: with {@code spring.grpc.server.address=shm://name} (or {@code tcp://},
 * {@code rdma://}, {@code reverb://}, {@code inproc://}), the server that Spring gRPC's auto-configuration would make
 * with Netty is a {@link ReverbSpringGrpcServerFactory} instead, with what Spring gRPC gives its own servers: the
 * services it discovers ({@code BindableService} beans, its health and reflection services), configured by its
 * {@link GrpcServiceConfigurer} (global server interceptors, security), the context's
 * {@code ServerBuilderCustomizer<ReverbServerBuilder>} beans in order (first {@link ReverbSpringGrpcServerProperties}:
 * {@code spring.grpc.server.keep-alive.*} and the inbound limits), Spring gRPC's {@code GrpcServerFactoryCustomizer}
 * beans in order (each line's type; applied before the services are added, as Spring gRPC does for its own
 * factories), and a {@link GrpcServerLifecycle} that starts it with
 * the context and stops it within {@code spring.grpc.server.shutdown-grace-period} (30 s by default). Spring gRPC's
 * Netty factory backs off, since a {@code GrpcServerFactory} bean exists. Any other address, and
 * {@code spring.grpc.server.enabled=false}, leave Spring gRPC's auto-configuration as it is; so does a
 * {@code GrpcServerFactory} bean of the application's.
 *
 * <p>Without Spring gRPC's server auto-configuration the starter's own server serves the {@code BindableService} beans
 * on {@code reverb.server.address}; with this one (as with any {@code GrpcServerFactory}) it leaves them to Spring gRPC.
 * TLS and the auth token of a Reverb server are engine settings ({@code spring.grpc.server.ssl.*} does not apply; see
 * {@link ReverbSpringGrpcServerFactory}).
 */
// Spring gRPC's server auto-configuration by the name of each line: Spring gRPC's own module (0.x for Boot 3.5) and
// Spring Boot's (1.0.x for Boot 4.0); the names absent from the class path are ignored.
@AutoConfiguration(
    beforeName = {ReverbSpringGrpcServerAutoConfiguration.SPRING_GRPC_0, ReverbSpringGrpcServerAutoConfiguration.SPRING_GRPC_1},
    after = ReverbSpringGrpcAutoConfiguration.class)
@ConditionalOnClass({GrpcServerFactory.class, GrpcServiceDiscoverer.class, ReverbServerBuilder.class})
@Conditional(ReverbSpringGrpcServerAutoConfiguration.OnReverbServerAddress.class)
@ConditionalOnBean(BindableService.class)
@ConditionalOnMissingBean(GrpcServerFactory.class)
public class ReverbSpringGrpcServerAutoConfiguration
{
    /** Spring gRPC's property for its server's address. */
    public static final String ADDRESS = ReverbSpringGrpcServerProperties.PREFIX + "address";
    /** Spring gRPC's server auto-configuration in its own module (0.x, for Boot 3.5). */
    static final String SPRING_GRPC_0 = "org.springframework.grpc.autoconfigure.server.GrpcServerFactoryAutoConfiguration";
    /** Spring gRPC's server auto-configuration in Spring Boot's module (1.0.x, for Boot 4.0). */
    static final String SPRING_GRPC_1 =
        "org.springframework.boot.grpc.server.autoconfigure.GrpcServerFactoryAutoConfiguration";
    /** Spring gRPC's server auto-configuration, by the name of each line; one of them must be on the class path. */
    static final List<String> SPRING_GRPC_SERVER_AUTO_CONFIGURATIONS = List.of(SPRING_GRPC_0, SPRING_GRPC_1);
    /** Spring gRPC's default shutdown grace period, when {@code spring.grpc.server.shutdown-grace-period} is unset. */
    static final Duration DEFAULT_GRACE = Duration.ofSeconds(30);

    /**
     * @param environment where {@code spring.grpc.server.address} is read.
     * @param customizers the context's customizers for Reverb's builder, in order.
     * @param discoverer  Spring gRPC's services.
     * @param configurer  Spring gRPC's per-service configuration (interceptors, security).
     * @param beans       where Spring gRPC's {@code GrpcServerFactoryCustomizer} beans are found.
     * @return the server factory over the Reverb address, with every service Spring gRPC discovered.
     */
    @Bean
    public ReverbSpringGrpcServerFactory reverbSpringGrpcServerFactory(final Environment environment,
        final ObjectProvider<ServerBuilderCustomizer<ReverbServerBuilder>> customizers,
        final GrpcServiceDiscoverer discoverer, final GrpcServiceConfigurer configurer,
        final ListableBeanFactory beans)
    {
        final ReverbSpringGrpcServerFactory factory =
            new ReverbSpringGrpcServerFactory(address(environment), customizers.orderedStream().toList());
        SpringGrpcFactoryCustomizers.apply(beans, SpringGrpcFactoryCustomizers.SERVER, GrpcServerFactory.class, factory);
        discoverer.findServices().forEach(spec -> factory.addService(configurer.configure(spec, factory)));
        return factory;
    }

    /**
     * @param factory     the Reverb server factory.
     * @param environment where {@code spring.grpc.server.shutdown-grace-period} is read.
     * @param publisher   for Spring gRPC's server started event.
     * @return the lifecycle that starts the server with the context and stops it with it.
     */
    @Bean
    public GrpcServerLifecycle reverbSpringGrpcServerLifecycle(final ReverbSpringGrpcServerFactory factory,
        final Environment environment, final ApplicationEventPublisher publisher)
    {
        final Duration grace = Binder.get(environment)
            .bind(ReverbSpringGrpcServerProperties.PREFIX + "shutdown-grace-period", Duration.class)
            .orElse(DEFAULT_GRACE);
        return new GrpcServerLifecycle(factory, grace, publisher);
    }

    /** @return {@code spring.grpc.server.address}, trimmed, or null. */
    static String address(final Environment environment)
    {
        final String address = environment.getProperty(ADDRESS);
        return address == null ? null : address.trim();
    }

    /**
     * Matches when Spring gRPC's server auto-configuration is on the class path, {@code spring.grpc.server.address} is
     * a Reverb address and Spring gRPC's server is not off.
     */
    static final class OnReverbServerAddress extends SpringBootCondition
    {
        @Override
        public ConditionOutcome getMatchOutcome(final ConditionContext context, final AnnotatedTypeMetadata metadata)
        {
            if (SPRING_GRPC_SERVER_AUTO_CONFIGURATIONS.stream()
                .noneMatch(name -> ClassUtils.isPresent(name, context.getClassLoader())))
            {
                return ConditionOutcome.noMatch("no Spring gRPC server auto-configuration on the class path");
            }
            final Environment environment = context.getEnvironment();
            final String address = address(environment);
            if (address == null || !ReverbSpringGrpcChannelFactory.isReverbAddress(address))
            {
                return ConditionOutcome.noMatch(ADDRESS + " is not a Reverb address: " + address);
            }
            if ("false".equalsIgnoreCase(environment.getProperty(ReverbSpringGrpcServerProperties.PREFIX + "enabled")))
            {
                return ConditionOutcome.noMatch("spring.grpc.server.enabled=false");
            }
            return ConditionOutcome.match(ADDRESS + "=" + address + " is a Reverb address");
        }
    }
}
