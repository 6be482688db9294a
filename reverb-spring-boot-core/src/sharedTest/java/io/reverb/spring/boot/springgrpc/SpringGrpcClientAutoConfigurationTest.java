package io.reverb.spring.boot.springgrpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.spring.boot.SpringGrpcAutoConfigurations;
import io.reverb.spring.boot.test.EchoReply;
import io.reverb.spring.boot.test.EchoRequest;
import io.reverb.spring.boot.test.GrpcEchoGrpc;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A Reverb channel made by Spring gRPC's own client auto-configuration (of the Spring gRPC of each Boot line: 0.12 for
 * Boot 3.5, 1.0 for Boot 4), as in an application with {@code spring-grpc-client-spring-boot-starter}: Spring gRPC's
 * channel properties customizer sets a load balancing
 * policy ({@code round_robin} by default) on every channel, which a Reverb address used to refuse
 * (IllegalStateException from grpc-java: a direct address takes no policy), and its
 * {@code spring.grpc.client.channels.NAME.*} settings reach the Reverb channel.
 */
class SpringGrpcClientAutoConfigurationTest
{

    /**
     * Spring gRPC applies its {@code GrpcChannelFactoryCustomizer} beans to every channel factory it makes: Reverb's
     * (a {@code DefaultGrpcChannelFactory} too) gets them as well.
     */
    @Test
    void shouldApplySpringGrpcsChannelFactoryCustomizersToTheReverbFactory()
    {
        final List<Object> customized = new CopyOnWriteArrayList<>();
        final Class<Object> type = SpringGrpcAutoConfigurations.channelFactoryCustomizer();
        new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SslAutoConfiguration.class, SpringGrpcAutoConfigurations.client(),
                ReverbSpringGrpcAutoConfiguration.class))
            .withBean("recordingFactoryCustomizer", type,
                () -> SpringGrpcAutoConfigurations.recordingCustomizer(type, customized))
            .run(context ->
            {
                assertThat(context).hasNotFailed();
                assertThat(customized).containsOnlyOnce(context.getBean(ReverbSpringGrpcChannelFactory.class));
            });
    }

    @Test
    void shouldMakeAReverbChannelWithSpringGrpcsChannelPropertiesApplied() throws Exception
    {
        final String address = "inproc://spring-grpc-client-" + ProcessHandle.current().pid();
        final AtomicReference<Deadline> deadline = new AtomicReference<>();
        final Server server = ReverbServerBuilder.forAddress(address).addService(new GrpcEchoGrpc.GrpcEchoImplBase()
        {
            @Override
            public void echo(final EchoRequest request, final StreamObserver<EchoReply> responseObserver)
            {
                deadline.set(Context.current().getDeadline());
                responseObserver.onNext(EchoReply.newBuilder().setText(request.getText()).build());
                responseObserver.onCompleted();
            }
        }).build().start();
        try
        {
            new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(SslAutoConfiguration.class, SpringGrpcAutoConfigurations.client(),
                    ReverbSpringGrpcAutoConfiguration.class))
                .withPropertyValues("spring.grpc.client.channels.echo.address=" + address,
                    "spring.grpc.client.channels.echo.default-deadline=7s",
                    "spring.grpc.client.channels.echo.max-inbound-message-size=1KB")
                .run(context ->
                {
                    assertThat(context).hasNotFailed();
                    final ReverbSpringGrpcChannelFactory channels = context.getBean(ReverbSpringGrpcChannelFactory.class);
                    assertThat(channels.supports("echo")).isTrue();
                    final ManagedChannel channel = channels.createChannel("echo");
                    final GrpcEchoGrpc.GrpcEchoBlockingStub stub = GrpcEchoGrpc.newBlockingStub(channel);
                    assertThat(stub.echo(EchoRequest.newBuilder().setText("a").build()).getText()).isEqualTo("a");
                    // the channel's default deadline reached the server's handler
                    assertThat(deadline.get()).isNotNull();
                    assertThat(deadline.get().timeRemaining(TimeUnit.MILLISECONDS)).isBetween(1L, 7_000L);
                    // the channel's inbound limit refuses a longer response
                    final EchoRequest large = EchoRequest.newBuilder().setText("x".repeat(2048)).build();
                    assertThatThrownBy(() -> stub.echo(large))
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e ->
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED));
                });
        }
        finally
        {
            server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        }
    }

    /**
     * Spring gRPC's channel properties strip {@code tcp:} (and {@code static:}) from a channel's address before they
     * hand it to a factory ({@code tcp://host:port} is {@code host:port} to them), so a channel configured with Reverb's
     * {@code tcp://} address went to Netty, which cannot speak to a Reverb server, while {@code createChannel("tcp://...")}
     * was Reverb's.
     */
    @Test
    void shouldMakeAReverbChannelForAChannelNameConfiguredWithReverbsTcpAddress() throws Exception
    {
        final Server server = ReverbServerBuilder.forAddress("tcp://127.0.0.1:0").addService(new GrpcEchoGrpc.GrpcEchoImplBase()
        {
            @Override
            public void echo(final EchoRequest request, final StreamObserver<EchoReply> responseObserver)
            {
                responseObserver.onNext(EchoReply.newBuilder().setText("tcp:" + request.getText()).build());
                responseObserver.onCompleted();
            }
        }).build().start();
        try
        {
            final String address = "tcp://127.0.0.1:" + server.getPort();
            new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(SslAutoConfiguration.class, SpringGrpcAutoConfigurations.client(),
                    ReverbSpringGrpcAutoConfiguration.class))
                .withPropertyValues("spring.grpc.client.channels.echo.address=" + address,
                    "spring.grpc.client.default-channel.address=" + address)
                .run(context ->
                {
                    assertThat(context).hasNotFailed();
                    final ReverbSpringGrpcChannelFactory channels = context.getBean(ReverbSpringGrpcChannelFactory.class);
                    for (final String name : new String[] {"echo", "default", address})
                    {
                        assertThat(channels.supports(name)).as(name).isTrue();
                        final ManagedChannel channel = channels.createChannel(name);
                        assertThat(GrpcEchoGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
                            .echo(EchoRequest.newBuilder().setText(name).build()).getText()).isEqualTo("tcp:" + name);
                    }
                    // Spring gRPC's own forms stay Spring gRPC's
                    assertThat(channels.supports("static://127.0.0.1:" + server.getPort())).isFalse();
                    assertThat(channels.supports("127.0.0.1:" + server.getPort())).isFalse();
                });
        }
        finally
        {
            server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        }
    }
}
