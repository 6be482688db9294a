package io.reverb.spring.boot.springgrpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.ReverbChannelBuilder;
import io.reverb.spring.boot.ReverbAutoConfiguration;
import io.reverb.spring.boot.SpringGrpcAutoConfigurations;
import io.reverb.spring.boot.test.EchoReply;
import io.reverb.spring.boot.test.EchoRequest;
import io.reverb.spring.boot.test.GrpcEchoGrpc;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.grpc.server.GlobalServerInterceptor;
import org.springframework.grpc.server.GrpcServerFactory;
import org.springframework.grpc.server.lifecycle.GrpcServerLifecycle;

/**
 * Spring gRPC's server auto-configuration (of each Boot line's Spring gRPC) with {@code spring.grpc.server.address} set
 * to a Reverb address: the server it makes listens on Reverb, with Spring gRPC's services, global interceptors and
 * server properties, and stops with the context. Before {@link ReverbSpringGrpcServerAutoConfiguration}, Spring gRPC
 * handed that address to its Netty factory. Other addresses, a server turned off, and a factory of the application's
 * are left as they were.
 */
class ReverbSpringGrpcServerAutoConfigurationTest
{
    private static final AtomicInteger NAMES = new AtomicInteger();

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SpringGrpcAutoConfigurations.server()))
        .withConfiguration(AutoConfigurations.of(SslAutoConfiguration.class, ReverbAutoConfiguration.class,
            ReverbSpringGrpcAutoConfiguration.class, ReverbSpringGrpcServerAutoConfiguration.class))
        .withUserConfiguration(Services.class);

    private static String shm()
    {
        return "shm://reverb-springgrpc-server-" + ProcessHandle.current().pid() + "-" + NAMES.incrementAndGet();
    }

    /** An application's grpc-java service and a global server interceptor that counts the calls through it. */
    @Configuration(proxyBeanMethods = false)
    static class Services
    {
        @Bean
        GrpcEchoGrpc.GrpcEchoImplBase echoService()
        {
            return new GrpcEchoGrpc.GrpcEchoImplBase()
            {
                @Override
                public void echo(final EchoRequest request, final StreamObserver<EchoReply> responseObserver)
                {
                    responseObserver.onNext(EchoReply.newBuilder().setText("spring-grpc:" + request.getText()).build());
                    responseObserver.onCompleted();
                }
            };
        }

        @Bean
        @GlobalServerInterceptor
        CountingServerInterceptor countingServerInterceptor()
        {
            return new CountingServerInterceptor();
        }
    }

    static final class CountingServerInterceptor implements ServerInterceptor
    {
        final AtomicInteger calls = new AtomicInteger();

        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(
            final ServerCall<Q, R> call, final Metadata headers, final ServerCallHandler<Q, R> next)
        {
            calls.incrementAndGet();
            return next.startCall(call, headers);
        }
    }

    private static String echo(final ManagedChannel channel, final String text)
    {
        return GrpcEchoGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
            .echo(EchoRequest.newBuilder().setText(text).build()).getText();
    }

    private static void close(final ManagedChannel channel) throws InterruptedException
    {
        channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }

    @Test
    void shouldServeSpringGrpcsServicesOnAReverbServerAddress() throws Exception
    {
        final String address = shm();
        final ManagedChannel channel = ReverbChannelBuilder.forTarget(address).build();
        try
        {
            runner.withPropertyValues("spring.grpc.server.address=" + address,
                    "spring.grpc.server.shutdown-grace-period=2s")
                .run(context ->
                {
                    assertThat(context).hasNotFailed();
                    // Spring gRPC's Netty factory backed off: the one server factory is Reverb's
                    assertThat(context.getBeansOfType(GrpcServerFactory.class).values())
                        .singleElement().isInstanceOf(ReverbSpringGrpcServerFactory.class);
                    assertThat(context.getBeansOfType(GrpcServerLifecycle.class).values()).singleElement()
                        .satisfies(lifecycle -> assertThat(lifecycle.isRunning()).isTrue());
                    assertThat(echo(channel, "a")).isEqualTo("spring-grpc:a");
                    assertThat(echo(channel, "b")).isEqualTo("spring-grpc:b");
                    // configured by Spring gRPC's service configurer: its global interceptors apply
                    assertThat(context.getBean(CountingServerInterceptor.class).calls).hasValue(2);
                });
            // stopped with the context: the address serves nothing any more
            assertThatThrownBy(() -> echo(channel, "c")).isInstanceOfSatisfying(StatusRuntimeException.class,
                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE));
        }
        finally
        {
            close(channel);
        }
    }

    /**
     * Spring gRPC applies its {@code GrpcServerFactoryCustomizer} beans to every server factory it makes (Netty, shaded
     * Netty, in-process): the Reverb one gets them too.
     */
    @Test
    void shouldApplySpringGrpcsServerFactoryCustomizersToTheReverbFactory()
    {
        final List<Object> customized = new CopyOnWriteArrayList<>();
        final Class<Object> type = SpringGrpcAutoConfigurations.serverFactoryCustomizer();
        runner.withPropertyValues("spring.grpc.server.address=" + shm())
            .withBean("recordingFactoryCustomizer", type,
                () -> SpringGrpcAutoConfigurations.recordingCustomizer(type, customized))
            .run(context ->
            {
                assertThat(context).hasNotFailed();
                assertThat(customized).singleElement().isSameAs(context.getBean(ReverbSpringGrpcServerFactory.class));
            });
    }

    @Test
    void shouldReportTheTcpPortItListensOnAsSpringGrpcsServersDo()
    {
        runner.withPropertyValues("spring.grpc.server.address=tcp://127.0.0.1:0")
            .run(context ->
            {
                assertThat(context).hasNotFailed();
                final int port = context.getBean(GrpcServerLifecycle.class).getPort();
                assertThat(port).isPositive();
                final ManagedChannel channel = ReverbChannelBuilder.forTarget("tcp://127.0.0.1:" + port).build();
                try
                {
                    assertThat(echo(channel, "t")).isEqualTo("spring-grpc:t");
                }
                finally
                {
                    close(channel);
                }
            });
    }

    @Test
    void shouldApplySpringGrpcsServerPropertiesToTheReverbServer() throws Exception
    {
        final String address = shm();
        final ManagedChannel channel = ReverbChannelBuilder.forTarget(address).build();
        try
        {
            runner.withPropertyValues("spring.grpc.server.address=" + address,
                    "spring.grpc.server.max-inbound-message-size=1KB")
                .run(context ->
                {
                    assertThat(context).hasNotFailed();
                    assertThat(echo(channel, "small")).isEqualTo("spring-grpc:small");
                    assertThatThrownBy(() -> echo(channel, "x".repeat(2048)))
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e ->
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED));
                });
        }
        finally
        {
            close(channel);
        }
    }

    @Test
    void shouldLeaveOtherAddressesToSpringGrpcsOwnServer()
    {
        runner.withPropertyValues("spring.grpc.server.address=127.0.0.1:0")
            .run(context ->
            {
                assertThat(context).hasNotFailed();
                assertThat(context).doesNotHaveBean(ReverbSpringGrpcServerFactory.class);
                assertThat(context.getBeansOfType(GrpcServerFactory.class).values()).singleElement()
                    .satisfies(factory -> assertThat(factory.getClass().getSimpleName()).contains("Netty"));
            });
    }

    @Test
    void shouldMakeNoServerWhenSpringGrpcsServerIsOff()
    {
        runner.withPropertyValues("spring.grpc.server.address=" + shm(), "spring.grpc.server.enabled=false")
            .run(context ->
            {
                assertThat(context).hasNotFailed();
                assertThat(context).doesNotHaveBean(GrpcServerFactory.class);
                assertThat(context).doesNotHaveBean(GrpcServerLifecycle.class);
            });
    }

    @Test
    void shouldBackOffBeforeTheApplicationsOwnFactory()
    {
        final String address = shm();
        runner.withPropertyValues("spring.grpc.server.address=" + shm())
            .withBean("ownFactory", GrpcServerFactory.class, () -> new ReverbSpringGrpcServerFactory(address, List.of()))
            .run(context ->
            {
                assertThat(context).hasNotFailed();
                assertThat(context.getBeansOfType(GrpcServerFactory.class)).containsOnlyKeys("ownFactory");
                assertThat(context).doesNotHaveBean("reverbSpringGrpcServerLifecycle");
            });
    }
}
