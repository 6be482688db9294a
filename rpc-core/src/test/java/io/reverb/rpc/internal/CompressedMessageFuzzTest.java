package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import io.reverb.rpc.TestService;
import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.compression.GzipCodec;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.wire.FrameCodec;
import io.reverb.rpc.wire.FrameHeaderFlyweight;
import io.reverb.rpc.wire.FrameType;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import reactor.core.scheduler.Schedulers;

/**
 * Fuzz target for the body of a COMPRESSED MESSAGE (issue 38): the codec name's length, the name, and the compressed
 * bytes, as a client sends them in a call to a server whose inbound limit is 64 KiB. The inflater lane runs inline so
 * that each input is judged when it returns. In {@code mvn verify} it runs over the checked-in corpus
 * ({@code src/test/resources/io/reverb/rpc/internal/CompressedMessageFuzzTestInputs/compressedRequestBody/}); to fuzz
 * it for minutes, see FUZZING.md.
 *
 * <p>Must hold for any body: nothing escapes but a protocol error for a malformed name (the connection closes); else
 * the call ends with a STATUS and the connection goes on; the connection's inflation budget is all given back; the
 * inflater never held more than two arrays of the limit.
 */
class CompressedMessageFuzzTest
{
    private static final int LIMIT = 64 * 1024;
    private static final ServerRuntime SERVER = new ServerRuntime(new ServerConfig("inproc://unused",
        List.of(new TestService().bindService()), List.of(), null, Schedulers.parallel(), LIMIT, null, Duration.ZERO,
        TransportOptions.EMPTY));

    static
    {
        SERVER.inflaterOverride = Runnable::run;
    }

    @FuzzTest
    void compressedRequestBody(final byte[] body)
    {
        final RecordingConnection transport = new RecordingConnection(false);
        final ServerWireConnection connection = new ServerWireConnection(SERVER, transport);
        final WireFrames frames = new WireFrames();
        final byte[] call = frames.call(1, TestService.SIZE, 1);
        final byte[] message = rawCompressedMessage(1, body);
        try
        {
            connection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(call, message)));
            check(connection, transport, body);
        }
        finally
        {
            // as the transport does when a connection goes away: the connection's timers (keep-alive) are cancelled,
            // so that nothing of one input outlives it (without this, a five-minute fuzzing run kept ~470,000 connections
            // and their keep-alive tasks and ran out of its 1 GiB heap)
            connection.onClose(transport, null);
        }
    }

    private static void check(final ServerWireConnection connection, final RecordingConnection transport,
        final byte[] body)
    {
        final List<FrameType> written = new ArrayList<>();
        transport.messages.forEach(m -> written.addAll(RecordingConnection.frameTypes(m)));
        if (connection.closed)
        {
            assertThat(written).as("a protocol error says so").contains(FrameType.GOAWAY);
        }
        else
        {
            assertThat(written).as("the call ended").contains(FrameType.STATUS);
            assertThat(connection.streams.isEmpty()).isTrue();
        }
        assertThat(connection.inflationBudget.used()).as("budget given back").isZero();
        assertThat(connection.inflationBudget.peak()).isLessThanOrEqualTo(2L * (LIMIT + 1) + body.length +
            InflationLane.ENTRY_OVERHEAD);
    }

    /** A MESSAGE flagged COMPRESSED whose body is the bytes as they are (no name is added). */
    private static byte[] rawCompressedMessage(final int streamId, final byte[] body)
    {
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(FrameEncoder.HEADER + body.length));
        new FrameHeaderFlyweight().wrap(buffer, 0).header(FrameEncoder.HEADER + body.length,
            FrameType.MESSAGE, FrameType.Flags.COMPRESSED | FrameType.Flags.END_STREAM, streamId);
        buffer.put(FrameEncoder.HEADER, body);
        return buffer.array();
    }

    /**
     * Writes the seed corpus (run once by hand; the files are checked in): {@code java -cp ...
     * io.reverb.rpc.internal.CompressedMessageFuzzTest
     * rpc-core/src/test/resources/io/reverb/rpc/internal/CompressedMessageFuzzTestInputs}.
     *
     * @param args the corpus directory.
     * @throws IOException if writing fails.
     */
    public static void main(final String[] args) throws IOException
    {
        final Path dir = Files.createDirectories(Path.of(args[0]).resolve("compressedRequestBody"));
        final byte[] request = BytesValue.newBuilder()
            .setValue(ByteString.copyFromUtf8("seed seed seed seed")).build().toByteArray();
        Files.write(dir.resolve("gzip"), body(GzipCodec.NAME, WireFrames.gzip(request)));
        // inflates to 1 MiB, past the 64 KiB limit
        Files.write(dir.resolve("gzip-bomb"), body(GzipCodec.NAME, WireFrames.gzip(new byte[1 << 20])));
        final byte[] lying = WireFrames.gzip(request);
        lying[lying.length - 1] = 0x7f; // the trailer claims 2 GiB
        Files.write(dir.resolve("gzip-lying-trailer"), body(GzipCodec.NAME, lying));
        final byte[] truncated = WireFrames.gzip(new byte[4096]);
        Files.write(dir.resolve("gzip-truncated"), body(GzipCodec.NAME,
            Arrays.copyOf(truncated, truncated.length / 2)));
        Files.write(dir.resolve("unknown-codec"), body("zstd", WireFrames.gzip(request)));
        Files.write(dir.resolve("bad-name"), body("GZ/..", WireFrames.gzip(request)));
        Files.write(dir.resolve("name-only"), new byte[] {4, 'g', 'z', 'i', 'p'});
        Files.write(dir.resolve("name-too-long"), new byte[] {(byte)200, 'g', 'z'});
        assertThat(CodecRegistry.defaults().names()).contains(GzipCodec.NAME);
    }

    private static byte[] body(final String name, final byte[] compressed)
    {
        final byte[] n = name.getBytes(StandardCharsets.US_ASCII);
        final byte[] body = new byte[1 + n.length + compressed.length];
        body[0] = (byte)n.length;
        System.arraycopy(n, 0, body, 1, n.length);
        System.arraycopy(compressed, 0, body, 1 + n.length, compressed.length);
        return body;
    }
}
