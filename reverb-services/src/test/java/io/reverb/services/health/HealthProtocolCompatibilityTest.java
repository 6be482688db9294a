package io.reverb.services.health;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.health.HealthProtocol;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.services.health.HealthCheckResponse.ServingStatus;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * rpc-core watches health with well-known types ({@link HealthProtocol}); they must match the generated messages.
 */
class HealthProtocolCompatibilityTest
{
    @Test
    void shouldEncodeRequestsAndResponsesAlike() throws Exception
    {
        assertThat(HealthProtocol.request("a.B").toByteArray())
            .isEqualTo(HealthCheckRequest.newBuilder().setService("a.B").build().toByteArray());
        for (final ServingStatus status : new ServingStatus[] {
            ServingStatus.UNKNOWN, ServingStatus.SERVING, ServingStatus.NOT_SERVING, ServingStatus.SERVICE_UNKNOWN})
        {
            final byte[] bytes = HealthCheckResponse.newBuilder().setStatus(status).build().toByteArray();
            assertThat(Int32Value.parseFrom(bytes).getValue()).isEqualTo(status.getNumber());
        }
        assertThat(HealthProtocol.SERVING).isEqualTo(ServingStatus.SERVING_VALUE);
        assertThat(HealthProtocol.NOT_SERVING).isEqualTo(ServingStatus.NOT_SERVING_VALUE);
        assertThat(HealthProtocol.SERVICE_UNKNOWN).isEqualTo(ServingStatus.SERVICE_UNKNOWN_VALUE);
        assertThat(HealthProtocol.WATCH.fullMethodName()).isEqualTo(HealthRpc.METHOD_WATCH.fullMethodName());
    }

    @Test
    void shouldWatchTheGeneratedServiceThroughTheCoreDescriptor() throws InterruptedException
    {
        final HealthStatusManager health = new HealthStatusManager();
        final String uri = "inproc://health-compat";
        final RpcServer server = RpcServer.builder(uri).addService(health.healthService()).build().start();
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            StepVerifier.create(ClientCalls.serverStreaming(channel, HealthProtocol.WATCH,
                    CallOptions.DEFAULT, StringValue.of("")).map(Int32Value::getValue))
                .expectNext(HealthProtocol.SERVING)
                .then(health::enterTerminalState)
                .expectNext(HealthProtocol.NOT_SERVING)
                .thenCancel()
                .verify(Duration.ofSeconds(20));
        }
        finally
        {
            server.shutdown();
            assertThat(server.awaitTermination(Duration.ofSeconds(20))).isTrue();
        }
    }
}
