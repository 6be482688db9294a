package io.reverb.rpc.internal;

import static io.reverb.rpc.internal.RecordingConnection.frameTypes;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.transport.stream.ClientStream;
import io.reverb.rpc.transport.stream.ClientStreamListener;
import io.reverb.rpc.transport.stream.ServerStream;
import io.reverb.rpc.transport.stream.ServerStreamHandler;
import io.reverb.rpc.transport.stream.ServerStreamListener;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.scheduler.Schedulers;

/**
 * The stream SPI's server stream ({@link TransportServerStream}) driven through a real client stream and a server
 * connection over recording transports, with and without calls started at the end of a read batch: which frames
 * leave in how many transport messages, the held response travelling with the STATUS, demand both ways, grants
 * only for a client that streams, the listener's callbacks in order and its close once. Counted, not timed.
 */
class TransportServerStreamTest
{
    private static final Marshaller<String> TEXT = new Marshaller<>()
    {
        @Override
        public int serializedSize(final String value)
        {
            return value.getBytes(StandardCharsets.UTF_8).length;
        }

        @Override
        public void write(final String value, final ByteBuffer target)
        {
            target.put(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String read(final ByteBuffer buffer)
        {
            final byte[] bytes = new byte[buffer.remaining()];
            buffer.get(bytes);
            return new String(bytes, StandardCharsets.UTF_8);
        }
    };
    private static final String LISTED = "test.Streams/Listed";

    private RecordingConnection clientSide;
    private RecordingConnection serverSide;
    private final ClientTransportImpl host = TestRuntimes.channel();
    private final TestService service = new TestService();
    private final Handler handler = new Handler();
    private ClientWireConnection client;
    private ServerWireConnection serverConnection;
    private int toServer;
    private int toClient;

    private void connect(final boolean batches)
    {
        clientSide = new RecordingConnection();
        serverSide = new RecordingConnection(batches);
        final RpcServer.Builder settings = RpcServer.builder("inproc://unused").addService(service.bindService())
            .streamHandler(handler, List.of(LISTED)).shutdownGracePeriod(Duration.ZERO)
            .timerScheduler(Schedulers.parallel()).transportOptions(TransportOptions.EMPTY);
        final ServerRuntime server = new ServerRuntime(ServerConfig.of(settings));
        client = new ClientWireConnection(host, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
            ClientWireConnection.LAST_STREAM_ID);
        client.attach(clientSide);
        serverConnection = new ServerWireConnection(server, serverSide);
    }

    @AfterEach
    void close()
    {
        client.closeWithError(Status.UNAVAILABLE);
    }

    @ParameterizedTest(name = "read batches signalled: {0}")
    @ValueSource(booleans = {false, true})
    void shouldAnswerAUnaryCallInOneTransportMessageWithoutAGrant(final boolean batches)
    {
        connect(batches);
        handler.onCreated = (stream, events) -> stream.request(2); // as grpc-java's unary handler asks
        handler.onHalfClosed = (stream, events) ->
        {
            stream.writeMessage("re:" + events.messages.get(0));
            stream.close(Status.OK, null);
        };
        final ClientEvents answer = new ClientEvents();
        final ClientStream<String> call = open(method(LISTED, MethodDescriptor.MethodType.UNARY), answer);
        call.request(2);
        call.writeMessage("hi");
        call.halfClose();
        pump();

        final Events events = handler.only();
        assertThat(events.method).isEqualTo(LISTED);
        assertThat(events.order).containsExactly("ready", "message", "halfClosed", "closed");
        assertThat(events.closes).containsExactly(StatusCode.OK);
        assertThat(serverSide.messages).as("one transport message back").hasSize(1);
        assertThat(frameTypes(serverSide.messages.get(0))).as("the response travels with its status")
            .containsExactly(FrameType.MESSAGE, FrameType.STATUS);
        assertThat(answer.messages).containsExactly("re:hi");
        assertThat(answer.closes).containsExactly(StatusCode.OK);
        assertThat(serverConnection.streams.isEmpty()).isTrue();
    }

    @ParameterizedTest(name = "read batches signalled: {0}")
    @ValueSource(booleans = {false, true})
    void shouldSendResponsesOnlyWithinTheClientsDemandInOrderThenTheStatus(final boolean batches)
    {
        connect(batches);
        handler.onCreated = (stream, events) -> stream.request(1);
        handler.onHalfClosed = (stream, events) ->
        {
            for (int i = 0; i < 4; i++)
            {
                stream.writeMessage("r" + i);
                stream.flush();
            }
            events.readyAfterWrites = stream.isReady();
            stream.close(Status.OK, null);
        };
        final ClientEvents answer = new ClientEvents();
        final ClientStream<String> call = open(method("test.Streams/Range", MethodDescriptor.MethodType.SERVER_STREAMING),
            answer);
        call.request(1);
        call.writeMessage("go");
        call.halfClose();
        pump();

        final Events events = handler.only();
        assertThat(events.method).as("an unlisted method's name comes from the frame").isEqualTo("test.Streams/Range");
        assertThat(events.readyAfterWrites).isFalse();
        assertThat(answer.messages).as("one granted with the CALL").containsExactly("r0");
        assertThat(answer.closes).isEmpty();

        call.request(2);
        pump();
        assertThat(answer.messages).containsExactly("r0", "r1", "r2");
        assertThat(answer.closes).as("the status waits behind the last response").isEmpty();
        final int readies = events.readies;

        call.request(5);
        pump();
        assertThat(answer.messages).containsExactly("r0", "r1", "r2", "r3");
        assertThat(answer.closes).containsExactly(StatusCode.OK);
        assertThat(events.closes).containsExactly(StatusCode.OK);
        assertThat(readies).as("onReady: at the start, and when a grant made the stream ready again").isEqualTo(1);
        assertThat(serverConnection.streams.isEmpty()).isTrue();
    }

    @ParameterizedTest(name = "read batches signalled: {0}")
    @ValueSource(booleans = {false, true})
    void shouldGrantAStreamingClientMoreOnlyAsTheListenerAsks(final boolean batches)
    {
        connect(batches);
        handler.onCreated = (stream, events) -> stream.request(1);
        handler.onMessage = (stream, events) -> stream.request(1); // one at a time, as grpc-java's streaming calls
        handler.onHalfClosed = (stream, events) ->
        {
            stream.writeMessage(String.join("+", events.messages));
            stream.close(Status.OK, null);
        };
        final ClientEvents answer = new ClientEvents();
        final ClientStream<String> call = open(method("test.Streams/Sum", MethodDescriptor.MethodType.CLIENT_STREAMING),
            answer);
        call.request(1);
        for (int i = 0; i < 3; i++)
        {
            call.writeMessage("m" + i);
        }
        call.halfClose();
        for (int round = 0; round < 10 && answer.closes.isEmpty(); round++)
        {
            pump();
        }

        assertThat(handler.only().messages).containsExactly("m0", "m1", "m2");
        assertThat(answer.messages).containsExactly("m0+m1+m2");
        assertThat(answer.closes).containsExactly(StatusCode.OK);
        assertThat(countFrames(serverSide.messages, FrameType.REQUEST_N))
            .as("one grant, with the window, at the first request: not one per request").isEqualTo(1);
    }

    @ParameterizedTest(name = "read batches signalled: {0}")
    @ValueSource(booleans = {false, true})
    void shouldGrantAWindowAheadOfAListenerAskingOneAtATime(final boolean batches)
    {
        connect(batches);
        final int count = 500;
        handler.onCreated = (stream, events) -> stream.request(1);
        handler.onMessage = (stream, events) -> stream.request(1); // one at a time, as grpc-java's streaming calls
        handler.onHalfClosed = (stream, events) ->
        {
            stream.writeMessage(Integer.toString(events.messages.size()));
            stream.close(Status.OK, null);
        };
        final ClientEvents answer = new ClientEvents();
        final ClientStream<String> call = open(method("test.Streams/Sum", MethodDescriptor.MethodType.CLIENT_STREAMING),
            answer);
        call.request(1);
        for (int i = 0; i < count; i++)
        {
            call.writeMessage("m" + i);
            if (i % 10 == 9)
            {
                pump();
            }
        }
        call.halfClose();
        for (int round = 0; round < 10 && answer.closes.isEmpty(); round++)
        {
            pump();
        }
        assertThat(answer.messages).containsExactly(Integer.toString(count));
        assertThat(handler.only().messages).hasSize(count).startsWith("m0", "m1").endsWith("m" + (count - 1));
        // before the window: one REQUEST_N per request after the first (499); now one per half window (32 requests)
        assertThat(countFrames(serverSide.messages, FrameType.REQUEST_N)).as("grants").isBetween(1, 2 + count / 16);
    }

    @ParameterizedTest(name = "read batches signalled: {0}")
    @ValueSource(booleans = {false, true})
    void shouldLetAStreamingClientSendOnlyTheWindowAheadOfAListenerThatStopsAsking(final boolean batches)
    {
        connect(batches);
        final int count = 500;
        handler.onCreated = (stream, events) -> stream.request(1);
        final ClientEvents second = new ClientEvents();
        final ClientStream<String> paused = open(method("test.Streams/Sum",
            MethodDescriptor.MethodType.CLIENT_STREAMING), second);
        paused.request(1);
        for (int i = 0; i < count; i++)
        {
            paused.writeMessage("m" + i);
        }
        for (int round = 0; round < 10; round++)
        {
            pump();
        }
        final int sent = countFrames(clientSide.messages, FrameType.MESSAGE);
        assertThat(sent).as("requests the client sent while the listener took one")
            .isEqualTo(1 + TransportServerStream.MAX_WINDOW_MESSAGES);
        assertThat(handler.only().messages).containsExactly("m0");
        paused.cancel(Status.CANCELLED);
        pump();
    }

    @ParameterizedTest(name = "read batches signalled: {0}")
    @ValueSource(booleans = {false, true})
    void shouldGrantNoWindowWhileTheListenerAsksForNothing(final boolean batches)
    {
        connect(batches);
        // asks for nothing at first: a client it does not read stays not ready until it asks (grpc-java's contract
        // suite: the client's onReady follows the server's reading; a window granted at the first request's arrival
        // made the client ready before that, racing the test on the emulated rdma device)
        final ClientEvents answer = new ClientEvents();
        final ClientStream<String> call = open(method("test.Streams/Sum",
            MethodDescriptor.MethodType.CLIENT_STREAMING), answer);
        for (int i = 0; i < 3; i++)
        {
            call.writeMessage("m" + i);
        }
        pump();
        assertThat(countFrames(serverSide.messages, FrameType.REQUEST_N)).as("grants before the listener asks").isZero();
        assertThat(call.isReady()).isFalse();

        handler.only().stream.request(3);
        pump();
        assertThat(countFrames(serverSide.messages, FrameType.REQUEST_N)).as("grants once it asked").isEqualTo(1);
        assertThat(handler.only().messages).containsExactly("m0", "m1", "m2");
        assertThat(call.isReady()).as("the window came with the listener's demand").isTrue();
        call.cancel(Status.CANCELLED);
        pump();
    }

    @ParameterizedTest(name = "read batches signalled: {0}")
    @ValueSource(booleans = {false, true})
    void shouldSendTheResponsesOfOneCallbackAndOfOneGrantTogetherNotOneTransportMessageEach(final boolean batches)
    {
        connect(batches);
        final int count = 200;
        handler.onCreated = (stream, events) -> stream.request(1);
        handler.onHalfClosed = (stream, events) ->
        {
            for (int i = 0; i < count; i++)
            {
                stream.writeMessage("r" + i);
                stream.flush(); // as grpc-java does after each response of a streaming method
            }
            stream.close(Status.OK, null);
        };
        final ClientEvents answer = new ClientEvents();
        final ClientStream<String> call = open(method("test.Streams/Many",
            MethodDescriptor.MethodType.SERVER_STREAMING), answer);
        call.request(count / 2); // half now: those leave from the callback; the rest from one REQUEST_N
        call.writeMessage("go");
        call.halfClose();
        pump();
        final int fromCallback = serverSide.messages.size();
        assertThat(answer.messages).hasSize(count / 2);
        call.request(count / 2);
        pump();

        assertThat(answer.messages).hasSize(count).startsWith("r0").endsWith("r" + (count - 1));
        assertThat(answer.closes).containsExactly(StatusCode.OK);
        // one transport message per response before (200); now up to 4 KiB of them each (a response frame is ~20 B)
        assertThat(fromCallback).as("transport messages the callback's 100 responses took").isBetween(1, 3);
        assertThat(serverSide.messages.size() - fromCallback).as("transport messages for the 100 the REQUEST_N let out")
            .isBetween(1, 3);
    }

    @ParameterizedTest(name = "read batches signalled: {0}")
    @ValueSource(booleans = {false, true})
    void shouldCloseTheListenerOnceWithTheClientsCancel(final boolean batches)
    {
        connect(batches);
        handler.onCreated = (stream, events) -> stream.request(1);
        final ClientEvents answer = new ClientEvents();
        final ClientStream<String> call = open(method("test.Streams/Bidi", MethodDescriptor.MethodType.BIDI_STREAMING),
            answer);
        call.request(1);
        call.writeMessage("a");
        pump();
        final Events events = handler.only();
        assertThat(events.messages).containsExactly("a");

        call.cancel(Status.CANCELLED.withDescription("bye"));
        pump();
        assertThat(events.closes).containsExactly(StatusCode.CANCELLED);
        assertThat(events.order).endsWith("closed");
        // the owner's late writes and close go nowhere
        final int sent = serverSide.messages.size();
        events.stream.writeMessage("late");
        events.stream.flush();
        events.stream.close(Status.OK, null);
        assertThat(serverSide.messages).hasSize(sent);
        assertThat(events.closes).hasSize(1);
        assertThat(serverConnection.streams.isEmpty()).isTrue();
    }

    @ParameterizedTest(name = "read batches signalled: {0}")
    @ValueSource(booleans = {false, true})
    void shouldEndACallInternalWhenTheHandlerSetsNoListenerOrItsListenerThrows(final boolean batches)
    {
        connect(batches);
        handler.setNoListener = true;
        final ClientEvents first = new ClientEvents();
        final ClientStream<String> call = open(method(LISTED, MethodDescriptor.MethodType.UNARY), first);
        call.request(1);
        call.writeMessage("x");
        call.halfClose();
        pump();
        assertThat(first.closes).containsExactly(StatusCode.INTERNAL);

        handler.setNoListener = false;
        handler.onCreated = (stream, events) -> stream.request(1);
        handler.onMessage = (stream, events) ->
        {
            throw new IllegalStateException("handler bug");
        };
        final ClientEvents second = new ClientEvents();
        final ClientStream<String> failing = open(method(LISTED, MethodDescriptor.MethodType.UNARY), second);
        failing.request(1);
        failing.writeMessage("y");
        failing.halfClose();
        pump();
        assertThat(second.closes).containsExactly(StatusCode.INTERNAL);
        final Events events = handler.events.get(handler.events.size() - 1);
        assertThat(events.closes).as("closed once, after the failure").containsExactly(StatusCode.INTERNAL);
        assertThat(serverConnection.streams.isEmpty()).isTrue();
    }

    @ParameterizedTest(name = "read batches signalled: {0}")
    @ValueSource(booleans = {false, true})
    void shouldLeaveTheServicesMethodsToTheServices(final boolean batches)
    {
        connect(batches);
        final ClientEvents answer = new ClientEvents();
        final ClientStream<StringValue> call = open(TestService.ECHO, answer);
        call.request(1);
        call.writeMessage(StringValue.of("svc"));
        call.halfClose();
        pump();
        assertThat(handler.events).as("the stream handler takes only what no service serves").isEmpty();
        assertThat(answer.closes).containsExactly(StatusCode.OK);
    }

    // ---------------------------------------------------------------- harness

    private static MethodDescriptor<String, String> method(final String name, final MethodDescriptor.MethodType type)
    {
        return MethodDescriptor.<String, String>newBuilder().fullMethodName(name).type(type)
            .requestMarshaller(TEXT).responseMarshaller(TEXT).build();
    }

    private <Req> ClientStream<Req> open(final MethodDescriptor<Req, ?> method, final ClientEvents listener)
    {
        final TransportClientStream<Req> stream = new TransportClientStream<>(host, method, CallOptions.DEFAULT,
            OutboundCompression.NONE, listener);
        stream.start(client);
        return stream;
    }

    private void pump()
    {
        while (toServer < clientSide.messages.size() || toClient < serverSide.messages.size())
        {
            while (toServer < clientSide.messages.size())
            {
                serverConnection.onMessage(serverSide, ByteBuffer.wrap(clientSide.messages.get(toServer++)));
                if (serverSide.signalsReadComplete())
                {
                    serverConnection.onReadComplete(serverSide);
                }
            }
            while (toClient < serverSide.messages.size())
            {
                client.onMessage(clientSide, ByteBuffer.wrap(serverSide.messages.get(toClient++)));
            }
        }
    }

    private static int countFrames(final List<byte[]> messages, final FrameType type)
    {
        int n = 0;
        for (final byte[] message : messages)
        {
            n += Collections.frequency(frameTypes(message), type);
        }
        return n;
    }

    /** What one call's listener heard, and the stream to act on. */
    private static final class Events
    {
        final String method;
        final ServerStream<String> stream;
        final List<String> order = new ArrayList<>();
        final List<String> messages = new ArrayList<>();
        final List<StatusCode> closes = new ArrayList<>();
        int readies;
        boolean readyAfterWrites = true;

        Events(final String method, final ServerStream<String> stream)
        {
            this.method = method;
            this.stream = stream;
        }
    }

    /** A stream handler whose listener records and runs the test's reactions. */
    private static final class Handler implements ServerStreamHandler<String>
    {
        final List<Events> events = new ArrayList<>();
        BiConsumer<ServerStream<String>, Events> onCreated = (s, e) -> { };
        BiConsumer<ServerStream<String>, Events> onMessage = (s, e) -> { };
        BiConsumer<ServerStream<String>, Events> onHalfClosed = (s, e) -> { };
        boolean setNoListener;

        Events only()
        {
            assertThat(events).hasSize(1);
            return events.get(0);
        }

        @Override
        public Marshaller<String> marshaller()
        {
            return TEXT;
        }

        @Override
        public void streamCreated(final ServerStream<String> stream, final String fullMethodName,
            final Metadata headers)
        {
            final Events call = new Events(fullMethodName, stream);
            events.add(call);
            if (setNoListener)
            {
                return;
            }
            stream.setListener(new ServerStreamListener<>()
            {
                @Override
                public void messageRead(final String message)
                {
                    call.order.add("message");
                    call.messages.add(message);
                    onMessage.accept(stream, call);
                }

                @Override
                public void halfClosed()
                {
                    call.order.add("halfClosed");
                    onHalfClosed.accept(stream, call);
                }

                @Override
                public void onReady()
                {
                    call.order.add("ready");
                    call.readies++;
                }

                @Override
                public void closed(final Status status)
                {
                    call.order.add("closed");
                    call.closes.add(status.code());
                }
            });
            onCreated.accept(stream, call);
        }
    }

    /** What the client's stream reported. */
    private static final class ClientEvents implements ClientStreamListener
    {
        final List<String> messages = new ArrayList<>();
        final List<StatusCode> closes = new ArrayList<>();

        @Override
        public void headersRead(final Metadata headers)
        {
        }

        @Override
        public void messageRead(final ByteBuffer message)
        {
            messages.add(TEXT.read(message));
        }

        @Override
        public void onReady()
        {
        }

        @Override
        public void closed(final Status status, final Metadata trailers)
        {
            closes.add(status.code());
        }
    }
}
