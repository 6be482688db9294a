package io.reverb.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.stub.StreamObserver;
import io.reverb.spring.boot.test.EchoReply;
import io.reverb.spring.boot.test.EchoRequest;
import io.reverb.spring.boot.test.GrpcEchoGrpc;
import io.reverb.spring.boot.test.NativeEchoRpc;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.concurrent.atomic.AtomicInteger;
import net.devh.boot.grpc.server.serverfactory.GrpcServerFactory;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.grpc.server.lifecycle.GrpcServerLifecycle;
import reactor.core.publisher.Mono;

/**
 * The starter's server next to another gRPC server of the same application, in real application contexts: Spring
 * gRPC's own server auto-configuration (its Netty server, grpc-netty-shaded) and, simulated by a bean of its factory
 * type, net.devh's. Each would serve every {@code BindableService} bean: the Reverb server leaves them to it unless
 * {@code reverb.server.grpc-services=true}, and a Reverb server given the other's port fails the context naming both
 * settings (it was "address in use" from whichever started second, with every grpc-java service served twice).
 */
class ReverbBesideSpringGrpcServerTest
{
    private static final AtomicInteger NAMES = new AtomicInteger();

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SpringGrpcAutoConfigurations.server()))
        .withConfiguration(AutoConfigurations.of(SslAutoConfiguration.class, ReverbAutoConfiguration.class))
        .withUserConfiguration(Services.class)
        .withPropertyValues("spring.grpc.server.host=127.0.0.1");

    private static String shm()
    {
        return "shm://reverb-beside-grpc-" + ProcessHandle.current().pid() + "-" + NAMES.incrementAndGet();
    }

    private static int freePort() throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress()))
        {
            return socket.getLocalPort();
        }
    }

    /** A native and a grpc-java service. */
    @Configuration(proxyBeanMethods = false)
    static class Services
    {
        @Bean
        NativeEchoRpc.NativeEchoImplBase nativeEcho()
        {
            return new NativeEchoRpc.NativeEchoImplBase()
            {
                @Override
                public Mono<EchoReply> echo(final EchoRequest request)
                {
                    return Mono.just(EchoReply.newBuilder().setText("native:" + request.getText()).build());
                }
            };
        }

        @Bean
        GrpcEchoGrpc.GrpcEchoImplBase grpcEcho()
        {
            return new GrpcEchoGrpc.GrpcEchoImplBase()
            {
                @Override
                public void echo(final EchoRequest request, final StreamObserver<EchoReply> responses)
                {
                    responses.onNext(EchoReply.newBuilder().setText("grpc:" + request.getText()).build());
                    responses.onCompleted();
                }
            };
        }
    }

    /** What net.devh's server auto-configuration declares (its factory type, here a stand-in of the same name). */
    @Configuration(proxyBeanMethods = false)
    static class NetDevhServer
    {
        @Bean
        GrpcServerFactory shadedNettyGrpcServerFactory()
        {
            return new GrpcServerFactory()
            {
            };
        }
    }

    @Test
    void shouldLeaveTheGrpcJavaServicesToSpringGrpcsServer()
    {
        runner.withPropertyValues("reverb.server.address=" + shm(), "spring.grpc.server.port=0").run(context ->
        {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(GrpcServerLifecycle.class).isRunning()).as("Spring gRPC's server").isTrue();
            final ReverbServerLifecycle reverb = context.getBean(ReverbServerLifecycle.class);
            assertThat(reverb.isRunning()).isTrue();
            assertThat(reverb.serviceNames()).containsExactly(NativeEchoRpc.SERVICE_NAME);
        });
    }

    @Test
    void shouldServeThemOnReverbTooWhenAsked()
    {
        runner.withPropertyValues("reverb.server.address=" + shm(), "spring.grpc.server.port=0",
            "reverb.server.grpc-services=true").run(context ->
            assertThat(context.getBean(ReverbServerLifecycle.class).serviceNames())
                .containsExactlyInAnyOrder(NativeEchoRpc.SERVICE_NAME, GrpcEchoGrpc.SERVICE_NAME));
    }

    @Test
    void shouldFailTheContextNamingBothSettingsWhenBothServersWouldTakeOnePort() throws IOException
    {
        final int port = freePort();
        runner.withPropertyValues("reverb.server.address=tcp://127.0.0.1:" + port, "spring.grpc.server.port=" + port)
            .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("reverb.server.address=tcp://127.0.0.1:" + port)
                .hasMessageContaining("spring.grpc.server.port=" + port)
                .hasMessageContaining("spring.grpc.server.enabled=false"));
    }

    @Test
    void shouldServeTheGrpcJavaServicesWhenSpringGrpcsServerIsOff()
    {
        runner.withPropertyValues("reverb.server.address=" + shm(), "spring.grpc.server.enabled=false").run(context ->
        {
            assertThat(context).doesNotHaveBean(GrpcServerLifecycle.class);
            assertThat(context.getBean(ReverbServerLifecycle.class).serviceNames())
                .containsExactlyInAnyOrder(NativeEchoRpc.SERVICE_NAME, GrpcEchoGrpc.SERVICE_NAME);
        });
    }

    @Test
    void shouldLeaveTheGrpcJavaServicesToNetDevhsServer() throws IOException
    {
        final ApplicationContextRunner netDevh = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ReverbAutoConfiguration.class))
            .withUserConfiguration(Services.class, NetDevhServer.class);
        netDevh.withPropertyValues("reverb.server.address=" + shm()).run(context ->
            assertThat(context.getBean(ReverbServerLifecycle.class).serviceNames())
                .containsExactly(NativeEchoRpc.SERVICE_NAME));
        final int port = freePort();
        netDevh.withPropertyValues("reverb.server.address=reverb://127.0.0.1:" + port, "grpc.server.port=" + port)
            .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
                .hasMessageContaining("grpc.server.port=" + port).hasMessageContaining("grpc.server.port=-1"));
    }
}
