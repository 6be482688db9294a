package io.reverb.rpc.wire;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.TestService;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.testing.RawConnectionHandler;
import io.reverb.common.ClaimResult;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportProvider;
import io.reverb.rpc.transport.Transports;
import io.reverb.common.WriteClaim;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.AfterAll;

/**
 * Fuzz targets for rpc-core's decoders (issue 13): every frame type as the server and as the client
 * decodes it, and the metadata block. In {@code mvn verify} they run in regression mode over the
 * checked-in corpus ({@code src/test/resources/io/reverb/rpc/wire/FrameDecoderFuzzTestInputs/<target>/});
 * to fuzz one for minutes, see FUZZING.md at the repository root.
 *
 * <p>What must hold for any bytes: nothing escapes the decoder but a protocol error (which closes that
 * connection), and the server keeps serving a well-behaved client; a client call answered with garbage
 * ends (with an error) instead of hanging.
 */
class FrameDecoderFuzzTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static RpcServer server;
    private static RpcChannel goodChannel;
    private static URI serverUri;

    private static synchronized void startServer() throws IOException
    {
        if (server == null)
        {
            final String uri = "inproc://fuzz-server-" + ProcessHandle.current().pid();
            server = RpcServer.builder(uri).addService(new TestService()).build().start();
            serverUri = Transports.parse(uri);
            goodChannel = RpcChannel.builder(uri).build();
        }
    }

    @AfterAll
    static void stop()
    {
        if (goodChannel != null)
        {
            goodChannel.close();
            goodChannel = null;
        }
        if (server != null)
        {
            server.close();
            server = null;
        }
    }

    private static void send(final Connection connection, final byte[] bytes)
    {
        if (bytes.length == 0)
        {
            return; // the transport SPI carries no empty messages
        }
        final WriteClaim claim = new WriteClaim();
        if (connection.tryClaim(bytes.length, claim) == ClaimResult.OK)
        {
            claim.buffer().put(claim.offset(), bytes);
            claim.commit();
        }
    }

    /** Up to four transport messages of any bytes, as a client would send them to the server. */
    @FuzzTest
    void serverDecodesAnyFrames(final FuzzedDataProvider data) throws Exception
    {
        startServer();
        final TransportProvider provider = Transports.providerFor(serverUri);
        final Connection raw = provider.connect(serverUri, new RawConnectionHandler()).get(10, TimeUnit.SECONDS);
        try
        {
            final int messages = data.consumeInt(1, 4);
            for (int i = 0; i < messages && raw.isOpen(); i++)
            {
                send(raw, i == messages - 1 ? data.consumeRemainingAsBytes() : data.consumeBytes(data.consumeInt(0, 512)));
            }
        }
        finally
        {
            raw.close();
        }
        final StringValue answer = ClientCalls.unary(goodChannel, TestService.ECHO, CallOptions.DEFAULT,
            StringValue.of("still serving")).block(Duration.ofSeconds(10));
        assertThat(answer.getValue()).isEqualTo("still serving");
    }

    /** A server that answers a call with any bytes: the client's call must end, with an error or an answer. */
    @FuzzTest
    void clientDecodesAnyFrames(final byte[] answer) throws Exception
    {
        final String uri = "inproc://fuzz-client-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
        final URI parsed = Transports.parse(uri);
        final ServerListener listener = Transports.providerFor(parsed).listen(parsed, connection -> new ConnectionHandler()
        {
            @Override
            public void onMessage(final Connection c, final ByteBuffer message)
            {
                send(c, answer);
            }

            @Override
            public void onWritable(final Connection c)
            {
            }

            @Override
            public void onClose(final Connection c, final Throwable cause)
            {
            }
        });
        final RpcChannel channel = RpcChannel.builder(uri).build();
        try
        {
            ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT.withDeadlineAfter(Duration.ofMillis(300)),
                StringValue.of("hello")).block(Duration.ofSeconds(10));
        }
        catch (final RpcException expected)
        {
            // Garbage answers end the call with a status: fine.
        }
        finally
        {
            channel.close();
            listener.close();
        }
    }

    /** The metadata block: a protocol error, or entries that encode back to the same bytes. */
    @FuzzTest
    void metadataDecodes(final byte[] block) throws Exception
    {
        final ByteBuffer buffer = ByteBuffer.wrap(block).order(ByteOrder.LITTLE_ENDIAN);
        final Metadata metadata = new Metadata();
        final int end;
        try
        {
            end = FrameCodec.getMetadata(buffer, 0, block.length, metadata);
        }
        catch (final ProtocolException expected)
        {
            return;
        }
        assertThat(end).isBetween(2, block.length);
        final ByteBuffer again = ByteBuffer.allocate(FrameCodec.metadataLength(metadata)).order(ByteOrder.LITTLE_ENDIAN);
        FrameCodec.putMetadata(again, 0, metadata);
        final Metadata decoded = new Metadata();
        assertThat(FrameCodec.getMetadata(again, 0, again.capacity(), decoded)).isEqualTo(again.capacity());
        assertThat(decoded.size()).isEqualTo(metadata.size());
    }

    /**
     * Writes the seed corpus (run once by hand; the files are checked in):
     * {@code java -cp ... io.reverb.rpc.wire.FrameDecoderFuzzTest
     * rpc-core/src/test/resources/io/reverb/rpc/wire/FrameDecoderFuzzTestInputs}.
     *
     * @param args the corpus directory.
     * @throws IOException if writing fails.
     */
    public static void main(final String[] args) throws IOException
    {
        final Path root = Path.of(args[0]);
        final Path server = Files.createDirectories(root.resolve("serverDecodesAnyFrames"));
        final Path client = Files.createDirectories(root.resolve("clientDecodesAnyFrames"));
        final Path metadata = Files.createDirectories(root.resolve("metadataDecodes"));
        final Metadata md = new Metadata();
        md.put(Metadata.Key.of("user-agent", Metadata.ASCII_STRING_MARSHALLER), "fuzz");
        md.put(Metadata.Key.of("trace-bin", Metadata.BINARY_BYTE_MARSHALLER), new byte[] {1, 2, 3});
        final String method = TestService.SERVICE + "/Echo";
        final byte[] message = StringValue.of("seed").toByteArray();

        // Server side: one seed per frame type a client may send, and a whole call.
        final ByteBuffer call = frame(FrameType.CALL, 0, 1, body(b ->
        {
            b.putLong(TimeUnit.SECONDS.toNanos(5)).putInt(Integer.MAX_VALUE).putShort((short)method.length());
            b.put(method.getBytes(StandardCharsets.US_ASCII));
            final ByteBuffer m = ByteBuffer.allocate(FrameCodec.metadataLength(md)).order(ByteOrder.LITTLE_ENDIAN);
            FrameCodec.putMetadata(m, 0, md);
            b.put(m);
        }));
        final ByteBuffer msg = frame(FrameType.MESSAGE, FrameType.Flags.END_STREAM, 1, body(b -> b.put(message)));
        write(server, "call-message", oneMessage(concat(call, msg)));
        write(server, "half-close", oneMessage(concat(call, frame(FrameType.HALF_CLOSE, 0, 1, body(b -> { })))));
        write(server, "request-n", oneMessage(concat(call, frame(FrameType.REQUEST_N, 0, 1, body(b -> b.putInt(3))))));
        write(server, "cancel", oneMessage(concat(call, frame(FrameType.CANCEL, 0, 1, body(b -> b.putInt(1))))));
        write(server, "ping", oneMessage(frame(FrameType.PING, 0, 0, body(b -> b.putLong(42)))));
        write(server, "goaway", oneMessage(frame(FrameType.GOAWAY, 0, 0,
            body(b -> b.putInt(0).putInt(0).putInt(2).put(new byte[] {'b', 'y'})))));
        write(server, "bad-length", oneMessage(frame(FrameType.MESSAGE, 0, 1, body(b -> b.putInt(0, -5)))));
        // a compressed request: the codec's name, then the message gzipped; and one whose name is empty
        final byte[] gzipped = gzip(message);
        final ByteBuffer compressed = frame(FrameType.MESSAGE, FrameType.Flags.END_STREAM | FrameType.Flags.COMPRESSED, 1,
            body(b -> b.put((byte)4).put("gzip".getBytes(StandardCharsets.US_ASCII)).put(gzipped)));
        write(server, "call-compressed-message", oneMessage(concat(call, compressed)));
        write(server, "compressed-empty-codec-name", oneMessage(concat(call, frame(FrameType.MESSAGE,
            FrameType.Flags.COMPRESSED, 1, body(b -> b.put((byte)0).put(gzipped))))));

        // Client side: answers to one call (stream id 1).
        final ByteBuffer headers = frame(FrameType.HEADERS, 0, 1, body(b ->
        {
            final ByteBuffer m = ByteBuffer.allocate(FrameCodec.metadataLength(md)).order(ByteOrder.LITTLE_ENDIAN);
            FrameCodec.putMetadata(m, 0, md);
            b.put(m);
        }));
        final ByteBuffer status = frame(FrameType.STATUS, 0, 1, body(b -> b.putInt(0).putInt(2)
            .put(new byte[] {'o', 'k'}).putShort((short)0)));
        write(client, "headers-message-status", concat(concat(headers, msg), status).array());
        write(client, "status-only", status.array());
        write(client, "headers-compressed-message-status", concat(concat(headers, compressed), status).array());
        write(client, "request-n", frame(FrameType.REQUEST_N, 0, 1, body(b -> b.putInt(1))).array());
        write(client, "ping-ack", frame(FrameType.PING, FrameType.Flags.ACK, 0, body(b -> b.putLong(7))).array());
        write(client, "goaway", frame(FrameType.GOAWAY, 0, 0, body(b -> b.putInt(0).putInt(14).putInt(-1))).array());

        final ByteBuffer block = ByteBuffer.allocate(FrameCodec.metadataLength(md)).order(ByteOrder.LITTLE_ENDIAN);
        FrameCodec.putMetadata(block, 0, md);
        write(metadata, "two-entries", block.array());
        write(metadata, "empty", new byte[2]);
    }

    private interface Body
    {
        void write(ByteBuffer b);
    }

    private static ByteBuffer body(final Body body)
    {
        final ByteBuffer b = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);
        body.write(b);
        b.flip();
        return b;
    }

    private static ByteBuffer frame(final FrameType type, final int flags, final int streamId, final ByteBuffer body)
    {
        final int length = FrameHeaderFlyweight.HEADER_LENGTH + body.remaining();
        final ByteBuffer b = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
        new FrameHeaderFlyweight().wrap(b, 0).header(length, type, flags, streamId);
        b.position(FrameHeaderFlyweight.HEADER_LENGTH);
        b.put(body.duplicate());
        return b;
    }

    private static ByteBuffer concat(final ByteBuffer a, final ByteBuffer b)
    {
        final ByteBuffer c = ByteBuffer.allocate(a.capacity() + b.capacity());
        c.put(a.array()).put(b.array());
        return c;
    }

    /**
     * The FuzzedDataProvider layout of one message holding all of {@code payload}: the message count is
     * consumed from the end of the input (four zero bytes: one message), the message takes the rest.
     */
    private static byte[] oneMessage(final ByteBuffer payload)
    {
        final byte[] bytes = new byte[payload.capacity() + 4];
        System.arraycopy(payload.array(), 0, bytes, 0, payload.capacity());
        return bytes;
    }

    private static byte[] gzip(final byte[] bytes) throws IOException
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream gzip = new GZIPOutputStream(out))
        {
            gzip.write(bytes);
        }
        return out.toByteArray();
    }

    private static void write(final Path dir, final String name, final byte[] bytes) throws IOException
    {
        Files.write(dir.resolve(name), bytes);
    }
}
