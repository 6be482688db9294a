package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.TestService;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * A call's request metadata is held for the whole call: without a bound one CALL frame (up to the largest message
 * and its headroom, about 4 MiB) could bring some 600,000 entries, and 4,096 calls that never send their request a
 * connection's worth of them. As grpc-java's servers, a call may bring
 * {@link RpcServer.Builder#DEFAULT_MAX_INBOUND_METADATA_SIZE} bytes of it (name, value and 32 per entry); more is
 * answered RESOURCE_EXHAUSTED before any handler runs, and the connection serves on.
 */
class RequestMetadataLimitTest
{
    private static final String REQUEST = "echo-this-request";
    private final TestService service = new TestService();
    private final ServerRuntime server = TestRuntimes.server(service);
    private final WireFrames frames = new WireFrames();

    /** @return metadata of {@code entries} entries of {@code valueBytes} each, counted as gRPC does. */
    private static Metadata metadata(final int entries, final int valueBytes)
    {
        final Metadata metadata = new Metadata();
        for (int i = 0; i < entries; i++)
        {
            metadata.putRaw(String.format("k%03d", i), new byte[valueBytes]); // 4-byte names
        }
        return metadata;
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

    private RecordingConnection echo(final int id, final Metadata metadata)
    {
        final RecordingConnection transport = new RecordingConnection(false);
        final ServerWireConnection connection = new ServerWireConnection(server, transport);
        connection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(
            frames.call(id, TestService.ECHO, 1, metadata),
            frames.message(id, ProtoMarshaller.of(StringValue.getDefaultInstance()), StringValue.of(REQUEST), false),
            frames.halfClose(id))));
        assertThat(connection.closed).as("no protocol error: the connection serves on").isFalse();
        assertThat(connection.streams.isEmpty()).isTrue();
        return transport;
    }

    @Test
    void shouldServeACallWithMetadataUpToTheLimit()
    {
        // 64 entries of 4 + 92 + 32 = 128 bytes: exactly 8,192
        final RecordingConnection transport = echo(1, metadata(64, 92));
        assertThat(text(transport)).as("echoed").contains(REQUEST).doesNotContain("maxInboundMetadataSize");
    }

    @Test
    void shouldRefuseACallWithMoreMetadataBeforeAnyHandlerRuns()
    {
        final RecordingConnection transport = echo(1, metadata(64, 93));
        assertThat(text(transport)).contains("request metadata of 8256 bytes is over the server's limit of 8192")
            .contains("RpcServer.Builder.maxInboundMetadataSize").as("no handler ran").doesNotContain(REQUEST);
    }

    @Test
    void shouldRefuseManySmallEntriesAsOneLargeValue()
    {
        assertThat(text(echo(1, metadata(300, 0)))).contains("over the server's limit").doesNotContain(REQUEST);
        assertThat(text(echo(1, metadata(1, 9000)))).contains("over the server's limit").doesNotContain(REQUEST);
    }
}
