package io.reverb.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.services.health.HealthCheckResponse.ServingStatus;
import io.reverb.services.health.HealthStatusManager;
import io.reverb.spring.boot.health.ReverbHealthAutoConfiguration;
import io.reverb.spring.boot.test.EchoReply;
import io.reverb.spring.boot.test.EchoRequest;
import io.reverb.spring.boot.test.NativeEchoRpc;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import reactor.core.publisher.Mono;

/**
 * The auto-configuration in one JVM, with real application contexts (no mocks): which beans exist, what the settings
 * become, and what Actuator's health indicator reports as Reverb's health service changes. Shared by the Boot 4 and
 * Boot 3.5 starters: Actuator's types are reached through each starter's own {@link BootHealth}.
 */
class ReverbAutoConfigurationTest
{
    private static final AtomicInteger NAMES = new AtomicInteger();

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(ReverbAutoConfiguration.class, ReverbHealthAutoConfiguration.class));

    private static String shm()
    {
        return "shm://reverb-spring-unit-" + ProcessHandle.current().pid() + "-" + NAMES.incrementAndGet();
    }

    @Configuration(proxyBeanMethods = false)
    static class NativeEchoService
    {
        @Bean
        NativeEchoRpc.NativeEchoImplBase nativeEcho()
        {
            return new NativeEchoRpc.NativeEchoImplBase()
            {
                @Override
                public Mono<EchoReply> echo(final EchoRequest request)
                {
                    return Mono.just(EchoReply.newBuilder().setText("unit:" + request.getText()).build());
                }
            };
        }
    }

    static class ClientOfUnknownChannel
    {
        @ReverbClient("nowhere")
        NativeEchoRpc.NativeEchoReactorStub stub;
    }

    @Test
    void shouldStartNoServerWithoutServiceBeans()
    {
        runner.run(context ->
        {
            final ReverbServerLifecycle server = context.getBean(ReverbServerLifecycle.class);
            assertThat(server.hasServices()).isFalse();
            assertThat(server.isRunning()).isFalse();
            assertThat(server.address()).isNull();
            assertThat(BootHealth.indicatorStatus(context)).isEqualTo("UP");
        });
    }

    @Test
    void shouldServeAServiceBeanAndCallItThroughANamedChannel()
    {
        final String address = shm();
        runner.withUserConfiguration(NativeEchoService.class)
            .withPropertyValues("reverb.server.address=" + address, "reverb.client.channels.self.address=" + address)
            .run(context ->
            {
                final ReverbServerLifecycle server = context.getBean(ReverbServerLifecycle.class);
                assertThat(server.isRunning()).isTrue();
                assertThat(server.address()).isEqualTo(address);
                final NativeEchoRpc.NativeEchoReactorStub stub =
                    context.getBean(ReverbChannelFactory.class).stub("self", NativeEchoRpc::newReactorStub);
                assertThat(stub.echo(EchoRequest.newBuilder().setText("x").build()).block(Duration.ofSeconds(30)).getText())
                    .isEqualTo("unit:x");
            });
    }

    @Test
    void shouldReportTheHealthServiceToActuator()
    {
        final String address = shm();
        runner.withUserConfiguration(NativeEchoService.class)
            .withPropertyValues("reverb.server.address=" + address)
            .run(context ->
            {
                final HealthStatusManager health = context.getBean(HealthStatusManager.class);
                assertThat(BootHealth.indicatorStatus(context)).isEqualTo("UP");
                assertThat(BootHealth.indicatorDetails(context)).containsEntry("address", address)
                    .containsEntry("services", Map.of(NativeEchoRpc.SERVICE_NAME, "SERVING"));

                health.setStatus(NativeEchoRpc.SERVICE_NAME, ServingStatus.NOT_SERVING);
                assertThat(BootHealth.indicatorStatus(context)).isEqualTo("DOWN");
                assertThat(BootHealth.indicatorDetails(context))
                    .containsEntry("services", Map.of(NativeEchoRpc.SERVICE_NAME, "NOT_SERVING"));

                health.setStatus(NativeEchoRpc.SERVICE_NAME, ServingStatus.SERVING);
                assertThat(BootHealth.indicatorStatus(context)).isEqualTo("UP");

                context.getBean(ReverbServerLifecycle.class).stop();
                assertThat(BootHealth.indicatorStatus(context)).isEqualTo("DOWN");
                assertThat(BootHealth.indicatorDetails(context)).containsEntry("server", "not running");
                assertThat(health.status(NativeEchoRpc.SERVICE_NAME)).as("drained").isEqualTo(ServingStatus.NOT_SERVING);

                // started again (a lifecycle restart): its drain's terminal state must not outlive it
                context.getBean(ReverbServerLifecycle.class).start();
                assertThat(health.status(NativeEchoRpc.SERVICE_NAME)).isEqualTo(ServingStatus.SERVING);
                assertThat(health.status(HealthStatusManager.SERVICE_NAME_ALL_SERVICES)).isEqualTo(ServingStatus.SERVING);
                assertThat(BootHealth.indicatorStatus(context)).isEqualTo("UP");
            });
    }

    @Test
    void shouldShowTheHealthServiceInActuatorsHealthEndpoint()
    {
        final String address = shm();
        runner.withConfiguration(AutoConfigurations.of(BootHealth.endpointAutoConfigurations()))
            .withUserConfiguration(NativeEchoService.class)
            .withPropertyValues("reverb.server.address=" + address, "management.endpoint.health.show-details=always")
            .run(context ->
            {
                assertThat(BootHealth.endpointStatus(context, "reverb")).isEqualTo("UP");
                assertThat(BootHealth.endpointStatus(context, null)).isEqualTo("UP");

                context.getBean(HealthStatusManager.class).setStatus(
                    HealthStatusManager.SERVICE_NAME_ALL_SERVICES, ServingStatus.NOT_SERVING);
                assertThat(BootHealth.endpointStatus(context, "reverb")).isEqualTo("DOWN");
                assertThat(BootHealth.endpointStatus(context, null)).isEqualTo("DOWN");
            });
    }

    @Test
    void shouldTakeShutdownSettingsFromSpringBootUnlessSet()
    {
        runner.run(context ->
        {
            final ReverbServerLifecycle server = context.getBean(ReverbServerLifecycle.class);
            assertThat(server.shutdownMode()).isEqualTo(ReverbProperties.Shutdown.GRACEFUL);
            assertThat(server.gracePeriod()).isEqualTo(Duration.ofSeconds(30));
        });
        runner.withPropertyValues("server.shutdown=immediate", "spring.lifecycle.timeout-per-shutdown-phase=7s").run(context ->
        {
            final ReverbServerLifecycle server = context.getBean(ReverbServerLifecycle.class);
            assertThat(server.shutdownMode()).isEqualTo(ReverbProperties.Shutdown.IMMEDIATE);
            assertThat(server.gracePeriod()).isEqualTo(Duration.ofSeconds(7));
        });
        runner.withPropertyValues("server.shutdown=immediate", "reverb.server.shutdown=graceful",
            "reverb.server.shutdown-grace-period=3s").run(context ->
        {
            final ReverbServerLifecycle server = context.getBean(ReverbServerLifecycle.class);
            assertThat(server.shutdownMode()).isEqualTo(ReverbProperties.Shutdown.GRACEFUL);
            assertThat(server.gracePeriod()).isEqualTo(Duration.ofSeconds(3));
        });
    }

    @Test
    void shouldTurnPartsOffByProperty()
    {
        runner.withPropertyValues("reverb.server.enabled=false", "management.health.reverb.enabled=false").run(context ->
        {
            assertThat(context).doesNotHaveBean(ReverbServerLifecycle.class);
            assertThat(context).doesNotHaveBean("reverbHealthIndicator");
            assertThat(context).hasSingleBean(ReverbChannelFactory.class);
        });
    }

    @Test
    void shouldObserveGrpcJavaChannelsWithAGrpcJavaInterceptorUnlessObservationsAreOff()
    {
        // grpc-java's calls over Reverb never pass rpc-core's interceptors: their channels get a grpc-java one
        runner.withPropertyValues("reverb.server.enabled=false").run(context ->
            assertThat(context).hasBean("reverbGrpcChannelObservations").hasBean("reverbChannelObservations"));
        runner.withPropertyValues("reverb.server.enabled=false", "reverb.observations.enabled=false").run(context ->
            assertThat(context).doesNotHaveBean("reverbGrpcChannelObservations").doesNotHaveBean("reverbChannelObservations"));
    }

    @Test
    void shouldFailTheContextNamingThePropertyOfAnUnknownChannel()
    {
        runner.withBean(ClientOfUnknownChannel.class).run(context ->
            assertThat(context).hasFailed().getFailure()
                .rootCause().hasMessageContaining("reverb.client.channels.nowhere.address"));
    }

    @Test
    void shouldRejectAnAddressOfNoTransportAtStart()
    {
        runner.withUserConfiguration(NativeEchoService.class)
            .withPropertyValues("reverb.server.address=nosuch://x")
            .run(context -> assertThat(context).hasFailed().getFailure().hasStackTraceContaining("nosuch"));
    }
}
