package io.reverb.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rpc.RpcServer;
import io.reverb.services.health.HealthCheckResponse.ServingStatus;
import io.reverb.services.health.HealthStatusManager;
import io.reverb.spring.boot.health.ReverbHealthAutoConfiguration;
import io.reverb.spring.boot.test.EchoReply;
import io.reverb.spring.boot.test.EchoRequest;
import io.reverb.spring.boot.test.NativeEchoRpc;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.autoconfigure.availability.ApplicationAvailabilityAutoConfiguration;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.event.ContextRefreshedEvent;
import org.springframework.context.event.EventListener;
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

    /** Fails the refresh after the lifecycles started (the Reverb server is listening by then). */
    static class FailsOnceRefreshed
    {
        @EventListener(ContextRefreshedEvent.class)
        void fail()
        {
            throw new IllegalStateException("a refreshed-event listener failed");
        }
    }

    static class StartedEvents
    {
        final List<ReverbServerStartedEvent> received = new CopyOnWriteArrayList<>();

        @EventListener
        void onStarted(final ReverbServerStartedEvent event)
        {
            received.add(event);
        }
    }

    private static int freePort() throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress()))
        {
            return socket.getLocalPort();
        }
    }

    private static Set<Thread> awaitThreads()
    {
        return Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.isAlive() && "reverb-server-await".equals(t.getName())).collect(Collectors.toSet());
    }

    /** Binds the port, retrying for a while: the server closes its listener at once, the kernel may lag a little. */
    private static boolean bindable(final int port) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true)
        {
            try (ServerSocket socket = new ServerSocket(port, 50, InetAddress.getLoopbackAddress()))
            {
                return true;
            }
            catch (final IOException e)
            {
                if (System.nanoTime() > deadline)
                {
                    return false;
                }
                Thread.sleep(50);
            }
        }
    }

    /** An application that makes its own server. */
    @Configuration(proxyBeanMethods = false)
    static class OwnRpcServer
    {
        @Bean
        RpcServer ownServer()
        {
            return RpcServer.builder(shm()).build();
        }
    }

    /** A Spring Boot application (without a web server) with Spring Boot's availability and Reverb. */
    @Configuration(proxyBeanMethods = false)
    @ImportAutoConfiguration({ApplicationAvailabilityAutoConfiguration.class, ReverbAutoConfiguration.class})
    @Import(NativeEchoService.class)
    static class AvailabilityApplication
    {
        /** The whole server's status as the ApplicationRunners see it. */
        final List<ServingStatus> seenByRunner = new CopyOnWriteArrayList<>();

        @Bean
        ApplicationRunner healthProbe(final HealthStatusManager health)
        {
            return args -> seenByRunner.add(health.status(HealthStatusManager.SERVICE_NAME_ALL_SERVICES));
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
    void shouldBackOffWhenTheApplicationHasItsOwnRpcServer()
    {
        runner.withUserConfiguration(NativeEchoService.class, OwnRpcServer.class)
            .withPropertyValues("reverb.server.address=" + shm())
            .run(context ->
            {
                assertThat(context).hasNotFailed().hasSingleBean(RpcServer.class);
                assertThat(context).doesNotHaveBean(ReverbServerLifecycle.class);
                assertThat(BootHealth.indicatorStatus(context)).isEqualTo("UP");
            });
    }

    @Test
    void shouldKeepTheWholeServerNotServingUntilTheApplicationAcceptsTraffic()
    {
        runner.withConfiguration(AutoConfigurations.of(ApplicationAvailabilityAutoConfiguration.class))
            .withUserConfiguration(NativeEchoService.class)
            .withPropertyValues("reverb.server.address=" + shm())
            .run(context ->
            {
                final HealthStatusManager health = context.getBean(HealthStatusManager.class);
                assertThat(context.getBean(ReverbServerLifecycle.class).isRunning()).isTrue();
                assertThat(health.status(HealthStatusManager.SERVICE_NAME_ALL_SERVICES)).isEqualTo(ServingStatus.NOT_SERVING);
                assertThat(health.status(NativeEchoRpc.SERVICE_NAME)).as("a service, once bound")
                    .isEqualTo(ServingStatus.SERVING);
                assertThat(BootHealth.indicatorStatus(context)).isEqualTo("DOWN");

                AvailabilityChangeEvent.publish(context, ReadinessState.ACCEPTING_TRAFFIC);
                assertThat(health.status(HealthStatusManager.SERVICE_NAME_ALL_SERVICES)).isEqualTo(ServingStatus.SERVING);
                assertThat(BootHealth.indicatorStatus(context)).isEqualTo("UP");

                // restarted while ready: serving at once
                context.getBean(ReverbServerLifecycle.class).stop();
                context.getBean(ReverbServerLifecycle.class).start();
                assertThat(health.status(HealthStatusManager.SERVICE_NAME_ALL_SERVICES)).isEqualTo(ServingStatus.SERVING);

                AvailabilityChangeEvent.publish(context, ReadinessState.REFUSING_TRAFFIC);
                assertThat(health.status(HealthStatusManager.SERVICE_NAME_ALL_SERVICES)).isEqualTo(ServingStatus.NOT_SERVING);
            });
    }

    @Test
    void shouldReportTheWholeServerServingOnlyOnceTheApplicationRunnersHaveRun()
    {
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(AvailabilityApplication.class)
            .web(WebApplicationType.NONE)
            .properties("spring.main.banner-mode=off", "logging.level.root=WARN", "reverb.server.address=" + shm())
            .run())
        {
            assertThat(context.getBean(AvailabilityApplication.class).seenByRunner).containsExactly(ServingStatus.NOT_SERVING);
            assertThat(context.getBean(HealthStatusManager.class).status(HealthStatusManager.SERVICE_NAME_ALL_SERVICES))
                .isEqualTo(ServingStatus.SERVING);
        }
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

    @Test
    void shouldCloseTheServerWhenTheRefreshFailsAfterItStarted() throws Exception
    {
        final int port = freePort();
        final Set<Thread> before = awaitThreads();
        runner.withUserConfiguration(NativeEchoService.class).withBean(FailsOnceRefreshed.class)
            .withPropertyValues("reverb.server.address=tcp://127.0.0.1:" + port)
            .run(context -> assertThat(context).hasFailed().getFailure()
                .hasStackTraceContaining("a refreshed-event listener failed"));

        // Spring 6.2 destroys the beans of a failed refresh but stops no lifecycle, and the failed context's close()
        // does nothing: the server's bean must close it, or it keeps the port and (its await thread) the JVM
        assertThat(bindable(port)).as("port %d free again", port).isTrue();
        final Set<Thread> left = awaitThreads();
        left.removeAll(before);
        for (final Thread thread : left)
        {
            thread.join(10_000);
        }
        assertThat(left).as("reverb-server-await threads of the failed context").noneMatch(Thread::isAlive);
    }

    @Test
    void shouldPublishTheBoundPortInTheEnvironmentAndAsAnEvent()
    {
        runner.withUserConfiguration(NativeEchoService.class).withBean(StartedEvents.class)
            .withPropertyValues("reverb.server.address=tcp://127.0.0.1:0")
            .run(context ->
            {
                final String address = context.getBean(ReverbServerLifecycle.class).address();
                final int port = URI.create(address).getPort();
                assertThat(port).as(address).isPositive();
                assertThat(context.getEnvironment().getProperty("local.reverb.port", Integer.class)).isEqualTo(port);
                assertThat(context.getEnvironment().getProperty("local.reverb.address")).isEqualTo(address);
                assertThat(context.getEnvironment().getPropertySources().contains("reverb.server.ports")).isTrue();
                final List<ReverbServerStartedEvent> events = context.getBean(StartedEvents.class).received;
                assertThat(events).hasSize(1);
                assertThat(events.get(0).getAddress()).isEqualTo(address);
                assertThat(events.get(0).getPort()).isEqualTo(port);
                assertThat(events.get(0).getServer()).isSameAs(context.getBean(ReverbServerLifecycle.class));
            });
    }

    @Test
    void shouldPublishAnAddressWithoutAPortAsSuch()
    {
        final String address = shm();
        runner.withUserConfiguration(NativeEchoService.class).withBean(StartedEvents.class)
            .withPropertyValues("reverb.server.address=" + address)
            .run(context ->
            {
                assertThat(context.getEnvironment().getProperty("local.reverb.address")).isEqualTo(address);
                assertThat(context.getEnvironment().containsProperty("local.reverb.port")).isFalse();
                final List<ReverbServerStartedEvent> events = context.getBean(StartedEvents.class).received;
                assertThat(events).hasSize(1);
                assertThat(events.get(0).getAddress()).isEqualTo(address);
                assertThat(events.get(0).getPort()).isEqualTo(-1);
            });
    }

    /** Captures the server's builder after the properties were applied. */
    static class CapturedBuilder
    {
        final AtomicReference<RpcServer.Builder> builder = new AtomicReference<>();

        @Bean
        ReverbServerCustomizer capture()
        {
            return builder::set;
        }
    }

    @Test
    void shouldApplyTheServersKeepAliveAndConnectionLifetimes()
    {
        runner.withUserConfiguration(NativeEchoService.class, CapturedBuilder.class)
            .withPropertyValues("reverb.server.address=" + shm(), "reverb.server.keep-alive-time=5m",
                "reverb.server.keep-alive-timeout=7s", "reverb.server.max-connection-idle=1m",
                "reverb.server.max-connection-age=10m", "reverb.server.max-connection-age-grace=30s")
            .run(context ->
            {
                final RpcServer.Builder b = context.getBean(CapturedBuilder.class).builder.get();
                assertThat(b.keepAliveTimeNanos()).isEqualTo(Duration.ofMinutes(5).toNanos());
                assertThat(b.keepAliveTimeoutNanos()).isEqualTo(Duration.ofSeconds(7).toNanos());
                assertThat(b.maxConnectionIdleNanos()).isEqualTo(Duration.ofMinutes(1).toNanos());
                assertThat(b.maxConnectionAgeNanos()).isEqualTo(Duration.ofMinutes(10).toNanos());
                assertThat(b.maxConnectionAgeGraceNanos()).isEqualTo(Duration.ofSeconds(30).toNanos());
            });
        runner.withUserConfiguration(NativeEchoService.class, CapturedBuilder.class)
            .withPropertyValues("reverb.server.address=" + shm(), "reverb.server.keep-alive-timeout=3s")
            .run(context ->
            {
                final RpcServer.Builder b = context.getBean(CapturedBuilder.class).builder.get();
                assertThat(b.keepAliveTimeNanos()).as("the default").isEqualTo(Duration.ofHours(2).toNanos());
                assertThat(b.keepAliveTimeoutNanos()).isEqualTo(Duration.ofSeconds(3).toNanos());
                assertThat(b.maxConnectionIdleNanos()).as("off").isEqualTo(Long.MAX_VALUE);
            });
        runner.withUserConfiguration(NativeEchoService.class)
            .withPropertyValues("reverb.server.address=" + shm(), "reverb.server.max-connection-idle=0s")
            .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reverb.server.max-connection-idle=PT0S"));
    }

    @Test
    void shouldFailTheContextNamingAServerSettingOutOfRange()
    {
        runner.withUserConfiguration(NativeEchoService.class)
            .withPropertyValues("reverb.server.address=" + shm(), "reverb.server.max-inbound-message-size=3GB")
            .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reverb.server.max-inbound-message-size=3221225472B"));
        runner.withUserConfiguration(NativeEchoService.class)
            .withPropertyValues("reverb.server.address=" + shm(), "reverb.server.shutdown-grace-period=-1s")
            .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reverb.server.shutdown-grace-period=PT-1S"));
    }

    @Test
    void shouldFailTheContextNamingAChannelSettingOutOfRange()
    {
        runner.withPropertyValues("reverb.server.enabled=false", "reverb.client.channels.echo.address=" + shm(),
            "reverb.client.channels.echo.default-deadline=0s").run(context ->
            assertThat(context).hasFailed().getFailure().rootCause().isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reverb.client.channels.echo.default-deadline=PT0S"));
        runner.withPropertyValues("reverb.server.enabled=false", "reverb.client.channels.echo.address=" + shm(),
            "reverb.client.channels.echo.max-inbound-message-size=4GB").run(context ->
            assertThat(context).hasFailed().getFailure().rootCause().isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reverb.client.channels.echo.max-inbound-message-size=4294967296B"));
    }
}
