package io.reverb.spring.boot;

import org.springframework.beans.factory.BeanFactory;
import io.grpc.BindableService;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.reverb.grpc.ReverbObservationClientInterceptor;
import io.reverb.grpc.ReverbObservationServerInterceptor;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.RpcService;
import io.reverb.rpc.observation.ObservationClientInterceptor;
import io.reverb.rpc.observation.ObservationServerInterceptor;
import io.reverb.services.health.HealthStatusManager;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.availability.ApplicationAvailability;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.ssl.SslBundles;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.core.env.Environment;

/**
 * Spring Boot auto-configuration of Reverb (the same class on Boot 3.5 and 4: it uses only what both lines have): a {@link ReverbServerLifecycle} that serves the context's service beans on
 * {@code reverb.server.address} (unless the application has its own {@link RpcServer} bean; the grpc-java ones unless
 * Spring gRPC's or net.devh's server serves them: {@code reverb.server.grpc-services}), a {@link ReverbChannelFactory}
 * (and, with reverb-grpc, a
 * {@link ReverbGrpcChannelFactory}) for the channels of {@code reverb.client.channels.NAME}, {@link ReverbClient}
 * injection, Reverb's health service, and the context's Micrometer {@code MeterRegistry} and
 * {@code ObservationRegistry} on every server and channel.
 */
// After the registries are made, by their names on Boot 4 (spring-boot-micrometer-*) and on Boot 3.5 (Actuator's
// auto-configuration); the names absent from the class path are ignored.
@AutoConfiguration(afterName = {"org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
    "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration"})
@EnableConfigurationProperties(ReverbProperties.class)
public class ReverbAutoConfiguration
{
    /** Spring Boot's default of {@code spring.lifecycle.timeout-per-shutdown-phase}. */
    static final Duration DEFAULT_SHUTDOWN_PHASE_TIMEOUT = Duration.ofSeconds(30);

    /**
     * @return the state of Reverb's health service (the application may set services' statuses on it).
     */
    @Bean
    @ConditionalOnMissingBean
    public HealthStatusManager reverbHealthStatusManager()
    {
        return new HealthStatusManager();
    }

    /**
     * @param health the health service's state.
     * @return the listener that carries the application's readiness into the health service.
     */
    @Bean
    public ReverbReadiness reverbReadiness(final HealthStatusManager health)
    {
        return new ReverbReadiness(health);
    }

    /**
     * @param properties  {@code reverb.*}.
     * @param customizers the channel customizers.
     * @param bundles     Spring Boot's SSL bundles, for {@code reverb.client.channels.NAME.tls.bundle}.
     * @return the native channels by name.
     */
    @Bean
    @ConditionalOnMissingBean
    public ReverbChannelFactory reverbChannelFactory(
        final ReverbProperties properties, final ObjectProvider<ReverbChannelCustomizer> customizers,
        final ObjectProvider<SslBundles> bundles)
    {
        return new ReverbChannelFactory(properties.getClient(), customizers.orderedStream().toList(),
            bundles.getIfAvailable());
    }

    /**
     * The server of the service beans. It backs off when the application has its own server: an {@link RpcServer}
     * bean (which then serves what the application adds to it; two servers would both take the service beans and,
     * by default, port 9090).
     *
     * @param properties   {@code reverb.*}.
     * @param environment  for Spring Boot's {@code server.shutdown} and {@code spring.lifecycle.*}.
     * @param beans        for the gRPC servers of Spring gRPC or net.devh, if the context has one.
     * @param services     the native service beans.
     * @param grpc         the grpc-java services, with reverb-grpc.
     * @param customizers  the server customizers.
     * @param health       the health service's state.
     * @param bundles      Spring Boot's SSL bundles, for {@code reverb.server.tls.bundle}.
     * @param availability Spring Boot's application availability, whose readiness the whole server's health follows.
     * @return the server's lifecycle.
     */
    @Bean
    @ConditionalOnMissingBean({ReverbServerLifecycle.class, RpcServer.class})
    @ConditionalOnBooleanProperty(name = "reverb.server.enabled", matchIfMissing = true)
    ReverbServerLifecycle reverbServer(
        final ReverbProperties properties, final Environment environment, final ListableBeanFactory beans,
        final ObjectProvider<RpcService> services, final ObjectProvider<Serving.GrpcFactory> grpc,
        final ObjectProvider<ReverbServerCustomizer> customizers, final ObjectProvider<HealthStatusManager> health,
        final ObjectProvider<SslBundles> bundles, final ObjectProvider<ApplicationAvailability> availability)
    {
        final ReverbProperties.Server server = properties.getServer();
        final Binder binder = Binder.get(environment);
        ReverbProperties.Shutdown shutdown = server.getShutdown();
        if (shutdown == null)
        {
            final String boot = binder.bind("server.shutdown", String.class).orElse("graceful");
            shutdown = ReverbProperties.Shutdown.valueOf(boot.trim().toUpperCase(Locale.ROOT));
        }
        Duration grace = server.getShutdownGracePeriod();
        if (grace == null)
        {
            grace = binder.bind("spring.lifecycle.timeout-per-shutdown-phase", Duration.class)
                .orElse(DEFAULT_SHUTDOWN_PHASE_TIMEOUT);
        }
        final List<RpcService> nativeServices = services.orderedStream().toList();
        final List<OtherGrpcServers.Server> others = OtherGrpcServers.find(beans, environment);
        final Serving.GrpcFactory grpcServices =
            OtherGrpcServers.grpcToServe(server.getGrpcServices(), grpc.getIfAvailable(), others);
        if (!nativeServices.isEmpty() || grpcServices != null && !grpcServices.serviceNames().isEmpty())
        {
            OtherGrpcServers.checkPorts(server.getAddress(), others);
        }
        return new ReverbServerLifecycle(server, nativeServices, grpcServices, customizers.orderedStream().toList(),
            server.isHealthServiceEnabled() ? health.getIfAvailable() : null, shutdown, grace, bundles.getIfAvailable(),
            availability.getIfAvailable());
    }

    /**
     * @param beans for the channel factories, looked up when a field is injected.
     * @return the injector of {@link ReverbClient} fields.
     */
    @Bean
    static ReverbClientInjector reverbClientInjector(final BeanFactory beans)
    {
        return new ReverbClientInjector(beans);
    }

    /** The context's MeterRegistry gets Reverb's transport metrics. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    @ConditionalOnBooleanProperty(name = "reverb.metrics.enabled", matchIfMissing = true)
    static class Metrics
    {
        @Bean
        @Order(0)
        ReverbServerCustomizer reverbServerMetrics(final ObjectProvider<MeterRegistry> registry)
        {
            return builder -> registry.ifAvailable(builder::meterRegistry);
        }

        @Bean
        @Order(0)
        ReverbChannelCustomizer reverbChannelMetrics(final ObjectProvider<MeterRegistry> registry)
        {
            return (name, builder) -> registry.ifAvailable(builder::meterRegistry);
        }
    }

    /** The context's ObservationRegistry observes every call (timers, and traces with Micrometer Tracing). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(ObservationRegistry.class)
    @ConditionalOnBooleanProperty(name = "reverb.observations.enabled", matchIfMissing = true)
    static class Observations
    {
        @Bean
        @Order(0)
        ReverbServerCustomizer reverbServerObservations(final ObjectProvider<ObservationRegistry> registry)
        {
            return builder -> registry.ifAvailable(r -> builder.intercept(new ObservationServerInterceptor(r)));
        }

        @Bean
        @Order(0)
        ReverbChannelCustomizer reverbChannelObservations(final ObjectProvider<ObservationRegistry> registry)
        {
            return (name, builder) -> registry.ifAvailable(r -> builder.intercept(new ObservationClientInterceptor(r)));
        }
    }

    /** grpc-java services and channels over Reverb, with reverb-grpc. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({BindableService.class, ReverbServerBuilder.class})
    static class Grpc
    {
        @Bean
        @ConditionalOnMissingBean
        Serving.GrpcFactory reverbGrpcServing(
            final ObjectProvider<BindableService> services, final ObjectProvider<ReverbGrpcServerCustomizer> customizers)
        {
            return new GrpcServing(services.orderedStream().toList(), customizers.orderedStream().toList());
        }

        @Bean
        @ConditionalOnMissingBean
        ReverbGrpcChannelFactory reverbGrpcChannelFactory(
            final ReverbChannelFactory channels, final ObjectProvider<ReverbGrpcChannelCustomizer> customizers)
        {
            return new ReverbGrpcChannelFactory(channels, customizers.orderedStream().toList());
        }

        /**
         * The context's ObservationRegistry observes the grpc-java channels' and servers' calls too: grpc-java's calls
         * over Reverb are Reverb streams that rpc-core's call interceptors never see, so the observation is a
         * grpc-java interceptor there, with the same name and keys as the native channels' and servers'. Applied after
         * the other customizers: grpc-java runs the interceptor added last first, so the observation wraps the others
         * (as rpc-core's, added first, does on native channels and servers).
         */
        @Configuration(proxyBeanMethods = false)
        @ConditionalOnClass(ObservationRegistry.class)
        @ConditionalOnBooleanProperty(name = "reverb.observations.enabled", matchIfMissing = true)
        static class GrpcObservations
        {
            @Bean
            @Order(Ordered.LOWEST_PRECEDENCE)
            ReverbGrpcChannelCustomizer reverbGrpcChannelObservations(final ObjectProvider<ObservationRegistry> registry)
            {
                return (name, builder) ->
                    registry.ifAvailable(r -> builder.intercept(new ReverbObservationClientInterceptor(r)));
            }

            @Bean
            @Order(Ordered.LOWEST_PRECEDENCE)
            ReverbGrpcServerCustomizer reverbGrpcServerObservations(final ObjectProvider<ObservationRegistry> registry)
            {
                return builder -> registry.ifAvailable(r -> builder.intercept(new ReverbObservationServerInterceptor(r)));
            }
        }
    }
}
