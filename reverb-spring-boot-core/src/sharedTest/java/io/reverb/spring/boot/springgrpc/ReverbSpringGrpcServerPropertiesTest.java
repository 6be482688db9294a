package io.reverb.spring.boot.springgrpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ForwardingServerBuilder;
import io.grpc.ManagedChannel;
import io.grpc.ServerBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.spring.boot.test.EchoReply;
import io.reverb.spring.boot.test.EchoRequest;
import io.reverb.spring.boot.test.GrpcEchoGrpc;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.grpc.client.GrpcChannelFactory;
import org.springframework.grpc.server.GrpcServerFactory;
import org.springframework.grpc.server.ServerBuilderCustomizer;
import org.springframework.grpc.server.lifecycle.GrpcServerLifecycle;

/**
 * Spring gRPC's {@code spring.grpc.server.*} keep-alive and inbound limits reach a server declared with
 * {@link ReverbSpringGrpcServerFactory} (Spring gRPC maps them onto its own servers only): each property to its builder
 * method, nothing for a property not set, a refused value named, and a limit that takes effect in a real context.
 */
class ReverbSpringGrpcServerPropertiesTest
{
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(ReverbSpringGrpcAutoConfiguration.class));

    /** Records the builder methods the properties call, and calls nothing else. */
    private static final class Recording extends ForwardingServerBuilder<Recording>
    {
        final List<String> calls = new ArrayList<>();
        private final ServerBuilder<?> delegate = ReverbServerBuilder.forAddress("inproc://recording");

        @Override
        protected ServerBuilder<?> delegate()
        {
            return delegate;
        }

        private Recording record(final String call)
        {
            calls.add(call);
            return this;
        }

        @Override
        public Recording keepAliveTime(final long time, final TimeUnit unit)
        {
            return record("keepAliveTime " + Duration.ofNanos(unit.toNanos(time)));
        }

        @Override
        public Recording keepAliveTimeout(final long time, final TimeUnit unit)
        {
            return record("keepAliveTimeout " + Duration.ofNanos(unit.toNanos(time)));
        }

        @Override
        public Recording maxConnectionIdle(final long time, final TimeUnit unit)
        {
            return record("maxConnectionIdle " + Duration.ofNanos(unit.toNanos(time)));
        }

        @Override
        public Recording maxConnectionAge(final long time, final TimeUnit unit)
        {
            return record("maxConnectionAge " + Duration.ofNanos(unit.toNanos(time)));
        }

        @Override
        public Recording maxConnectionAgeGrace(final long time, final TimeUnit unit)
        {
            return record("maxConnectionAgeGrace " + Duration.ofNanos(unit.toNanos(time)));
        }

        @Override
        public Recording permitKeepAliveTime(final long time, final TimeUnit unit)
        {
            return record("permitKeepAliveTime " + Duration.ofNanos(unit.toNanos(time)));
        }

        @Override
        public Recording permitKeepAliveWithoutCalls(final boolean permit)
        {
            return record("permitKeepAliveWithoutCalls " + permit);
        }

        @Override
        public Recording maxInboundMessageSize(final int bytes)
        {
            return record("maxInboundMessageSize " + bytes);
        }

        @Override
        public Recording maxInboundMetadataSize(final int bytes)
        {
            return record("maxInboundMetadataSize " + bytes);
        }
    }

    private static Binder binder(final Map<String, String> properties)
    {
        return new Binder(new MapConfigurationPropertySource(properties));
    }

    @Test
    void shouldCallTheBuilderMethodOfEachSpringGrpcServerPropertyThatIsSet()
    {
        final Recording builder = new Recording();
        ReverbSpringGrpcServerProperties.apply(binder(Map.of(
            "spring.grpc.server.keep-alive.time", "30s",
            "spring.grpc.server.keep-alive.timeout", "5s",
            "spring.grpc.server.keep-alive.max-idle", "10m",
            "spring.grpc.server.keep-alive.max-age", "1h",
            "spring.grpc.server.keep-alive.max-age-grace", "2m",
            "spring.grpc.server.keep-alive.permit-time", "45s",
            "spring.grpc.server.keep-alive.permit-without-calls", "true",
            "spring.grpc.server.max-inbound-message-size", "16MB",
            "spring.grpc.server.max-inbound-metadata-size", "4KB")), builder);
        assertThat(builder.calls).containsExactly(
            "keepAliveTime PT30S", "keepAliveTimeout PT5S", "maxConnectionIdle PT10M", "maxConnectionAge PT1H",
            "maxConnectionAgeGrace PT2M", "permitKeepAliveTime PT45S", "permitKeepAliveWithoutCalls true",
            "maxInboundMessageSize 16777216", "maxInboundMetadataSize 4096");
    }

    @Test
    void shouldLeaveEveryUnsetPropertyToReverbsDefault()
    {
        // Spring gRPC's own defaults would turn Reverb's PING policy on (permit-time 5m): nothing is applied unless set
        final Recording builder = new Recording();
        ReverbSpringGrpcServerProperties.apply(binder(Map.of("spring.grpc.server.port", "9090")), builder);
        assertThat(builder.calls).isEmpty();
        ReverbSpringGrpcServerProperties.apply(binder(Map.of("spring.grpc.server.keep-alive.max-idle", "1000d")), builder);
        assertThat(builder.calls).containsExactly("maxConnectionIdle PT24000H");
    }

    @Test
    void shouldNameThePropertyWhoseValueIsRefused()
    {
        final ReverbServerBuilder builder = ReverbServerBuilder.forAddress("inproc://refused");
        assertThatThrownBy(() -> ReverbSpringGrpcServerProperties.apply(
            binder(Map.of("spring.grpc.server.keep-alive.time", "0s")), builder))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("spring.grpc.server.keep-alive.time")
            .hasMessageContaining("keepAliveTime must be positive");
        assertThatThrownBy(() -> ReverbSpringGrpcServerProperties.apply(
            binder(Map.of("spring.grpc.server.max-inbound-message-size", "3GB")), builder))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("spring.grpc.server.max-inbound-message-size")
            .hasMessageContaining("at most 2147483647 bytes");
        assertThatThrownBy(() -> ReverbSpringGrpcServerProperties.apply(
            binder(Map.of("spring.grpc.server.keep-alive.timeout", "soon")), builder))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("spring.grpc.server.keep-alive.timeout");
    }

    private static final class Echo extends GrpcEchoGrpc.GrpcEchoImplBase
    {
        @Override
        public void echo(final EchoRequest request, final StreamObserver<EchoReply> responseObserver)
        {
            responseObserver.onNext(EchoReply.newBuilder().setText(request.getText()).build());
            responseObserver.onCompleted();
        }
    }

    /** A Spring gRPC server on Reverb declared as the factory's javadoc shows: with the context's customizers. */
    @Configuration(proxyBeanMethods = false)
    static class Server
    {
        @Bean
        GrpcServerFactory reverbGrpcServerFactory(
            final Environment environment, final ObjectProvider<ServerBuilderCustomizer<ReverbServerBuilder>> customizers)
        {
            final GrpcServerFactory factory = new ReverbSpringGrpcServerFactory(
                environment.getRequiredProperty("test.address"), customizers.orderedStream().toList());
            factory.addService(new Echo().bindService());
            return factory;
        }

        @Bean
        GrpcServerLifecycle reverbGrpcServerLifecycle(final GrpcServerFactory factory, final ApplicationEventPublisher events)
        {
            return new GrpcServerLifecycle(factory, Duration.ofSeconds(10), events);
        }
    }

    @Test
    void shouldApplySpringGrpcsInboundLimitToAReverbServerOfItsFactory()
    {
        final String address = "inproc://reverb-springgrpc-limits-" + ProcessHandle.current().pid();
        runner.withUserConfiguration(Server.class)
            .withPropertyValues("test.address=" + address, "spring.grpc.server.max-inbound-message-size=1KB",
                "spring.grpc.server.keep-alive.time=1000d")
            .run(context ->
            {
                assertThat(context).hasNotFailed();
                assertThat(context).hasSingleBean(ReverbSpringGrpcServerProperties.class);
                final ManagedChannel channel = context.getBean(GrpcChannelFactory.class).createChannel(address);
                final GrpcEchoGrpc.GrpcEchoBlockingStub stub =
                    GrpcEchoGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
                assertThat(stub.echo(EchoRequest.newBuilder().setText("small").build()).getText()).isEqualTo("small");
                final EchoRequest large = EchoRequest.newBuilder().setText("x".repeat(2048)).build();
                assertThatThrownBy(() -> stub.echo(large))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e ->
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED));
                // the connection is still good after the refusal
                assertThat(stub.echo(EchoRequest.newBuilder().setText("again").build()).getText()).isEqualTo("again");
            });
    }
}
