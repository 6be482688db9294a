package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.BytesValue;
import com.google.protobuf.ByteString;
import com.google.protobuf.Int32Value;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.wire.FrameCodec;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * What a hostile server can make a client hold, driven by hand over a recorded transport: responses beyond the
 * demand the client granted (they queued without bound: with gzip, ~4 KiB on the wire became ~4 MiB of heap each)
 * fail their call RESOURCE_EXHAUSTED (a handler that ignores back-pressure fails only its own call); a GOAWAY "too
 * many pings" repeated on one connection backs the keep-alive off once (each doubled it, until keep-alive was off
 * for the channel for good, and logged a line each); response headers and trailers over the client's metadata limit
 * (8 KiB by default, as grpc-java's) fail their call RESOURCE_EXHAUSTED instead of being held with it.
 */
class HostileServerTest
{
    private static final Marshaller<BytesValue> BYTES = ProtoMarshaller.of(BytesValue.getDefaultInstance());

    private final RecordingConnection clientSide = new RecordingConnection(false);
    private final ClientTransportImpl channel = TestRuntimes.channel();
    private final ClientWireConnection client = new ClientWireConnection(channel, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
        ClientWireConnection.LAST_STREAM_ID);
    private final WireFrames frames = new WireFrames();

    HostileServerTest()
    {
        client.attach(clientSide);
    }

    @AfterEach
    void tearDown()
    {
        client.closeWithError(Status.UNAVAILABLE);
    }

    private Recorder<BytesValue> rangeCall(final long demand)
    {
        final StreamingClientCall<Int32Value, BytesValue> call = new StreamingClientCall<>(channel, TestService.RANGE,
            Mono.just(Int32Value.of(1_000)), null, null, null, false);
        final Recorder<BytesValue> recorder = new Recorder<>();
        call.actual = recorder;
        call.request(demand); // granted with the CALL
        call.onConnection(client);
        return recorder;
    }

    private void serverSends(final byte[] frame)
    {
        client.onMessage(clientSide, ByteBuffer.wrap(frame));
    }

    private static byte[] encode(final OutboundFrame frame)
    {
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(frame.length()));
        frame.encode(new FrameEncoder(), buffer, 0);
        return buffer.array();
    }

    @Test
    void shouldRefuseResponsesBeyondTheDemandGranted()
    {
        final Recorder<BytesValue> recorder = rangeCall(2);
        final byte[] response = frames.message(1, BYTES, BytesValue.of(ByteString.copyFrom(new byte[1024])), false);
        serverSends(response);
        serverSends(response);
        assertThat(client.closed).as("within the grant").isFalse();
        assertThat(recorder.values).hasSize(2);

        serverSends(response);
        assertThat(recorder.values).as("a response beyond the grant is not delivered").hasSize(2);
        assertThat(recorder.error).isInstanceOf(RpcException.class);
        assertThat(((RpcException)recorder.error).status().code()).isEqualTo(StatusCode.RESOURCE_EXHAUSTED);
        assertThat(client.closed).as("that call fails; the connection's others go on").isFalse();
        serverSends(response); // what follows for it is dropped as late
        assertThat(recorder.values).hasSize(2);
    }

    @Test
    void shouldCountADemandTheWireCallsUnboundedAsUnbounded()
    {
        // 2^31 - 1 travels as "unbounded" (REQUEST_N's largest value): granted as such, not as a finite count that a
        // long stream would overrun
        final Recorder<BytesValue> recorder = rangeCall(Integer.MAX_VALUE);
        final byte[] response = frames.message(1, BYTES, BytesValue.of(ByteString.copyFrom(new byte[16])), false);
        serverSends(response);
        assertThat(recorder.values).hasSize(1);
        final RpcStream stream = client.streams.get(1);
        assertThat(stream.creditGranted()).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void shouldTakeResponsesAsTheDemandGrowsWithoutLimit()
    {
        final Recorder<BytesValue> recorder = rangeCall(Long.MAX_VALUE);
        final byte[] response = frames.message(1, BYTES, BytesValue.of(ByteString.copyFrom(new byte[16])), false);
        for (int i = 0; i < 10_000; i++)
        {
            serverSends(response);
        }
        assertThat(client.closed).isFalse();
        assertThat(recorder.values).hasSize(10_000);
    }

    @Test
    void shouldBackTheKeepAliveOffOnceHoweverOftenTheServerRepeatsTooManyPings()
    {
        final long before = channel.keepAliveNanos();
        final byte[] goAway = encode(new OutboundFrame.GoAway(Integer.MAX_VALUE,
            Status.RESOURCE_EXHAUSTED.withDescription(KeepAliveEnforcer.TOO_MANY_PINGS)));
        final byte[][] many = new byte[1_000][];
        Arrays.fill(many, goAway);
        serverSends(WireFrames.concat(many));
        assertThat(channel.keepAliveNanos()).as("doubled once").isEqualTo(2 * before);
        assertThat(Duration.ofNanos(channel.keepAliveNanos())).isEqualTo(Duration.ofSeconds(60));
    }

    private static Metadata metadataOf(final int bytes)
    {
        final Metadata metadata = new Metadata();
        metadata.put(Metadata.Key.of("x-big", Metadata.ASCII_STRING_MARSHALLER), "x".repeat(bytes));
        return metadata;
    }

    @Test
    void shouldFailACallWhoseHeadersAreOverTheLimit()
    {
        final Recorder<BytesValue> recorder = rangeCall(10);
        serverSends(encode(new OutboundFrame.Headers(1, metadataOf(9_000))));
        assertThat(recorder.error).isInstanceOf(RpcException.class);
        assertThat(((RpcException)recorder.error).status().code()).isEqualTo(StatusCode.RESOURCE_EXHAUSTED);
        assertThat(client.closed).as("the call fails, the connection goes on").isFalse();
    }

    @Test
    void shouldFailACallWhoseTrailersAreOverTheLimitWithoutHoldingThem()
    {
        final Recorder<BytesValue> recorder = rangeCall(10);
        serverSends(encode(new OutboundFrame.StatusFrame(1, Status.INTERNAL.withDescription("boom"),
            metadataOf(3 << 20))));
        assertThat(recorder.error).isInstanceOf(RpcException.class);
        final RpcException error = (RpcException)recorder.error;
        assertThat(error.status().code()).isEqualTo(StatusCode.RESOURCE_EXHAUSTED);
        assertThat(error.trailers() == null || error.trailers().keys().isEmpty()).as("the trailers are not held").isTrue();
    }

    @Test
    void shouldTakeMetadataWithinTheLimit()
    {
        final Recorder<BytesValue> recorder = rangeCall(10);
        serverSends(encode(new OutboundFrame.Headers(1, metadataOf(4_000))));
        serverSends(encode(new OutboundFrame.StatusFrame(1, Status.INTERNAL.withDescription("boom"), metadataOf(4_000))));
        assertThat(((RpcException)recorder.error).status().code()).isEqualTo(StatusCode.INTERNAL);
    }
}
