package io.reverb.examples.inference;

import io.reverb.examples.ExampleTransports;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.time.Duration;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class InferenceExampleTest
{
    @ParameterizedTest(name = "{0}")
    @MethodSource("io.reverb.examples.ExampleTransports#schemes")
    void shouldScoreFourMebibyteTensors(final String scheme) throws IOException
    {
        final String uri = ExampleTransports.uri(scheme, "inference");
        // over shm://, the client runs on an engine of the test's own, whose public counters show how requests travel
        try (RdmaEngine clientEngine = "shm".equals(scheme) ?
                RdmaEngine.open("shm", new EngineConfig().name("inference-client")) : null;
            RpcServer server = InferenceServer.start(uri);
            RpcChannel channel = clientEngine == null ? RpcChannel.builder(server.address()).build() :
                RpcChannel.builder(server.address()).transportOptions(EngineOptions.of(clientEngine)).build())
        {
            final int requests = 4;
            final long rendezvousBefore = clientEngine != null ? clientEngine.stats().rendezvousMessagesSent() : 0;

            final InferenceClient.Result result = InferenceClient.run(channel, requests);

            if (clientEngine != null)
            {
                assertThat(clientEngine.stats().rendezvousMessagesSent() - rendezvousBefore)
                    .as("4 MiB requests travel by rendezvous (RDMA WRITE), not as eager SENDs")
                    .isGreaterThanOrEqualTo(requests);
            }

            assertThat(InferenceClient.input(0).getData().size()).isEqualTo(4 * 1024 * 1024);
            assertThat(result.model()).startsWith(InferenceService.MODEL);
            assertThat(result.bestRows()).isEqualTo(IntStream.range(0, requests)
                .mapToObj(i -> InferenceClient.expectedBestRow(i)).collect(Collectors.toList()));
            assertThat(result.bytesSent()).isEqualTo(requests * 4L * 1024 * 1024);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("io.reverb.examples.ExampleTransports#schemes")
    void shouldRejectTensorWhoseDataDoesNotMatchItsShape(final String scheme)
    {
        final String uri = ExampleTransports.uri(scheme, "inference-invalid");
        try (RpcServer server = InferenceServer.start(uri);
            RpcChannel channel = RpcChannel.builder(server.address()).build())
        {
            final InferRequest request = InferRequest.newBuilder()
                .setInput(InferenceClient.input(0).toBuilder().setShape(0, 2048))
                .build();

            assertThatThrownBy(() -> InferenceServiceRpc.newReactorStub(channel).infer(request).block(Duration.ofSeconds(30)))
                .isInstanceOfSatisfying(RpcException.class,
                    error -> assertThat(error.status().code()).isEqualTo(StatusCode.INVALID_ARGUMENT));
        }
    }
}
