package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.TestService;
import io.reverb.rpc.transport.TransportOptions;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/** Stream ids running out is back-pressure, not an error: the connection drains and the channel opens another. */
class StreamIdExhaustionTest
{
    @Test
    void shouldMoveToANewConnectionWhenStreamIdsRunOutWithoutFailingACall()
    {
        final String uri = "inproc://stream-ids-" + ProcessHandle.current().pid();
        final RpcServer server = RpcServer.builder(uri).addService(new TestService()).build().start();
        final SubchannelConnector channel = new SubchannelConnector(new ChannelConfig(uri, List.of(), null,
            RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE, null, Duration.ofSeconds(30), Duration.ofSeconds(10),
            Duration.ofMillis(100), Duration.ofSeconds(30), Schedulers.parallel(), TransportOptions.EMPTY));
        try
        {
            channel.lastStreamId = 7; // a connection carries 7 calls, then the next one takes over
            final CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(Duration.ofSeconds(20));
            for (int i = 0; i < 20; i++)
            {
                assertThat(channel.newUnaryCall(TestService.ECHO, options, StringValue.of("s" + i)).block())
                    .isEqualTo(StringValue.of("s" + i));
            }
            // and with many outstanding at once
            final List<StringValue> replies = Flux.range(0, 100)
                .flatMap(i -> channel.newUnaryCall(TestService.ECHO, options, StringValue.of("c" + i)), 100)
                .collectList().block(Duration.ofSeconds(30));
            assertThat(replies).hasSize(100);
        }
        finally
        {
            channel.close();
            server.shutdown(Duration.ZERO);
        }
    }

}
