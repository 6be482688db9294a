package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.google.protobuf.Int32Value;
import com.google.protobuf.InvalidProtocolBufferException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.TestService;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.wire.FrameCodec;
import io.reverb.rpc.wire.FrameHeaderFlyweight;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * A server-streaming handler's responses emitted inside one request to its publisher leave together: several MESSAGE
 * frames (and the STATUS) per transport message, each message within {@link WireWriter#COALESCE_LIMIT}, in
 * order, never beyond the client's REQUEST_N, and nothing held back once the request returned. Counted on a recording
 * connection, single-threaded (no handler scheduler).
 */
class StreamedResponsesCoalescingTest
{
    private static final int STREAM_ID = 1;

    private final TestService service = new TestService();
    private final ServerRuntime server = TestRuntimes.server(service);
    private final WireFrames frames = new WireFrames();
    private final RecordingConnection transport = new RecordingConnection();
    private final ServerWireConnection connection = new ServerWireConnection(server, transport);

    @Test
    void shouldWriteResponsesEmittedInOneRequestInFewTransportMessages()
    {
        final int count = 20;
        startRange(count, Integer.MAX_VALUE);

        final List<Frame> written = frames(0);
        assertThat(written).hasSize(count + 1);
        for (int i = 0; i < count; i++)
        {
            assertThat(written.get(i).type).isEqualTo(FrameType.MESSAGE);
            assertThat(written.get(i).index).as("responses in order").isEqualTo(i);
        }
        assertThat(written.get(count).type).isEqualTo(FrameType.STATUS);
        // each response is ~1 KiB: three to a message; without coalescing every frame took a claim of its own (21)
        assertThat(transport.messages.size()).isLessThanOrEqualTo(7);
        assertWithinLimit();
    }

    @Test
    void shouldWriteEachRequestsResponsesBeforeTheRequestReturnsAndNeverBeyondTheDemand()
    {
        startRange(10, 3);
        assertThat(indexes(0)).as("the CALL's demand: 3, in one message").containsExactly(0, 1, 2);
        assertThat(transport.messages.size()).isEqualTo(1);

        requestN(4);
        assertThat(indexes(1)).as("REQUEST_N 4: written before the transport's callback returned")
            .containsExactly(3, 4, 5, 6);
        assertThat(transport.messages.size()).isEqualTo(3); // 4 x ~1 KiB: two messages of at most 4 KiB

        requestN(100);
        final List<Frame> rest = frames(3);
        assertThat(rest).extracting(f -> f.type).containsExactly(FrameType.MESSAGE, FrameType.MESSAGE,
            FrameType.MESSAGE, FrameType.STATUS);
        assertThat(rest).extracting(f -> f.index).containsExactly(7, 8, 9, -1);
        assertThat(transport.messages.size()).as("the last responses and the STATUS in one message").isEqualTo(4);
        assertWithinLimit();
    }

    @Test
    void shouldWriteWhatTheCollectingThreadHoldsBeforeAResponseEmittedOnAnotherThread()
    {
        // 0 and 1 are emitted inside the delivery of the request (collected); 2 on another thread while the delivery
        // is still running; 3 and the end inside the delivery again
        final ServerCallHandler<Int32Value, BytesValue> handler = ServerCalls.serverStreaming(request ->
            Flux.<BytesValue>create(sink ->
            {
                sink.next(indexed(0));
                sink.next(indexed(1));
                final Thread other = new Thread(() -> sink.next(indexed(2)));
                other.start();
                try
                {
                    other.join();
                }
                catch (final InterruptedException e)
                {
                    Thread.currentThread().interrupt();
                }
                sink.next(indexed(3));
                sink.complete();
            }));
        callWith(handler, 4);

        assertThat(frames(0)).extracting(f -> f.index).as("in the order produced").containsExactly(0, 1, 2, 3, -1);
        assertThat(transport.messages.size()).as("the other thread wrote the collected 0 and 1 with its 2; then 3 and " +
            "the STATUS").isEqualTo(2);
    }

    @Test
    void shouldSendAThousand64ByteResponsesAndTheStatusInTwentyTransportMessages()
    {
        // the benchmark's call (reverb-bench --kind server-streaming --stream-messages 1000): 78-byte frames, 52 to a
        // message of at most 4 KiB; one claim, commit and (on the engine) SEND per frame before: 1001
        final BytesValue message = BytesValue.of(ByteString.copyFrom(new byte[64]));
        callWith(ServerCalls.serverStreaming(request -> Flux.range(0, request.getValue()).map(i -> message)), 1000);

        final List<Frame> written = frames(0);
        assertThat(written).hasSize(1001);
        assertThat(written.get(1000).type).isEqualTo(FrameType.STATUS);
        assertThat(transport.messages.size()).isEqualTo(20);
        assertWithinLimit();
    }

    /** Runs one call of a server-streaming handler (as TestService's Range) with unbounded demand. */
    private void callWith(final ServerCallHandler<Int32Value, BytesValue> handler, final int request)
    {
        final ServerRuntime custom = new ServerRuntime(new ServerConfig("inproc://unused",
            List.of(ServiceDefinition.builder(TestService.SERVICE).addMethod(TestService.RANGE, handler).build()),
            List.of(), null, Schedulers.parallel(), RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE, null, Duration.ZERO,
            TransportOptions.EMPTY));
        final ServerWireConnection customConnection = new ServerWireConnection(custom, transport);
        customConnection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(
            frames.call(STREAM_ID, TestService.RANGE, Integer.MAX_VALUE),
            frames.message(STREAM_ID, TestService.RANGE.requestMarshaller(), Int32Value.of(request), true))));
    }

    private static BytesValue indexed(final int index)
    {
        return BytesValue.newBuilder().setValue(ByteString.copyFrom(new byte[1024])
            .concat(ByteString.copyFromUtf8(Integer.toString(index)))).build();
    }

    private void startRange(final int count, final int initialRequestN)
    {
        connection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(
            frames.call(STREAM_ID, TestService.RANGE, initialRequestN),
            frames.message(STREAM_ID, TestService.RANGE.requestMarshaller(), Int32Value.of(count), true))));
    }

    private void requestN(final int n)
    {
        final OutboundFrame.Control frame = new OutboundFrame.Control(FrameType.REQUEST_N, 0, STREAM_ID, n);
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(frame.length()));
        frame.encode(new FrameEncoder(), buffer, 0);
        connection.onMessage(transport, ByteBuffer.wrap(buffer.array()));
    }

    /** Every transport message is within the limit. */
    private void assertWithinLimit()
    {
        for (int m = 0; m < transport.messages.size(); m++)
        {
            assertThat(transport.messages.get(m).length).isLessThanOrEqualTo(WireConnection.COALESCE_LIMIT);
        }
    }

    private List<Integer> indexes(final int fromMessage)
    {
        final List<Integer> indexes = new ArrayList<>();
        for (final Frame frame : frames(fromMessage))
        {
            assertThat(frame.type).isEqualTo(FrameType.MESSAGE);
            indexes.add(frame.index);
        }
        return indexes;
    }

    /** @return the frames of the transport messages from the given one on. */
    private List<Frame> frames(final int fromMessage)
    {
        final List<Frame> list = new ArrayList<>();
        final FrameHeaderFlyweight header = new FrameHeaderFlyweight();
        for (int m = fromMessage; m < transport.messages.size(); m++)
        {
            final byte[] message = transport.messages.get(m);
            final ByteBuffer buffer = FrameCodec.le(ByteBuffer.wrap(message));
            for (int at = 0; at < message.length; at += header.frameLength())
            {
                header.wrap(buffer, at);
                assertThat(header.streamId()).isEqualTo(STREAM_ID);
                final FrameType type = FrameType.fromValue(header.type());
                int index = -1;
                if (type == FrameType.MESSAGE)
                {
                    final int body = at + FrameHeaderFlyweight.HEADER_LENGTH;
                    try
                    {
                        final BytesValue value = BytesValue.parseFrom(ByteBuffer.wrap(message, body,
                            at + header.frameLength() - body));
                        final byte[] bytes = value.getValue().toByteArray();
                        index = bytes.length > 1024 ?
                            Integer.parseInt(new String(bytes, 1024, bytes.length - 1024, StandardCharsets.UTF_8)) : -2;
                    }
                    catch (final InvalidProtocolBufferException e)
                    {
                        throw new AssertionError(e);
                    }
                }
                list.add(new Frame(type, index));
            }
        }
        return list;
    }

    private record Frame(FrameType type, int index)
    {
    }
}
