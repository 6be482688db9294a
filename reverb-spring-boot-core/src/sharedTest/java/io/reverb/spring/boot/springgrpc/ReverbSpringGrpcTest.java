package io.reverb.spring.boot.springgrpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.spring.boot.test.EchoReply;
import io.reverb.spring.boot.test.EchoRequest;
import io.reverb.spring.boot.test.GrpcEchoGrpc;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.support.StaticApplicationContext;
import org.springframework.core.env.Environment;
import org.springframework.grpc.client.ClientInterceptorsConfigurer;
import org.springframework.grpc.client.CompositeGrpcChannelFactory;
import org.springframework.grpc.client.DefaultGrpcChannelFactory;
import org.springframework.grpc.client.GlobalClientInterceptor;
import org.springframework.grpc.client.GrpcChannelFactory;
import org.springframework.grpc.client.VirtualTargets;
import org.springframework.grpc.server.GrpcServerFactory;
import org.springframework.grpc.server.ServerBuilderCustomizer;
import org.springframework.grpc.server.lifecycle.GrpcServerLifecycle;

/**
 * Spring gRPC's channel and server factories over Reverb, in real application contexts (no mocks): a grpc-java service
 * served by Spring gRPC's server (its factory and lifecycle) on {@code shm://}, called through Spring gRPC's
 * {@link GrpcChannelFactory#createChannel(String)} with its global interceptors applied.
 */
class ReverbSpringGrpcTest
{
    private static final AtomicInteger NAMES = new AtomicInteger();

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(ReverbSpringGrpcAutoConfiguration.class));

    private static String shm()
    {
        return "shm://reverb-springgrpc-" + ProcessHandle.current().pid() + "-" + NAMES.incrementAndGet();
    }

    private static final class Echo extends GrpcEchoGrpc.GrpcEchoImplBase
    {
        @Override
        public void echo(final EchoRequest request, final StreamObserver<EchoReply> responseObserver)
        {
            responseObserver.onNext(EchoReply.newBuilder().setText("spring-grpc:" + request.getText()).build());
            responseObserver.onCompleted();
        }
    }

    /** Counts the calls that pass Spring gRPC's global client interceptors. */
    static final class CountingInterceptor implements ClientInterceptor
    {
        final AtomicInteger calls = new AtomicInteger();

        @Override
        public <Q, R> ClientCall<Q, R> interceptCall(
            final MethodDescriptor<Q, R> method, final CallOptions options, final Channel next)
        {
            calls.incrementAndGet();
            return next.newCall(method, options);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Interceptors
    {
        @Bean
        @GlobalClientInterceptor
        CountingInterceptor countingInterceptor()
        {
            return new CountingInterceptor();
        }
    }

    /** Serves Echo with Spring gRPC's server factory API over Reverb; the caller stops it. */
    private static Server serve(final String address) throws Exception
    {
        final GrpcServerFactory factory = new ReverbSpringGrpcServerFactory(address, List.of());
        factory.addService(new Echo().bindService());
        return factory.createServer().start();
    }

    private static ReverbSpringGrpcChannelFactory standalone()
    {
        return new ReverbSpringGrpcChannelFactory(List.of(), new ClientInterceptorsConfigurer(new StaticApplicationContext()));
    }

    private static String echo(final ManagedChannel channel, final String text)
    {
        return GrpcEchoGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
            .echo(EchoRequest.newBuilder().setText(text).build()).getText();
    }

    /** Spring gRPC's server over Reverb, as an application declares it: the factory and its lifecycle. */
    @Configuration(proxyBeanMethods = false)
    static class SpringGrpcServer
    {
        final AtomicInteger customized = new AtomicInteger();

        @Bean
        GrpcServerFactory reverbGrpcServerFactory(final Environment environment)
        {
            final ServerBuilderCustomizer<ReverbServerBuilder> customizer = builder -> customized.incrementAndGet();
            final GrpcServerFactory factory =
                new ReverbSpringGrpcServerFactory(environment.getRequiredProperty("test.address"), List.of(customizer));
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
    void shouldCallASpringGrpcServerOnReverbThroughSpringGrpcsChannelFactory()
    {
        final String address = shm();
        final ManagedChannel[] made = new ManagedChannel[1];
        runner.withUserConfiguration(SpringGrpcServer.class, Interceptors.class)
            .withPropertyValues("test.address=" + address)
            .run(context ->
            {
                assertThat(context).hasNotFailed();
                assertThat(context.getBean(GrpcServerLifecycle.class).isRunning()).isTrue();
                assertThat(context.getBean(SpringGrpcServer.class).customized).hasValue(1);
                final GrpcChannelFactory channels = context.getBean(GrpcChannelFactory.class);
                assertThat(channels).isInstanceOf(ReverbSpringGrpcChannelFactory.class);
                assertThat(channels.supports(address)).isTrue();
                made[0] = channels.createChannel(address);
                assertThat(echo(made[0], "a")).isEqualTo("spring-grpc:a");
                assertThat(echo(made[0], "b")).isEqualTo("spring-grpc:b");
                assertThat(context.getBean(CountingInterceptor.class).calls).hasValue(2);
            });
        // Spring gRPC's factory shuts its channels down with the context
        assertThat(made[0].isShutdown()).isTrue();
    }

    @Test
    void shouldResolveSpringGrpcChannelNamesThatMapToReverbAddresses() throws Exception
    {
        final String address = shm();
        final Server server = serve(address);
        try
        {
            final VirtualTargets names = name -> "echo".equals(name) ? address : "static://" + name;
            runner.withBean(VirtualTargets.class, () -> names).run(context ->
            {
                final GrpcChannelFactory channels = context.getBean(GrpcChannelFactory.class);
                assertThat(channels.supports("echo")).isTrue();
                assertThat(channels.supports("other:9090")).isFalse();
                assertThat(echo(channels.createChannel("echo"), "n")).isEqualTo("spring-grpc:n");
            });
        }
        finally
        {
            server.shutdownNow().awaitTermination(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void shouldComeFirstInSpringGrpcsCompositeFactory() throws Exception
    {
        final String address = shm();
        final Server server = serve(address);
        try
        {
            // as Spring gRPC's composite auto-configuration does: every factory bean, in order; the default factory
            // (Netty's base class) says it supports any target that is not in-process, so order decides
            final ClientInterceptorsConfigurer none = new ClientInterceptorsConfigurer(new StaticApplicationContext());
            runner.withBean("nettyLike", DefaultGrpcChannelFactory.class, () -> new DefaultGrpcChannelFactory<>(List.of(), none))
                .run(context ->
                {
                    final List<GrpcChannelFactory> ordered =
                        context.getBeanProvider(GrpcChannelFactory.class).orderedStream().toList();
                    assertThat(ordered.get(0)).isInstanceOf(ReverbSpringGrpcChannelFactory.class);
                    final CompositeGrpcChannelFactory composite = new CompositeGrpcChannelFactory(ordered);
                    assertThat(echo(composite.createChannel(address), "c")).isEqualTo("spring-grpc:c");
                    assertThat(composite.supports("localhost:9090")).isTrue();
                });
        }
        finally
        {
            server.shutdownNow().awaitTermination(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void shouldTakeOnlyReverbSchemes()
    {
        final ReverbSpringGrpcChannelFactory factory = standalone();
        for (final String target : List.of("shm://a", "SHM://a", "tcp://h:1", "rdma://h:1", "reverb://h:1", "inproc://a"))
        {
            assertThat(factory.supports(target)).as(target).isTrue();
        }
        for (final String target : List.of("localhost:9090", "dns:///h:1", "static://h:1", "in-process:a", "shm://",
            "unix:///tmp/s", "xshm://a"))
        {
            assertThat(factory.supports(target)).as(target).isFalse();
        }
        assertThatThrownBy(() -> new ReverbSpringGrpcServerFactory("localhost:9090", List.of()))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a Reverb address: localhost:9090");
    }

    @Test
    void shouldRejectTlsCredentialsWithAClearError()
    {
        final ReverbSpringGrpcChannelFactory factory = standalone();
        factory.setCredentialsProvider(target -> TlsChannelCredentials.create());
        assertThatThrownBy(() -> factory.createChannel(shm()))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("grpc-java credentials do not apply to Reverb channels");
        factory.destroy();
    }

    @Test
    void shouldBackOffForAUserFactory()
    {
        final ReverbSpringGrpcChannelFactory mine = standalone();
        runner.withBean(ReverbSpringGrpcChannelFactory.class, () -> mine)
            .run(context -> assertThat(context.getBean(GrpcChannelFactory.class)).isSameAs(mine));
    }

    @Test
    void shouldTellWhatItSupportsWhenSpringGrpcsChannelPropertiesDoNotBind()
    {
        // a channel given a plain value where Spring gRPC expects its settings: asking about a name must not throw
        runner.withPropertyValues("spring.grpc.client.channels.bad=oops", "spring.grpc.client.channels.echo.address=x:1")
            .run(context ->
            {
                final ReverbSpringGrpcChannelFactory channels = context.getBean(ReverbSpringGrpcChannelFactory.class);
                assertThat(channels.supports("echo")).isFalse();
                assertThat(channels.supports("bad")).isFalse();
                assertThat(channels.supports("shm://direct")).isTrue();
            });
    }
}
