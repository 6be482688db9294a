package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.TestService;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/**
 * A peer that keeps sending and reads nothing: the replies it provokes (PING ACKs, the STATUS of calls not found or
 * refused) and the answers of calls it keeps starting wait behind back-pressure. They are bounded: at most
 * {@link WireWriter#MAX_QUEUED_REPLIES} replies wait before the connection is closed, and past
 * {@link ServerWireConnection#MAX_QUEUED_FOR_NEW_CALLS} queued frames new calls are refused (without those bounds
 * the queue grew until the heap was gone). Driven by hand over a transport that is back-pressured throughout.
 */
class UnreadRepliesTest
{
    private static final int BATCH = 1_000;
    private final TestService service = new TestService();
    private final ServerRuntime server = TestRuntimes.server(service);
    private final WireFrames frames = new WireFrames();

    /**
     * Feeds batches of frames made by {@code frame} (given a running number) until the connection closes or
     * {@code limit} frames were sent.
     *
     * @return the frames sent.
     */
    private static int flood(final ServerWireConnection connection, final RecordingConnection transport,
        final IntFunction<byte[]> frame, final int limit)
    {
        int sent = 0;
        while (!connection.closed && sent < limit)
        {
            final List<byte[]> batch = new ArrayList<>();
            for (int i = 0; i < BATCH; i++)
            {
                batch.add(frame.apply(++sent));
            }
            connection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(batch.toArray(new byte[0][]))));
            connection.onReadComplete(transport);
            // calls of one read batch are admitted before any starts (their answers queue at its end): a batch more
            assertThat(connection.queuedFrames()).as("frames queued behind back-pressure").isLessThanOrEqualTo(
                ServerWireConnection.MAX_QUEUED_FOR_NEW_CALLS + WireWriter.MAX_QUEUED_REPLIES + 2 * BATCH);
        }
        return sent;
    }

    private ServerWireConnection backPressuredConnection(final RecordingConnection transport)
    {
        final ServerWireConnection connection = new ServerWireConnection(server, transport);
        transport.backPressured = true;
        return connection;
    }

    @Test
    void shouldCloseAConnectionWhosePeerPingsAndNeverReadsTheAcks()
    {
        final RecordingConnection transport = new RecordingConnection(true);
        final ServerWireConnection connection = backPressuredConnection(transport);
        final int sent = flood(connection, transport, frames::ping, 10 * WireWriter.MAX_QUEUED_REPLIES);

        assertThat(connection.closed).as("closed once the ACKs waiting reached the bound").isTrue();
        assertThat(sent).isLessThanOrEqualTo(WireWriter.MAX_QUEUED_REPLIES + BATCH);
        assertThat(connection.queuedFrames()).as("what waited is dropped with the connection").isZero();
    }

    @Test
    void shouldCloseAConnectionWhosePeerCallsUnknownMethodsAndNeverReadsTheStatus()
    {
        final MethodDescriptor<StringValue, StringValue> unknown = MethodDescriptor.<StringValue, StringValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY).fullMethodName("no.Such/Method")
            .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance())).build();
        final RecordingConnection transport = new RecordingConnection(true);
        final ServerWireConnection connection = backPressuredConnection(transport);
        final int sent = flood(connection, transport, id -> frames.call(id, unknown, 1),
            10 * WireWriter.MAX_QUEUED_REPLIES);

        assertThat(connection.closed).isTrue();
        assertThat(sent).isLessThanOrEqualTo(WireWriter.MAX_QUEUED_REPLIES + BATCH);
        assertThat(connection.streams.isEmpty()).isTrue();
    }

    @Test
    void shouldRefuseNewCallsOnceTheirAnswersWouldQueueWithoutEnd()
    {
        // each call answers at once (its response and STATUS queued, the call gone from the stream map): only the
        // queue says that the client reads nothing
        final RecordingConnection transport = new RecordingConnection(true);
        final ServerWireConnection connection = backPressuredConnection(transport);
        final int sent = flood(connection, transport, id -> WireFrames.concat(frames.call(id, TestService.ECHO, 1),
            frames.message(id, ProtoMarshaller.of(StringValue.getDefaultInstance()), StringValue.of("x"), false),
            frames.halfClose(id)), 200_000);

        assertThat(connection.closed).as("refused calls are replies: their bound closes the connection").isTrue();
        assertThat(sent).isLessThan(200_000);
        assertThat(connection.streams.isEmpty()).isTrue();
    }

    @Test
    void shouldAskAStreamingHandlerForNoMoreThanTheConnectionCanSend()
    {
        // the client asks for everything and reads nothing: the handler (20,000 responses of 1 KiB) is asked for
        // one window at a time, and no more while the queue is long; once the client reads, the stream goes on
        final RecordingConnection transport = new RecordingConnection(true);
        final ServerWireConnection connection = backPressuredConnection(transport);
        connection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(
            frames.call(1, TestService.RANGE, Integer.MAX_VALUE),
            frames.message(1, ProtoMarshaller.of(Int32Value.getDefaultInstance()), Int32Value.of(20_000), false),
            frames.halfClose(1))));
        connection.onReadComplete(transport);

        assertThat(connection.queuedFrames()).as("responses queued while the client reads nothing")
            .isBetween(1, ReactorServerCall.QUEUED_HIGH + ReactorServerCall.RESPONSE_WINDOW);
        assertThat(service.rangeMaxOutstanding.get()).as("asked of the handler at once")
            .isLessThanOrEqualTo(ReactorServerCall.RESPONSE_WINDOW);
        final int queuedWhileStalled = connection.queuedFrames();

        transport.backPressured = false;
        connection.onWritable(transport);
        assertThat(transport.messages.size()).as("the stream went on once the client read").isGreaterThan(
            queuedWhileStalled);
        assertThat(connection.streams.isEmpty()).as("all 20,000 sent, the call ended").isTrue();
    }

    @Test
    void shouldAnswerEveryPingOfAPeerThatReads()
    {
        final RecordingConnection transport = new RecordingConnection(true);
        final ServerWireConnection connection = new ServerWireConnection(server, transport);
        flood(connection, transport, frames::ping, 3 * WireWriter.MAX_QUEUED_REPLIES);

        assertThat(connection.closed).as("nothing waits: no bound is reached").isFalse();
        assertThat(connection.queuedFrames()).isZero();
    }
}
