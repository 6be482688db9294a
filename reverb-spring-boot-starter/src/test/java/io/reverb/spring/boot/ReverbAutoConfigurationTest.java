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
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.health.autoconfigure.actuate.endpoint.HealthEndpointAutoConfiguration;
import org.springframework.boot.health.autoconfigure.contributor.HealthContributorAutoConfiguration;
import org.springframework.boot.health.autoconfigure.registry.HealthContributorRegistryAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import reactor.core.publisher.Mono;

/**
 * The auto-configuration in one JVM, with real application contexts (no mocks): which beans exist, what the settings
 * become, and what Actuator's health indicator reports as Reverb's health service changes.
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
            assertThat(context.getBean("reverbHealthIndicator", HealthIndicator.class).health().getStatus())
                .isEqualTo(Status.UP);
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
                final HealthIndicator indicator = context.getBean("reverbHealthIndicator", HealthIndicator.class);
                final HealthStatusManager health = context.getBean(HealthStatusManager.class);
                Health report = indicator.health();
                assertThat(report.getStatus()).isEqualTo(Status.UP);
                assertThat(report.getDetails()).containsEntry("address", address)
                    .containsEntry("services", Map.of(NativeEchoRpc.SERVICE_NAME, "SERVING"));

                health.setStatus(NativeEchoRpc.SERVICE_NAME, ServingStatus.NOT_SERVING);
                report = indicator.health();
                assertThat(report.getStatus()).isEqualTo(Status.DOWN);
                assertThat(report.getDetails()).containsEntry("services", Map.of(NativeEchoRpc.SERVICE_NAME, "NOT_SERVING"));

                health.setStatus(NativeEchoRpc.SERVICE_NAME, ServingStatus.SERVING);
                assertThat(indicator.health().getStatus()).isEqualTo(Status.UP);

                context.getBean(ReverbServerLifecycle.class).stop();
                report = indicator.health();
                assertThat(report.getStatus()).isEqualTo(Status.DOWN);
                assertThat(report.getDetails()).containsEntry("server", "not running");
            });
    }

    @Test
    void shouldShowTheHealthServiceInActuatorsHealthEndpoint()
    {
        final String address = shm();
        runner.withConfiguration(AutoConfigurations.of(HealthContributorAutoConfiguration.class,
                HealthContributorRegistryAutoConfiguration.class, HealthEndpointAutoConfiguration.class))
            .withUserConfiguration(NativeEchoService.class)
            .withPropertyValues("reverb.server.address=" + address, "management.endpoint.health.show-details=always")
            .run(context ->
            {
                final HealthEndpoint endpoint = context.getBean(HealthEndpoint.class);
                assertThat(endpoint.healthForPath("reverb").getStatus()).isEqualTo(Status.UP);
                assertThat(endpoint.health().getStatus()).isEqualTo(Status.UP);

                context.getBean(HealthStatusManager.class).setStatus(
                    HealthStatusManager.SERVICE_NAME_ALL_SERVICES, ServingStatus.NOT_SERVING);
                assertThat(endpoint.healthForPath("reverb").getStatus()).isEqualTo(Status.DOWN);
                assertThat(endpoint.health().getStatus()).isEqualTo(Status.DOWN);
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
