package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import io.reverb.rpc.compression.Codec;
import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.compression.GzipCodec;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Message compression over one transport (subclassed per transport, as {@link AbstractRpcTransportTest}): gzip per
 * call, per channel and per server, the minimum size, messages that do not shrink, unknown codecs, corrupt bytes and
 * zip bombs. What travels compressed is observed, not assumed: both ends' registries hold a counting gzip under the
 * name "gzip", so a decompression on the receiving side proves that the COMPRESSED flag and the codec name crossed
 * the transport. Every test ends with the transport's buffers back, and the failures leave the one connection
 * serving.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class AbstractCompressionTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final String SERVICE = "reverb.test.Compression";
    private static final Marshaller<BytesValue> BYTES = ProtoMarshaller.of(BytesValue.getDefaultInstance());
    private static final MethodDescriptor<BytesValue, BytesValue> ECHO = method("Echo", MethodDescriptor.MethodType.UNARY);
    private static final MethodDescriptor<BytesValue, BytesValue> BIDI =
        method("Bidi", MethodDescriptor.MethodType.BIDI_STREAMING);
    /** Responds with the request, compressed with the codec named in the request's first byte's metadata. */
    private static final MethodDescriptor<BytesValue, BytesValue> ECHO_AS =
        method("EchoAs", MethodDescriptor.MethodType.UNARY);
    private static final Metadata.Key<String> RESPOND_WITH = Metadata.Key.of("respond-with", Metadata.ASCII_STRING_MARSHALLER);

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final CountingCodec clientGzip = new CountingCodec(GzipCodec.INSTANCE);
    private final CountingCodec serverGzip = new CountingCodec(GzipCodec.INSTANCE);
    private final AtomicInteger connections = new AtomicInteger();
    private String serverUri;

    /**
     * @return a fresh server address for this transport.
     */
    protected abstract String newServerUri();

    /**
     * @return the transport's resource accounting, which must return to zero after each test.
     */
    protected ResourceUsage transportUsage()
    {
        return Transports.providerFor(Transports.parse(serverUri)).resourceUsage();
    }

    private static MethodDescriptor<BytesValue, BytesValue> method(final String name, final MethodDescriptor.MethodType type)
    {
        return MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .type(type)
            .fullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
            .requestMarshaller(BYTES)
            .responseMarshaller(BYTES)
            .build();
    }

    /**
     * @param size the message's value length.
     * @param seed varies the text.
     * @return a message that gzip shrinks to a few percent: text-like, repetitive.
     */
    protected static BytesValue compressible(final int size, final int seed)
    {
        final byte[] bytes = new byte[size];
        final byte[] word = ("reverb-" + seed + " compresses this line; ").getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i < size; i++)
        {
            bytes[i] = word[i % word.length];
        }
        return BytesValue.of(ByteString.copyFrom(bytes));
    }

    private static BytesValue random(final int size)
    {
        final byte[] bytes = new byte[size];
        new Random(42).nextBytes(bytes);
        return BytesValue.of(ByteString.copyFrom(bytes));
    }

    private RpcChannel start(final UnaryOperator<RpcServer.Builder> server, final UnaryOperator<RpcChannel.Builder> channel)
    {
        serverUri = newServerUri();
        final ServiceDefinition service = ServiceDefinition.builder(SERVICE)
            .addMethod(ECHO, ServerCalls.unary(Mono::just))
            .addMethod(BIDI, ServerCalls.bidiStreaming(requests -> requests))
            .addMethod(ECHO_AS, ServerCalls.unary(request -> RpcContext.current().map(context ->
            {
                context.responseCompression(context.metadata().get(RESPOND_WITH));
                return request;
            })))
            .build();
        final RpcServer s = server.apply(RpcServer.builder(serverUri).addService(service)
            .codecRegistry(CodecRegistry.defaults().with(serverGzip))
            .addConnectionListener(new AcceptedConnection.Listener()
            {
                @Override
                public void connectionAccepted(final AcceptedConnection connection)
                {
                    connections.incrementAndGet();
                }

                @Override
                public void connectionClosed(final AcceptedConnection connection, final Throwable cause)
                {
                }
            })).build().start();
        closeables.add(s);
        final RpcChannel c = channel.apply(RpcChannel.builder(serverUri)
            .codecRegistry(CodecRegistry.defaults().with(clientGzip))).build();
        closeables.add(c);
        return c;
    }

    @AfterEach
    void closeAndCheckForLeaks() throws Exception
    {
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
        if (serverUri == null)
        {
            return;
        }
        final ResourceUsage usage = transportUsage();
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (usage.buffersInUse() != 0 || usage.bytesInUse() != 0)
        {
            if (System.nanoTime() - deadline > 0)
            {
                fail("transport resources leaked: " + usage.describe());
            }
            Thread.sleep(5);
        }
    }

    private static BytesValue echo(final RpcChannel channel, final CallOptions options, final BytesValue request)
    {
        return ClientCalls.unary(channel, ECHO, options, request).block(TIMEOUT);
    }

    private static StatusCode codeOf(final Throwable t)
    {
        assertThat(t).isInstanceOf(RpcException.class);
        return ((RpcException)t).status().code();
    }

    @Test
    void shouldCompressOneCallBothWaysWhenTheCallAndTheServerAskForGzip()
    {
        final RpcChannel channel = start(b -> b.compression("gzip"), b -> b);
        final BytesValue request = compressible(256 * 1024, 1);

        assertThat(echo(channel, CallOptions.DEFAULT.withCompression("gzip"), request)).isEqualTo(request);
        assertThat(clientGzip.compressed.get()).as("requests compressed").isEqualTo(1);
        assertThat(serverGzip.decompressed.get()).as("requests decompressed by the server").isEqualTo(1);
        assertThat(serverGzip.compressed.get()).as("responses compressed").isEqualTo(1);
        assertThat(clientGzip.decompressed.get()).as("responses decompressed by the client").isEqualTo(1);
        // gzip shrank the 256 KiB of text to a few KiB on the wire
        assertThat(clientGzip.bytesOut.get()).isLessThan(request.getSerializedSize() / 20);

        // a call without the option goes uncompressed on the same channel (the server still compresses responses)
        assertThat(echo(channel, CallOptions.DEFAULT, request)).isEqualTo(request);
        assertThat(clientGzip.compressed.get()).isEqualTo(1);
        assertThat(serverGzip.decompressed.get()).isEqualTo(1);
        assertThat(clientGzip.decompressed.get()).isEqualTo(2);
    }

    @Test
    void shouldCompressEveryMessageOfAChannelWithCompressionUnlessTheCallSaysIdentity()
    {
        final RpcChannel channel = start(b -> b, b -> b.compression("gzip"));
        final List<BytesValue> requests = new ArrayList<>();
        for (int i = 0; i < 8; i++)
        {
            requests.add(compressible(16 * 1024 + i, i));
        }
        final List<BytesValue> responses = ClientCalls.bidiStreaming(channel, BIDI, CallOptions.DEFAULT,
            Flux.fromIterable(requests)).collectList().block(TIMEOUT);

        assertThat(responses).isEqualTo(requests);
        assertThat(clientGzip.compressed.get()).isEqualTo(8);
        assertThat(serverGzip.decompressed.get()).isEqualTo(8);
        // the server was not asked to compress: responses travel as they are
        assertThat(serverGzip.compressed.get()).isZero();
        assertThat(clientGzip.decompressed.get()).isZero();

        assertThat(echo(channel, CallOptions.DEFAULT.withCompression("identity"), requests.get(0))).isEqualTo(requests.get(0));
        assertThat(clientGzip.compressed.get()).isEqualTo(8);
        assertThat(serverGzip.decompressed.get()).isEqualTo(8);
    }

    @Test
    void shouldSendMessagesBelowTheMinimumSizeUncompressed()
    {
        final RpcChannel channel = start(b -> b.compression("gzip").minCompressionSize(4096),
            b -> b.compression("gzip").minCompressionSize(4096));
        final BytesValue small = compressible(4000, 2); // 4003 bytes serialized
        final BytesValue atMinimum = compressible(4093, 3); // 4096 bytes serialized
        assertThat(atMinimum.getSerializedSize()).isEqualTo(4096);

        assertThat(echo(channel, CallOptions.DEFAULT, small)).isEqualTo(small);
        assertThat(clientGzip.compressed.get() + serverGzip.compressed.get()).as("compressions below the minimum").isZero();
        assertThat(clientGzip.decompressed.get() + serverGzip.decompressed.get()).isZero();

        assertThat(echo(channel, CallOptions.DEFAULT, atMinimum)).isEqualTo(atMinimum);
        assertThat(clientGzip.compressed.get()).isEqualTo(1);
        assertThat(serverGzip.decompressed.get()).isEqualTo(1);
        assertThat(serverGzip.compressed.get()).isEqualTo(1);
        assertThat(clientGzip.decompressed.get()).isEqualTo(1);
    }

    @Test
    void shouldSendAMessageThatCompressionDoesNotShrinkAsItIs()
    {
        final RpcChannel channel = start(b -> b, b -> b.compression("gzip"));
        final BytesValue noise = random(64 * 1024);

        assertThat(echo(channel, CallOptions.DEFAULT, noise)).isEqualTo(noise);
        assertThat(clientGzip.compressed.get()).as("tried").isEqualTo(1);
        assertThat(serverGzip.decompressed.get()).as("but sent plain: nothing to decompress").isZero();
    }

    @Test
    void shouldFailACallNamingACodecTheChannelLacksWithInternal()
    {
        final RpcChannel channel = start(b -> b, b -> b);
        assertThatThrownBy(() -> echo(channel, CallOptions.DEFAULT.withCompression("snappy"), compressible(4096, 4)))
            .satisfies(t -> assertThat(codeOf(t)).isEqualTo(StatusCode.INTERNAL))
            .hasMessageContaining("Unable to find compressor by name snappy");
        assertThatThrownBy(() -> RpcChannel.builder("inproc://never").compression("snappy"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no codec \"snappy\"");
    }

    @Test
    void shouldAnswerUnimplementedToARequestCompressedWithACodecTheServerLacksAndKeepServing()
    {
        final RpcChannel channel = start(b -> b, b -> b);
        final BytesValue request = compressible(8192, 5);
        final CountingCodec x = new CountingCodec(new Renamed("x-test", GzipCodec.INSTANCE));

        assertThatThrownBy(() -> echo(channel, CallOptions.DEFAULT.withCompression(x), request))
            .satisfies(t -> assertThat(codeOf(t)).isEqualTo(StatusCode.UNIMPLEMENTED))
            .hasMessageContaining("Can't find decompressor for x-test");
        assertThat(x.compressed.get()).isEqualTo(1);
        // the connection goes on serving
        assertThat(echo(channel, CallOptions.DEFAULT.withCompression("gzip"), request)).isEqualTo(request);
        assertThat(connections.get()).isEqualTo(1);
    }

    @Test
    void shouldFailWithInternalAResponseCompressedWithACodecTheClientLacks()
    {
        final CountingCodec x = new CountingCodec(new Renamed("x-test", GzipCodec.INSTANCE));
        final RpcChannel channel = start(b -> b.codecRegistry(CodecRegistry.defaults().with(serverGzip).with(x)), b -> b);
        final BytesValue request = compressible(8192, 6);
        final Metadata claimsToAccept = new Metadata();
        claimsToAccept.put(RESPOND_WITH, "x-test");
        final Metadata accepts = claimsToAccept.copy();
        accepts.put(Metadata.Key.of("grpc-accept-encoding", Metadata.ASCII_STRING_MARSHALLER), "x-test,gzip");

        // the client did not say it accepts x-test: the server answers uncompressed
        assertThat(ClientCalls.unary(channel, ECHO_AS, CallOptions.DEFAULT.withMetadata(claimsToAccept), request)
            .block(TIMEOUT)).isEqualTo(request);
        assertThat(x.compressed.get()).isZero();
        // it said so without having the codec: the call fails as grpc-java's does, the connection stays
        assertThatThrownBy(() -> ClientCalls.unary(channel, ECHO_AS, CallOptions.DEFAULT.withMetadata(accepts), request)
            .block(TIMEOUT))
            .satisfies(t -> assertThat(codeOf(t)).isEqualTo(StatusCode.INTERNAL))
            .hasMessageContaining("Can't find decompressor for x-test");
        assertThat(x.compressed.get()).isEqualTo(1);
        // gzip needs no accept-encoding: every peer has it
        final Metadata gzip = new Metadata();
        gzip.put(RESPOND_WITH, "gzip");
        assertThat(ClientCalls.unary(channel, ECHO_AS, CallOptions.DEFAULT.withMetadata(gzip), request).block(TIMEOUT))
            .isEqualTo(request);
        assertThat(clientGzip.decompressed.get()).isEqualTo(1);
        assertThat(connections.get()).isEqualTo(1);
    }

    @Test
    void shouldRefuseARequestThatInflatesPastTheServersLimitAndKeepServing()
    {
        final int limit = 64 * 1024;
        final RpcChannel channel = start(b -> b.maxInboundMessageSize(limit), b -> b);
        // 16 MiB of zeros: about 16 KiB compressed, far below the limit on the wire
        final BytesValue bomb = BytesValue.of(ByteString.copyFrom(new byte[16 << 20]));

        assertThatThrownBy(() -> echo(channel, CallOptions.DEFAULT.withCompression("gzip"), bomb))
            .satisfies(t -> assertThat(codeOf(t)).isEqualTo(StatusCode.RESOURCE_EXHAUSTED))
            .hasMessageContaining("decompressed request message exceeds the limit of " + limit + " bytes");
        assertThat(clientGzip.bytesOut.get()).isLessThan(limit);
        // just under the limit decompressed is fine, and the one connection serves on
        final BytesValue fits = compressible(limit - 8, 7);
        assertThat(fits.getSerializedSize()).isLessThanOrEqualTo(limit);
        assertThat(echo(channel, CallOptions.DEFAULT.withCompression("gzip"), fits)).isEqualTo(fits);
        assertThat(connections.get()).isEqualTo(1);
    }

    @Test
    void shouldFailAResponseThatInflatesPastTheClientsLimitAndKeepServing()
    {
        final int limit = 64 * 1024;
        final RpcChannel channel = start(b -> b.compression("gzip").maxInboundMessageSize(32 << 20),
            b -> b.maxInboundMessageSize(limit));
        final BytesValue bomb = BytesValue.of(ByteString.copyFrom(new byte[8 << 20]));

        assertThatThrownBy(() -> echo(channel, CallOptions.DEFAULT.withCompression("gzip"), bomb))
            .satisfies(t -> assertThat(codeOf(t)).isEqualTo(StatusCode.RESOURCE_EXHAUSTED))
            .hasMessageContaining("decompressed response message exceeds the limit of " + limit + " bytes");
        final BytesValue small = compressible(2048, 8);
        assertThat(echo(channel, CallOptions.DEFAULT, small)).isEqualTo(small);
        assertThat(connections.get()).isEqualTo(1);
    }

    @Test
    void shouldFailARequestWhoseBytesTheCodecCannotReadWithInternalAndKeepServing()
    {
        final RpcChannel channel = start(b -> b, b -> b);
        final Codec broken = new Renamed("gzip", new Codec()
        {
            @Override
            public String name()
            {
                return "gzip";
            }

            @Override
            public OutputStream compress(final OutputStream out)
            {
                return new FilterOutputStream(out)
                {
                    @Override
                    public void write(final byte[] b, final int off, final int len) throws IOException
                    {
                        out.write(new byte[] {1, 2, 3, 4}); // not gzip, and shorter than anything
                    }
                };
            }

            @Override
            public InputStream decompress(final InputStream in)
            {
                throw new UnsupportedOperationException();
            }
        });
        final BytesValue request = compressible(8192, 9);

        assertThatThrownBy(() -> echo(channel, CallOptions.DEFAULT.withCompression(broken), request))
            .satisfies(t -> assertThat(codeOf(t)).isEqualTo(StatusCode.INTERNAL))
            .hasMessageContaining("failed to decompress the request message (gzip");
        assertThat(echo(channel, CallOptions.DEFAULT.withCompression("gzip"), request)).isEqualTo(request);
        assertThat(connections.get()).isEqualTo(1);
    }

    /** A codec under another name. */
    static final class Renamed implements Codec
    {
        private final String name;
        private final Codec codec;

        Renamed(final String name, final Codec codec)
        {
            this.name = name;
            this.codec = codec;
        }

        @Override
        public String name()
        {
            return name;
        }

        @Override
        public OutputStream compress(final OutputStream out) throws IOException
        {
            return codec.compress(out);
        }

        @Override
        public InputStream decompress(final InputStream in) throws IOException
        {
            return codec.decompress(in);
        }
    }

    /** Counts what a codec compresses and decompresses, and the compressed bytes it writes. */
    static final class CountingCodec implements Codec
    {
        final AtomicInteger compressed = new AtomicInteger();
        final AtomicInteger decompressed = new AtomicInteger();
        final AtomicLong bytesOut = new AtomicLong();
        private final Codec codec;

        CountingCodec(final Codec codec)
        {
            this.codec = codec;
        }

        @Override
        public String name()
        {
            return codec.name();
        }

        @Override
        public OutputStream compress(final OutputStream out) throws IOException
        {
            compressed.incrementAndGet();
            return codec.compress(new FilterOutputStream(out)
            {
                @Override
                public void write(final int b) throws IOException
                {
                    bytesOut.incrementAndGet();
                    out.write(b);
                }

                @Override
                public void write(final byte[] b, final int off, final int len) throws IOException
                {
                    bytesOut.addAndGet(len);
                    out.write(b, off, len);
                }
            });
        }

        @Override
        public InputStream decompress(final InputStream in) throws IOException
        {
            decompressed.incrementAndGet();
            return codec.decompress(in);
        }
    }
}
