package io.reverb.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.spring.boot.test.EchoReply;
import io.reverb.spring.boot.test.EchoRequest;
import io.reverb.spring.boot.test.GrpcEchoGrpc;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code reverb.client.channels.NAME.default-deadline} reaches grpc-java stubs too (it was set on the Reverb channel
 * only, and grpc-java's calls take their deadline from grpc-java's CallOptions: a stub without {@code withDeadline}
 * waited for ever on a server that never answers).
 */
class ReverbGrpcDefaultDeadlineTest
{
    @Test
    void shouldGiveGrpcJavaCallsTheChannelsDefaultDeadline() throws Exception
    {
        final String address = "inproc://grpc-default-deadline-" + System.nanoTime();
        final Server server = ReverbServerBuilder.forAddress(address).addService(new GrpcEchoGrpc.GrpcEchoImplBase()
        {
            @Override
            public void echo(final EchoRequest request, final StreamObserver<EchoReply> responses)
            {
                // never answers
            }
        }).build().start();
        final ReverbProperties.Client client = new ReverbProperties.Client();
        final ReverbProperties.Channel channel = new ReverbProperties.Channel();
        channel.setAddress(address + ",");
        channel.setDefaultDeadline(Duration.ofMillis(200));
        client.getChannels().put("echo", channel);
        final ReverbGrpcChannelFactory channels = new ReverbGrpcChannelFactory(new ReverbChannelFactory(client,
            List.of()), List.of());
        try
        {
            final long start = System.nanoTime();
            assertThatThrownBy(() -> GrpcEchoGrpc.newBlockingStub(channels.channel("echo"))
                .echo(EchoRequest.newBuilder().setText("x").build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class,
                    e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED));
            assertThat(System.nanoTime() - start).as("well before a test timeout").isLessThan(
                TimeUnit.SECONDS.toNanos(30));
            // a deadline the call sets itself wins
            assertThatThrownBy(() -> GrpcEchoGrpc.newBlockingStub(channels.channel("echo"))
                .withDeadlineAfter(50, TimeUnit.MILLISECONDS).echo(EchoRequest.newBuilder().setText("y").build()))
                .isInstanceOf(StatusRuntimeException.class);
        }
        finally
        {
            channels.destroy();
            server.shutdownNow();
            server.awaitTermination(10, TimeUnit.SECONDS);
        }
    }
}
