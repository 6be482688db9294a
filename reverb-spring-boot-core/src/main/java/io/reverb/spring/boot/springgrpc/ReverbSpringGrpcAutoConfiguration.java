package io.reverb.spring.boot.springgrpc;

import io.reverb.grpc.ReverbChannelBuilder;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.core.env.Environment;
import org.springframework.grpc.client.ClientInterceptorsConfigurer;
import org.springframework.grpc.client.GrpcChannelBuilderCustomizer;
import org.springframework.grpc.client.GrpcChannelFactory;
import org.springframework.grpc.client.VirtualTargets;

/**
 * With Spring gRPC ({@code spring-grpc-core}) and reverb-grpc on the class path: a {@link ReverbSpringGrpcChannelFactory}
 * bean, ordered first among the {@link GrpcChannelFactory} beans, so that Spring gRPC's
 * {@code createChannel("shm://name")} (through its composite factory when there are several) goes over Reverb and every
 * other target to Spring gRPC's own factories. It runs after Spring gRPC's client auto-configuration (whose Netty
 * factory backs off when a channel factory exists already) and before its composite factory's. Channel names that
 * Spring gRPC's {@link VirtualTargets} bean (its {@code spring.grpc.client.channels.NAME.address} properties) maps to a
 * Reverb address are Reverb's too. For servers declared with {@link ReverbSpringGrpcServerFactory}, a
 * {@link ReverbSpringGrpcServerProperties} customizer applies Spring gRPC's {@code spring.grpc.server.keep-alive.*} and
 * inbound limits, which Spring gRPC maps onto its own servers only.
 */
// Spring gRPC's client auto-configuration by the name of each line: Spring gRPC's own module (0.x for Boot 3.5, 1.0.x
// for Boot 4.0) and Spring Boot's (4.1); the names absent from the class path are ignored.
@AutoConfiguration(
    afterName = {"org.springframework.grpc.autoconfigure.client.GrpcClientAutoConfiguration",
        "org.springframework.boot.grpc.client.autoconfigure.GrpcClientAutoConfiguration"},
    beforeName = {"org.springframework.grpc.autoconfigure.client.CompositeChannelFactoryAutoConfiguration",
        "org.springframework.boot.grpc.client.autoconfigure.CompositeChannelFactoryAutoConfiguration"})
@ConditionalOnClass({GrpcChannelFactory.class, ReverbChannelBuilder.class})
public class ReverbSpringGrpcAutoConfiguration
{
    /**
     * @param context the application context, whose {@code @GlobalClientInterceptor} beans it applies.
     * @return Spring gRPC's interceptor configurer, when Spring gRPC's client auto-configuration made none.
     */
    @Bean
    @ConditionalOnMissingBean
    public ClientInterceptorsConfigurer clientInterceptorsConfigurer(final ApplicationContext context)
    {
        return new ClientInterceptorsConfigurer(context);
    }

    /**
     * @param environment where Spring gRPC's server properties are read.
     * @return the customizer that applies them to a {@link ReverbSpringGrpcServerFactory}'s builder, first in order.
     */
    @Bean
    @Order(Ordered.HIGHEST_PRECEDENCE)
    @ConditionalOnMissingBean
    public ReverbSpringGrpcServerProperties reverbSpringGrpcServerProperties(final Environment environment)
    {
        return new ReverbSpringGrpcServerProperties(environment);
    }

    /**
     * @param customizers  Spring gRPC channel customizers for Reverb's builder, in order.
     * @param interceptors Spring gRPC's interceptor configurer.
     * @param targets      Spring gRPC's channel names, if it has a (unique) {@link VirtualTargets} bean.
     * @param beans        where Spring gRPC's {@code GrpcChannelFactoryCustomizer} beans are found: they are applied
     *                     to this factory too, in order, last (as Spring gRPC does for its own factories).
     * @return the factory.
     */
    @Bean
    @Order(Ordered.HIGHEST_PRECEDENCE)
    @ConditionalOnMissingBean
    public ReverbSpringGrpcChannelFactory reverbSpringGrpcChannelFactory(
        final ObjectProvider<GrpcChannelBuilderCustomizer<ReverbChannelBuilder>> customizers,
        final ClientInterceptorsConfigurer interceptors, final ObjectProvider<VirtualTargets> targets,
        final ListableBeanFactory beans)
    {
        final ReverbSpringGrpcChannelFactory factory =
            new ReverbSpringGrpcChannelFactory(customizers.orderedStream().toList(), interceptors);
        targets.ifUnique(factory::setVirtualTargets);
        SpringGrpcFactoryCustomizers.apply(beans, SpringGrpcFactoryCustomizers.CHANNEL, GrpcChannelFactory.class, factory);
        return factory;
    }
}
