package io.reverb.examples.inference;

import io.reverb.examples.ExampleTransports;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class InferenceExampleTest
{
    @ParameterizedTest(name = "{0}")
    @MethodSource("io.reverb.examples.ExampleTransports#schemes")
    void shouldScoreFourMebibyteTensors(final String scheme)
    {
        final String uri = ExampleTransports.uri(scheme, "inference");
        try (RpcServer server = InferenceServer.start(uri);
            RpcChannel channel = RpcChannel.builder(server.address()).build())
        {
            final int requests = 4;
            final InferenceClient.Result result = InferenceClient.run(channel, requests);

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
