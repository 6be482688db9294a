package io.reverb.examples.e2e;

import io.reverb.examples.ExampleTransports;
import io.reverb.examples.e2e.editions.RepeaterRpc;
import io.reverb.examples.e2e.editions.Word;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.publisher.Flux;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Stubs generated from an edition 2023 file.
 */
class EditionsEndToEndTest
{
    @ParameterizedTest(name = "{0}")
    @MethodSource("io.reverb.examples.ExampleTransports#schemes")
    void shouldServeServiceFromEditionsFile(final String scheme)
    {
        final String uri = ExampleTransports.uri(scheme, "editions");
        try (RpcServer server = RpcServer.builder(uri).addService(new RepeaterRpc.RepeaterImplBase()
            {
                @Override
                public Flux<Word> repeat(final Word request)
                {
                    return Flux.range(0, request.getRepeat()).map(i -> request);
                }
            }).build().start();
            RpcChannel channel = RpcChannel.builder(server.address()).build())
        {
            final Word word = Word.newBuilder().setText("again").setRepeat(3).build();

            assertThat(RepeaterRpc.newReactorStub(channel).repeat(word).map(Word::getText).collectList()
                .block(Duration.ofSeconds(10)))
                .containsExactly("again", "again", "again");
        }
    }
}
