package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/** A builder's settings are copied at build(): changing or reusing the builder never changes what it built. */
class BuilderReuseTest
{
    private static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void shouldNotChangeALiveChannelWhenItsBuilderIsChangedAndReused()
    {
        final String uri = "inproc://builder-reuse-channel-" + ProcessHandle.current().pid();
        final RpcServer server = RpcServer.builder(uri).addService(new TestService()).build().start();
        final RpcChannel.Builder builder = RpcChannel.builder(uri);
        final RpcChannel first = builder.build();
        // changed after build: a deadline no call can meet, and an interceptor that fails every call
        builder.defaultDeadline(Duration.ofNanos(1))
            .intercept(new ClientInterceptor()
            {
                @Override
                public <Req, Resp> Flux<Resp> interceptCall(final ClientCallContext context,
                    final Flux<Req> requests, final Next<Req, Resp> next)
                {
                    return Flux.error(Status.PERMISSION_DENIED.asException());
                }
            });
        final RpcChannel second = builder.build();
        try
        {
            assertThat(first.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("a")).block(WAIT))
                .isEqualTo(StringValue.of("a"));
            assertThatThrownBy(() -> second.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("b"))
                .block(WAIT))
                .isInstanceOf(RpcException.class)
                .satisfies(e -> assertThat(((RpcException)e).status().code())
                    .isIn(StatusCode.DEADLINE_EXCEEDED, StatusCode.PERMISSION_DENIED));
            // and the first channel still runs with its own settings
            assertThat(first.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("c")).block(WAIT))
                .isEqualTo(StringValue.of("c"));
        }
        finally
        {
            first.close();
            second.close();
            server.shutdown(Duration.ZERO);
        }
    }

    @Test
    void shouldNotChangeALiveServerWhenItsBuilderIsChanged()
    {
        final String uri = "inproc://builder-reuse-server-" + ProcessHandle.current().pid();
        final RpcServer.Builder builder = RpcServer.builder(uri).addService(new TestService());
        final RpcServer server = builder.build().start();
        builder.maxInboundMessageSize(1); // after build: must not shrink the running server's limit
        final RpcChannel channel = RpcChannel.builder(uri).build();
        try
        {
            final BytesValue payload = BytesValue.of(ByteString.copyFrom(new byte[1000]));
            assertThat(channel.newUnaryCall(TestService.SIZE, CallOptions.DEFAULT, payload).block(WAIT))
                .isEqualTo(Int32Value.of(1000));
        }
        finally
        {
            channel.close();
            server.shutdown(Duration.ZERO);
        }
    }
}
