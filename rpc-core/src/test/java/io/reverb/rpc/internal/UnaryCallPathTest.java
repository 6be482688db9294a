package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.BytesValue;
import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.wire.FrameHeaderFlyweight;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * One unary call driven by hand through a client and a server connection over a recording transport: which frames
 * travel in how many transport messages, and which monitors the writing thread holds when it claims (no call's
 * monitor, no connection monitor besides the write lock); and how a call ends when its response marshaller fails or
 * returns null. Single-threaded and counted, not timed.
 */
class UnaryCallPathTest
{
    private final RecordingConnection clientSide = new RecordingConnection();
    private final RecordingConnection serverSide = new RecordingConnection();
    private final ClientTransportImpl channel = TestRuntimes.channel();
    private final ServerRuntime server = TestRuntimes.server(new TestService());

    @Test
    void shouldCarryAUnaryCallInTwoTransportMessagesWithoutHoldingACallMonitorWhileWriting()
    {
        final ClientWireConnection client = new ClientWireConnection(channel, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
            ClientWireConnection.LAST_STREAM_ID);
        client.attach(clientSide);
        final ServerWireConnection serverConnection = new ServerWireConnection(server, serverSide);
        final Recorder<StringValue> subscriber = new Recorder<>();
        final UnaryClientCall<StringValue, StringValue> call = new UnaryClientCall<>(channel, TestService.ECHO,
            StringValue.of("hi"), null, null, null, false);
        call.actual = subscriber;
        call.request(Long.MAX_VALUE);
        try
        {
            call.onConnection(client);
            assertThat(clientSide.messages).hasSize(1);
            assertThat(frameTypes(clientSide.messages.get(0))).containsExactly(FrameType.CALL, FrameType.MESSAGE);

            serverConnection.onMessage(serverSide, ByteBuffer.wrap(clientSide.messages.get(0)));
            assertThat(serverSide.messages).hasSize(1);
            assertThat(frameTypes(serverSide.messages.get(0))).containsExactly(FrameType.MESSAGE, FrameType.STATUS);

            client.onMessage(clientSide, ByteBuffer.wrap(serverSide.messages.get(0)));
            assertThat(subscriber.values).containsExactly(StringValue.of("hi"));
            assertThat(subscriber.completed).isTrue();

            assertThat(clientSide.monitorsAtClaim).containsOnly(List.of("java.lang.Object")); // the write lock alone
            assertThat(serverSide.monitorsAtClaim).containsOnly(List.of("java.lang.Object"));
        }
        finally
        {
            client.closeWithError(Status.UNAVAILABLE);
        }
    }

    @Test
    void shouldWriteRequestsDemandAndCancelOfAStreamingCallWithoutHoldingItsMonitor()
    {
        final ClientWireConnection client = new ClientWireConnection(channel, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
            ClientWireConnection.LAST_STREAM_ID);
        client.attach(clientSide);
        final Recorder<BytesValue> subscriber = new Recorder<>();
        final StreamingClientCall<Int32Value, BytesValue> call = new StreamingClientCall<>(channel, TestService.RANGE,
            Mono.just(Int32Value.of(3)), null, null, null, false);
        call.actual = subscriber;
        try
        {
            call.onConnection(client);
            call.request(5);
            call.cancel();
            final List<FrameType> types = new ArrayList<>();
            for (final byte[] message : clientSide.messages)
            {
                types.addAll(frameTypes(message));
            }
            assertThat(types).containsExactly(FrameType.CALL, FrameType.MESSAGE, FrameType.REQUEST_N, FrameType.CANCEL);
            assertThat(clientSide.monitorsAtClaim).hasSize(4).containsOnly(List.of("java.lang.Object"));
            assertThat(subscriber.values).isEmpty();
            assertThat(subscriber.completed).isFalse();
            assertThat(subscriber.error).isNull(); // a cancelled subscriber gets no signal
        }
        finally
        {
            client.closeWithError(Status.UNAVAILABLE);
        }
    }

    @Test
    void shouldFailAUnaryCallWithInternalAndSendCancelWhenTheResponseDoesNotParse()
    {
        final Recorder<StringValue> subscriber = unaryCallWithResponseReader(source ->
        {
            throw new IllegalArgumentException("bad bytes");
        });
        assertThat(subscriber.values).isEmpty();
        assertThat(subscriber.completed).isFalse();
        final Status status = Status.fromThrowable(subscriber.error);
        assertThat(status.code()).isEqualTo(StatusCode.INTERNAL);
        assertThat(status.description()).isEqualTo("failed to parse response: bad bytes");
        assertThat(clientSide.messages).hasSize(2);
        assertThat(frameTypes(clientSide.messages.get(1))).containsExactly(FrameType.CANCEL);
    }

    @Test
    void shouldEndAUnaryCallWithInternalWhenTheResponseMarshallerReturnsNull()
    {
        final Recorder<StringValue> subscriber = unaryCallWithResponseReader(source -> null);
        assertThat(subscriber.values).isEmpty();
        assertThat(subscriber.completed).isFalse();
        final Status status = Status.fromThrowable(subscriber.error);
        assertThat(status.code()).isEqualTo(StatusCode.INTERNAL);
        assertThat(status.description()).isEqualTo("No value received for " + TestService.ECHO.fullMethodName());
        assertThat(clientSide.messages).as("the call ended with the server's STATUS: no CANCEL").hasSize(1);
    }

    @Test
    void shouldFailAStreamingCallWithInternalAndSendCancelWhenAResponseDoesNotParse()
    {
        streamingCallWhoseSecondResponseIs(() ->
        {
            throw new IllegalArgumentException("bad second response");
        }, "failed to parse response: bad second response");
    }

    @Test
    void shouldFailAStreamingCallWithInternalAndSendCancelWhenTheMarshallerReturnsNull()
    {
        // Reactive Streams forbid a null onNext: the call must end INTERNAL, not throw out of the transport callback
        streamingCallWhoseSecondResponseIs(() -> null, "the response marshaller returned null for a streamed message");
    }

    /** A server stream of three responses whose second one the marshaller fails (throws or returns null). */
    @Test
    void shouldHaveRemovedAUnaryCallBeforeItsEndStartsTheNextCall()
    {
        final ClientWireConnection client = new ClientWireConnection(channel, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
            ClientWireConnection.LAST_STREAM_ID);
        client.attach(clientSide);
        final ServerWireConnection serverConnection = new ServerWireConnection(server, serverSide);
        final Recorder<StringValue> second = new Recorder<>();
        final UnaryClientCall<StringValue, StringValue> next = new UnaryClientCall<>(channel, TestService.ECHO,
            StringValue.of("two"), null, null, null, false);
        next.actual = second;
        next.request(Long.MAX_VALUE);
        final List<Integer> registeredAtNextStart = new ArrayList<>();
        // a closed loop: the next call starts from the first one's end, on the transport's thread
        final Recorder<StringValue> first = new Recorder<>()
        {
            @Override
            public void onComplete()
            {
                super.onComplete();
                registeredAtNextStart.add(client.streams.size());
                next.onConnection(client);
            }
        };
        final UnaryClientCall<StringValue, StringValue> call = new UnaryClientCall<>(channel, TestService.ECHO,
            StringValue.of("one"), null, null, null, false);
        call.actual = first;
        call.request(Long.MAX_VALUE);
        try
        {
            call.onConnection(client);
            serverConnection.onMessage(serverSide, ByteBuffer.wrap(clientSide.messages.get(0)));
            client.onMessage(clientSide, ByteBuffer.wrap(serverSide.messages.get(0)));

            assertThat(first.values).containsExactly(StringValue.of("one"));
            assertThat(first.error).isNull();
            // the first call was gone when its end started the second one (a keep-alive tick then sees no call open)
            assertThat(registeredAtNextStart).containsExactly(0);
            assertThat(clientSide.messages).hasSize(2);
            assertThat(client.streams.ids()).containsExactly(next.streamId);

            serverConnection.onMessage(serverSide, ByteBuffer.wrap(clientSide.messages.get(1)));
            client.onMessage(clientSide, ByteBuffer.wrap(serverSide.messages.get(1)));
            assertThat(second.values).containsExactly(StringValue.of("two"));
            assertThat(second.completed).isTrue();
            assertThat(client.streams.isEmpty()).isTrue();
        }
        finally
        {
            client.closeWithError(Status.UNAVAILABLE);
        }
    }

    private void streamingCallWhoseSecondResponseIs(final Supplier<BytesValue> second, final String expectedDescription)
    {
        final ClientWireConnection client = new ClientWireConnection(channel, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
            ClientWireConnection.LAST_STREAM_ID);
        client.attach(clientSide);
        final AtomicInteger reads = new AtomicInteger();
        final MethodDescriptor<Int32Value, BytesValue> method = TestService.RANGE.toBuilder()
            .responseMarshaller(reading(TestService.RANGE.responseMarshaller(), source ->
            {
                if (reads.incrementAndGet() == 2)
                {
                    return second.get();
                }
                return TestService.RANGE.responseMarshaller().read(source);
            }))
            .build();
        final Recorder<BytesValue> subscriber = new Recorder<>();
        final StreamingClientCall<Int32Value, BytesValue> call = new StreamingClientCall<>(channel, method,
            Mono.just(Int32Value.of(3)), null, null, null, false);
        call.actual = subscriber;
        try
        {
            call.onConnection(client);
            call.request(5);
            final int sentByClient = clientSide.messages.size();
            final ServerWireConnection serverConnection = new ServerWireConnection(server, serverSide);
            for (final byte[] message : clientSide.messages)
            {
                serverConnection.onMessage(serverSide, ByteBuffer.wrap(message));
            }
            final List<FrameType> fromServer = new ArrayList<>();
            for (final byte[] message : serverSide.messages)
            {
                fromServer.addAll(frameTypes(message));
                client.onMessage(clientSide, ByteBuffer.wrap(message));
            }
            assertThat(fromServer).containsExactly(FrameType.MESSAGE, FrameType.MESSAGE, FrameType.MESSAGE,
                FrameType.STATUS);
            assertThat(reads).hasValue(2); // the responses after the failed one reach no marshaller
            assertThat(subscriber.values).hasSize(1);
            assertThat(subscriber.completed).isFalse();
            final Status status = Status.fromThrowable(subscriber.error);
            assertThat(status.code()).isEqualTo(StatusCode.INTERNAL);
            assertThat(status.description()).isEqualTo(expectedDescription);
            assertThat(clientSide.messages).hasSize(sentByClient + 1);
            assertThat(frameTypes(clientSide.messages.get(sentByClient))).containsExactly(FrameType.CANCEL);
        }
        finally
        {
            client.closeWithError(Status.UNAVAILABLE);
        }
    }

    /** One echo call whose client parses the response with {@code read}, to its end. */
    private Recorder<StringValue> unaryCallWithResponseReader(final Function<ByteBuffer, StringValue> read)
    {
        final ClientWireConnection client = new ClientWireConnection(channel, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
            ClientWireConnection.LAST_STREAM_ID);
        client.attach(clientSide);
        final ServerWireConnection serverConnection = new ServerWireConnection(server, serverSide);
        final MethodDescriptor<StringValue, StringValue> method = TestService.ECHO.toBuilder()
            .responseMarshaller(reading(TestService.ECHO.responseMarshaller(), read))
            .build();
        final Recorder<StringValue> subscriber = new Recorder<>();
        final UnaryClientCall<StringValue, StringValue> call = new UnaryClientCall<>(channel, method,
            StringValue.of("hi"), null, null, null, false);
        call.actual = subscriber;
        call.request(Long.MAX_VALUE);
        try
        {
            call.onConnection(client);
            serverConnection.onMessage(serverSide, ByteBuffer.wrap(clientSide.messages.get(0)));
            assertThat(frameTypes(serverSide.messages.get(0))).containsExactly(FrameType.MESSAGE, FrameType.STATUS);
            client.onMessage(clientSide, ByteBuffer.wrap(serverSide.messages.get(0)));
            return subscriber;
        }
        finally
        {
            client.closeWithError(Status.UNAVAILABLE);
        }
    }

    /** A marshaller that writes as {@code delegate} and reads with {@code read}. */
    private static <T> Marshaller<T> reading(final Marshaller<T> delegate, final Function<ByteBuffer, T> read)
    {
        return new Marshaller<T>()
        {
            @Override
            public int serializedSize(final T value)
            {
                return delegate.serializedSize(value);
            }

            @Override
            public void write(final T value, final ByteBuffer target)
            {
                delegate.write(value, target);
            }

            @Override
            public T read(final ByteBuffer source)
            {
                return read.apply(source);
            }
        };
    }

    private static List<FrameType> frameTypes(final byte[] message)
    {
        final ByteBuffer buffer = ByteBuffer.wrap(message);
        final FrameHeaderFlyweight header = new FrameHeaderFlyweight();
        final List<FrameType> types = new ArrayList<>();
        for (int at = 0; at < message.length; at += header.frameLength())
        {
            header.wrap(buffer, at);
            types.add(FrameType.fromValue(header.type()));
        }
        return types;
    }
}
