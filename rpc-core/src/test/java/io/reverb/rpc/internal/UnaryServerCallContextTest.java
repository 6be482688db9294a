package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.TestService;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A bridge that reads only what a call needs from rpc-core's subscriber (its connection, deadline and metadata, as
 * reverb-grpc's server does for every grpc-java call) gets them without the call's {@link RpcContext} being made: one
 * object less per call. Asking for the context later still gives the same values. Single-threaded, no timing.
 */
class UnaryServerCallContextTest
{
    private final ClientTransportImpl channel = TestRuntimes.channel();

    @Test
    void shouldGiveTheConnectionDeadlineAndMetadataWithoutMakingTheContext()
    {
        final Seen seen = new Seen();
        final RecordingConnection serverSide = new RecordingConnection();
        final ServerWireConnection serverConnection = new ServerWireConnection(server(seen), serverSide);

        serverConnection.onMessage(serverSide, ByteBuffer.wrap(callAndRequest(null, null)));

        assertThat(serverSide.messages).hasSize(1);
        assertThat(RecordingConnection.frameTypes(serverSide.messages.get(0)))
            .containsExactly(FrameType.MESSAGE, FrameType.STATUS);
        assertThat(seen.call).as("the handler's response went to rpc-core's call").isNotNull();
        assertThat(seen.connection).isSameAs(serverConnection);
        assertThat(seen.deadline).isNull();
        assertThat(seen.metadata).isNull();
        assertThat(seen.call.hasContext()).as("no RpcContext made for a call whose handler never asked for it")
            .isFalse();
        // asked for after the end: made now, with the same values
        final RpcContext context = seen.call.rpcContext();
        assertThat(context.connection()).isSameAs(serverConnection);
        assertThat(context.deadline()).isNull();
    }

    @Test
    void shouldGiveTheClientsMetadataAndDeadlineWithoutMakingTheContext()
    {
        final Seen seen = new Seen();
        final RecordingConnection serverSide = new RecordingConnection();
        final ServerWireConnection serverConnection = new ServerWireConnection(server(seen), serverSide);
        final Metadata metadata = new Metadata();
        metadata.put(Metadata.Key.of("x-who", Metadata.ASCII_STRING_MARSHALLER), "me");

        serverConnection.onMessage(serverSide, ByteBuffer.wrap(callAndRequest(metadata,
            Deadline.after(1, TimeUnit.HOURS, Deadline.Ticker.SYSTEM))));

        assertThat(seen.metadata).isNotNull();
        assertThat(seen.metadata.get(Metadata.Key.of("x-who", Metadata.ASCII_STRING_MARSHALLER))).isEqualTo("me");
        assertThat(seen.deadline).isNotNull();
        assertThat(seen.deadline.timeRemainingNanos()).isPositive();
        assertThat(seen.call.hasContext()).isFalse();
        assertThat(seen.call.rpcContext().metadata()).isSameAs(seen.metadata);
        assertThat(seen.call.rpcContext().deadline()).isSameAs(seen.deadline);
    }

    @Test
    void shouldMakeTheContextForACompressionThatChangesSomething()
    {
        final Seen seen = new Seen();
        seen.compression = "gzip";
        final RecordingConnection serverSide = new RecordingConnection();
        final ServerWireConnection serverConnection = new ServerWireConnection(server(seen), serverSide);

        serverConnection.onMessage(serverSide, ByteBuffer.wrap(callAndRequest(null, null)));

        assertThat(seen.call.hasContext()).isTrue();
        assertThat(seen.call.rpcContext().responseCompression()).isEqualTo("gzip");
    }

    /** What the handler's publisher saw of the call through {@link RpcContext.Carrier}. */
    private static final class Seen
    {
        String compression = "identity";
        ServerCall<?, ?> call;
        Object connection;
        Deadline deadline;
        Metadata metadata;
    }

    private ServerRuntime server(final Seen seen)
    {
        final ServerCallHandler.Unary<StringValue, StringValue> handler =
            new ServerCallHandler.Unary<StringValue, StringValue>()
            {
                @Override
                public Publisher<StringValue> invoke(final StringValue request)
                {
                    return subscriber ->
                    {
                        final RpcContext.Carrier call = (RpcContext.Carrier)subscriber;
                        seen.call = (ServerCall<?, ?>)subscriber;
                        seen.connection = call.connection();
                        seen.deadline = call.deadline();
                        seen.metadata = call.requestMetadataIfAny();
                        call.responseCompression(seen.compression); // what grpc-java's server sets on every call
                        Mono.just(request).subscribe(subscriber);
                    };
                }

                @Override
                public Publisher<StringValue> handle(final Flux<StringValue> requests)
                {
                    return requests.single();
                }
            };
        final ServiceDefinition service = ServiceDefinition.builder(TestService.SERVICE)
            .addMethod(TestService.ECHO, handler).build();
        return new ServerRuntime(new ServerConfig("inproc://unused", List.of(service), List.of(), null,
            Schedulers.parallel(), RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE, null, Duration.ZERO,
            TransportOptions.EMPTY));
    }

    /** @return the CALL and MESSAGE of one echo call, in one transport message, as a client sends them. */
    private byte[] callAndRequest(final Metadata metadata, final Deadline deadline)
    {
        final RecordingConnection clientSide = new RecordingConnection();
        final ClientWireConnection client = new ClientWireConnection(channel, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
            ClientWireConnection.LAST_STREAM_ID);
        client.attach(clientSide);
        final UnaryClientCall<StringValue, StringValue> call = new UnaryClientCall<>(channel, TestService.ECHO,
            StringValue.of("hi"), null, metadata, deadline, false);
        call.actual = new Recorder<>();
        call.request(Long.MAX_VALUE);
        try
        {
            call.onConnection(client);
            assertThat(clientSide.messages).hasSize(1);
            return clientSide.messages.get(0);
        }
        finally
        {
            client.closeWithError(Status.UNAVAILABLE);
        }
    }
}
