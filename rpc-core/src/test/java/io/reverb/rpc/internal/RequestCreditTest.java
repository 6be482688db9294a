package io.reverb.rpc.internal;

import static io.reverb.rpc.internal.RecordingConnection.frameTypes;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.BytesValue;
import com.google.protobuf.Int32Value;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.TestService;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A client may send a call one message before it is asked, then as many as the server's REQUEST_N allowed: a
 * MESSAGE beyond that credit is a protocol error (GOAWAY, the connection closed), counted before anything of it is
 * copied or inflated, never queued. Driven by hand with frames no client call would write.
 */
class RequestCreditTest
{
    private static final Marshaller<Int32Value> INT = ProtoMarshaller.of(Int32Value.getDefaultInstance());
    private final TestService service = new TestService();
    private final ServerRuntime server = TestRuntimes.server(service);
    private final WireFrames frames = new WireFrames();

    private static List<FrameType> written(final RecordingConnection transport)
    {
        final List<FrameType> types = new ArrayList<>();
        for (final byte[] message : transport.messages)
        {
            types.addAll(frameTypes(message));
        }
        return types;
    }

    private static String text(final RecordingConnection transport)
    {
        final StringBuilder all = new StringBuilder();
        for (final byte[] message : transport.messages)
        {
            all.append(new String(message, StandardCharsets.ISO_8859_1));
        }
        return all.toString();
    }

    /** A server-streaming call's CALL and two requests, the second beyond the one granted: a protocol error. */
    private ServerWireConnection secondRequestOfAServerStreamingCall(final RecordingConnection transport)
    {
        final ServerWireConnection connection = new ServerWireConnection(server, transport);
        connection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(
            frames.call(1, TestService.NEVER, 1),
            frames.message(1, INT, Int32Value.of(1), false),
            frames.message(1, INT, Int32Value.of(2), false))));
        return connection;
    }

    @Test
    void shouldFailTheConnectionWhenAServerStreamingCallSendsASecondRequest()
    {
        final RecordingConnection transport = new RecordingConnection(false);
        final ServerWireConnection connection = secondRequestOfAServerStreamingCall(transport);

        assertThat(written(transport)).as("a GOAWAY tells the client why").contains(FrameType.GOAWAY);
        assertThat(text(transport)).contains("protocol error").contains("beyond the 1 message(s) granted by REQUEST_N");
        assertThat(connection.closed).as("the connection is closed").isTrue();
        assertThat(connection.streams.isEmpty()).as("its call ended with it").isTrue();
    }

    @Test
    void shouldFailTheConnectionWhenAUnaryCallSendsASecondRequest()
    {
        // both in one read batch: the call is still open (its start waits for the batch's end) when the second comes
        final RecordingConnection transport = new RecordingConnection(true);
        final ServerWireConnection connection = new ServerWireConnection(server, transport);
        final Marshaller<BytesValue> bytes = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        connection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(
            frames.call(1, TestService.SIZE, 1),
            frames.message(1, bytes, BytesValue.getDefaultInstance(), false),
            frames.message(1, bytes, BytesValue.getDefaultInstance(), false))));
        connection.onReadComplete(transport);

        assertThat(connection.closed).as("the connection is closed, not only the call").isTrue();
        assertThat(text(transport)).contains("beyond the 1 message(s) granted by REQUEST_N");
    }

    @Test
    void shouldLogProtocolErrorsThroughTheLimiterHoweverManyConnectionsMakeThem()
    {
        // a peer that reconnects to break the protocol again and again: one line offered per connection, and the
        // limiter (LogLimiterTest) lets a burst through, then a line per interval
        final long before = WireWriter.PEER_LOG.offered();
        for (int i = 0; i < 100; i++)
        {
            assertThat(secondRequestOfAServerStreamingCall(new RecordingConnection(false)).closed).isTrue();
        }
        assertThat(WireWriter.PEER_LOG.offered() - before).isEqualTo(100);
    }

    @Test
    void shouldAcceptEveryMessageWithinTheCreditTheHandlersDemandGranted()
    {
        final RecordingConnection transport = new RecordingConnection(false);
        final ServerWireConnection connection = new ServerWireConnection(server, transport);
        final List<byte[]> batch = new ArrayList<>();
        batch.add(frames.call(1, TestService.SUM, 1));
        for (int i = 1; i <= 100; i++)
        {
            batch.add(frames.message(1, INT, Int32Value.of(i), false));
        }
        batch.add(frames.halfClose(1));
        connection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(batch.toArray(new byte[0][]))));

        assertThat(connection.closed).isFalse();
        assertThat(written(transport)).doesNotContain(FrameType.GOAWAY).contains(FrameType.STATUS);
    }
}
