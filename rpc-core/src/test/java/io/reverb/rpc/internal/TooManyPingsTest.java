package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.TestService;
import io.reverb.rpc.testing.Await;
import io.reverb.rpc.transport.TransportOptions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.scheduler.Schedulers;

/**
 * A client that a server closed with GOAWAY "too many pings" PINGs half as often on its next connections, as
 * grpc-java does (else it would be closed again and again): the server here refuses PINGs on a connection without
 * calls, and the client PINGs idle connections every 20 ms.
 */
class TooManyPingsTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    @Test
    void shouldDoubleTheKeepAliveIntervalEachTimeTheServerSaysTooManyPings()
    {
        final String uri = "inproc://too-many-pings-" + ProcessHandle.current().pid();
        final RpcServer server = RpcServer.builder(uri).addService(new TestService())
            .permitKeepAliveWithoutCalls(false).build().start();
        final SubchannelConnector channel = new SubchannelConnector(new ChannelConfig(uri, List.of(), null,
            RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE, null, Duration.ofMillis(20), Duration.ofSeconds(10), true, true,
            Duration.ofMillis(100), Duration.ofSeconds(30), Duration.ofSeconds(1), Schedulers.parallel(),
            TransportOptions.EMPTY));
        final AtomicInteger lost = new AtomicInteger();
        channel.onConnectionLost(lost::incrementAndGet);
        try
        {
            final CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(TIMEOUT);
            assertThat(channel.keepAliveNanos()).isEqualTo(Duration.ofMillis(20).toNanos());
            for (int round = 1; round <= 2; round++)
            {
                assertThat(channel.newUnaryCall(TestService.ECHO, options, StringValue.of("x")).block(TIMEOUT))
                    .isEqualTo(StringValue.of("x"));
                final int expected = round;
                // idle: the third idle PING strikes out, GOAWAY "too many pings", the connection closes
                Await.until("told off " + round + " time(s)", TIMEOUT, () -> lost.get() >= expected);
                Await.until("interval doubled", TIMEOUT,
                    () -> channel.keepAliveNanos() == Duration.ofMillis(20L << expected).toNanos());
            }
        }
        finally
        {
            channel.close();
            server.shutdown(Duration.ZERO);
        }
    }
}
