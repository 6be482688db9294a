package io.reverb.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.MeterRegistry;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.services.health.HealthCheckRequest;
import io.reverb.services.health.HealthCheckResponse.ServingStatus;
import io.reverb.spring.boot.test.EchoReply;
import io.reverb.spring.boot.test.EchoRequest;
import io.reverb.spring.boot.test.NativeEchoGrpc;
import io.reverb.spring.boot.test.NativeEchoRpc;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Real Spring Boot applications in two processes: {@link EchoServerApplication} (a native and a grpc-java service bean)
 * in a child JVM, {@link EchoClientApplication} (stubs injected by {@link ReverbClient}) in this one, over shm:// and
 * tcp://. Checks the calls each way (native and grpc-java stubs against native and grpc-java services), the health
 * service, the client's Micrometer meters and Actuator health contributor, and Spring's shutdown: graceful lets a call
 * in flight finish after SIGTERM, immediate cancels it. Run by both starters, each on its own Spring Boot line.
 */
class ReverbStarterCrossProcessTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final AtomicInteger NAMES = new AtomicInteger();

    private static String address(final String scheme)
    {
        return scheme.equals("shm") ?
            "shm://reverb-spring-test-" + ProcessHandle.current().pid() + "-" + NAMES.incrementAndGet() :
            "tcp://127.0.0.1:0";
    }

    private static ConfigurableApplicationContext client(final String serverAddress)
    {
        return new SpringApplicationBuilder(EchoClientApplication.class)
            .web(WebApplicationType.NONE)
            .properties("spring.main.banner-mode=off", "logging.level.root=WARN",
                "reverb.client.channels.echo.address=" + serverAddress,
                "reverb.client.channels.echo.default-deadline=30s")
            .run();
    }

    private static EchoRequest request(final String text)
    {
        return EchoRequest.newBuilder().setText(text).build();
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void shouldServeBeansToAnotherProcessAndLetACallInFlightFinishOnGracefulShutdown(final String scheme) throws Exception
    {
        try (ServerProcess server = new ServerProcess("--reverb.server.address=" + address(scheme)))
        {
            final String address = server.awaitLine("REVERB-ADDRESS ", TIMEOUT);
            assertThat(address).startsWith(scheme + "://").doesNotEndWith(":0");
            try (ConfigurableApplicationContext context = client(address))
            {
                final EchoClients clients = context.getBean(EchoClients.class);
                // native stub -> native service, and -> grpc-java service
                assertThat(clients.nativeEcho.echo(request("a")).block(TIMEOUT).getText()).isEqualTo("native:a");
                assertThat(clients.nativeStubOfGrpcService.echo(request("b")).block(TIMEOUT).getText()).isEqualTo("grpc:b");
                // grpc-java stub -> grpc-java service, and -> native service
                assertThat(clients.grpcEcho.echo(request("c")).getText()).isEqualTo("grpc:c");
                assertThat(NativeEchoGrpc.newBlockingStub(clients.grpcChannel).echo(request("d")).getText())
                    .isEqualTo("native:d");
                // health service served with the beans, every service SERVING
                assertThat(clients.health.check(HealthCheckRequest.getDefaultInstance()).block(TIMEOUT).getStatus())
                    .isEqualTo(ServingStatus.SERVING);
                assertThat(clients.health.check(HealthCheckRequest.newBuilder()
                    .setService(NativeEchoRpc.SERVICE_NAME).build()).block(TIMEOUT).getStatus())
                    .isEqualTo(ServingStatus.SERVING);
                assertThat(clients.health.check(HealthCheckRequest.newBuilder()
                    .setService("reverb.springtest.GrpcEcho").build()).block(TIMEOUT).getStatus())
                    .isEqualTo(ServingStatus.SERVING);
                // the context's MeterRegistry: Reverb's call metrics and the Observation timers
                final MeterRegistry meters = context.getBean(MeterRegistry.class);
                assertThat(meters.find("reverb.client.calls").timers()).isNotEmpty();
                assertThat(meters.find("rpc.client.duration").timers()).isNotEmpty();
                // Actuator's reverb contributor, registered by the starter's auto-configuration imports of this Boot line
                // (no server here: UP, with the channel's state as a detail)
                assertThat(BootHealth.indicatorStatus(context)).isEqualTo("UP");
                assertThat(BootHealth.indicatorDetails(context)).containsKey("channels");

                // graceful shutdown: SIGTERM while a call is in flight; the call is answered after shutdown began
                final CompletableFuture<EchoReply> slow = clients.nativeEcho.slow(request("e")).toFuture();
                server.awaitLine("SLOW-STARTED", TIMEOUT);
                server.terminate();
                server.awaitLine("NOT-SERVING", TIMEOUT);
                assertThat(slow).isNotDone();
                server.writeLine("release");
                assertThat(slow.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS).getText()).isEqualTo("slow:e");
                assertThat(server.awaitExit(TIMEOUT)).as("exit code after SIGTERM").isEqualTo(143);
                assertThatThrownBy(() -> clients.nativeEcho.echo(request("f")).block(TIMEOUT))
                    .satisfies(e -> assertThat(Status.fromThrowable(e).code()).isEqualTo(StatusCode.UNAVAILABLE));
                // GrpcEcho/Echo was called once by a native stub and once by a grpc-java stub: both observed (checked
                // here, long after those calls ended: an observation stops just after its caller has the answer)
                final long grpcEchoCalls = meters.find("rpc.client.duration")
                    .tag("rpc.service", "reverb.springtest.GrpcEcho").tag("rpc.method", "Echo").timers().stream()
                    .mapToLong(t -> t.count()).sum();
                assertThat(grpcEchoCalls).isEqualTo(2);
            }
        }
    }

    @Test
    void shouldCancelACallInFlightOnImmediateShutdown() throws Exception
    {
        try (ServerProcess server = new ServerProcess("--reverb.server.address=" + address("shm"), "--server.shutdown=immediate"))
        {
            final String address = server.awaitLine("REVERB-ADDRESS ", TIMEOUT);
            try (ConfigurableApplicationContext context = client(address))
            {
                final EchoClients clients = context.getBean(EchoClients.class);
                final CompletableFuture<EchoReply> slow = clients.nativeEcho.slow(request("x")).toFuture();
                server.awaitLine("SLOW-STARTED", TIMEOUT);
                server.terminate();
                assertThat(server.awaitExit(TIMEOUT)).isEqualTo(143);
                assertThatThrownBy(() -> slow.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .satisfies(e -> assertThat(Status.fromThrowable(e.getCause()).code()).isEqualTo(StatusCode.UNAVAILABLE));
            }
        }
    }
}
