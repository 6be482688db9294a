package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.Codec;
import io.grpc.CompressorRegistry;
import io.grpc.DecompressorRegistry;
import io.grpc.ForwardingServerCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.MetadataUtils;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * grpc-java's compression over Reverb ({@code inproc://}): {@code CallOptions.withCompression} and
 * {@code ServerCall.setCompression} travel as Reverb's COMPRESSED frames, compressed once by the codecs of grpc-java's
 * registries (counted here: each side registers a counting gzip under "gzip"), and the errors are grpc-java's.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class GrpcCompressionTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Metadata.Key<String> RESPOND_WITH = Metadata.Key.of("respond-with", Metadata.ASCII_STRING_MARSHALLER);

    private final CountingGzip clientGzip = new CountingGzip("gzip");
    private final CountingGzip serverGzip = new CountingGzip("gzip");
    private final String address = "inproc://grpc-compression-" + IDS.incrementAndGet();
    private Server server;
    private ManagedChannel channel;

    private void start(final int serverMaxInbound)
    {
        try
        {
            server = ReverbServerBuilder.forAddress(address)
                .addService(ServerInterceptors.intercept(new GrpcEchoService(), new RespondWith()))
                .compressorRegistry(registryOf(serverGzip))
                .decompressorRegistry(DecompressorRegistry.emptyInstance().with(serverGzip, true))
                .maxInboundMessageSize(serverMaxInbound)
                .build().start();
        }
        catch (final IOException e)
        {
            throw new IllegalStateException(e);
        }
        channel = ReverbChannelBuilder.forTarget(address)
            .compressorRegistry(registryOf(clientGzip))
            .decompressorRegistry(DecompressorRegistry.emptyInstance().with(clientGzip, true))
            .build();
    }

    private static CompressorRegistry registryOf(final Codec codec)
    {
        final CompressorRegistry registry = CompressorRegistry.newEmptyInstance();
        registry.register(codec);
        return registry;
    }

    @AfterEach
    void stop() throws Exception
    {
        if (channel != null)
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
        if (server != null)
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
        AbstractReverbConformanceTest.assertReleased(address);
    }

    private static EchoRequest text(final int size)
    {
        final byte[] line = "grpc-java over Reverb compresses this line; ".getBytes(StandardCharsets.US_ASCII);
        final byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++)
        {
            bytes[i] = line[i % line.length];
        }
        return EchoRequest.newBuilder().setPayload(ByteString.copyFrom(bytes)).build();
    }

    @Test
    void shouldCompressRequestsOfACallWithCompressionOnceAsReverbFrames()
    {
        start(4 << 20);
        final EchoRequest request = text(128 * 1024);
        final EchoReply reply = EchoGrpc.newBlockingStub(channel).withCompression("gzip").unary(request);

        assertThat(reply.getPayload()).isEqualTo(request.getPayload());
        assertThat(clientGzip.compressed.get()).as("compressed by grpc-java's codec, through Reverb").isEqualTo(1);
        assertThat(serverGzip.decompressed.get()).as("decompressed by the server's registry").isEqualTo(1);
        assertThat(clientGzip.bytesOut.get()).isLessThan(request.getSerializedSize() / 20);
        // the server did not call setCompression: its response goes as it is
        assertThat(serverGzip.compressed.get()).isZero();
        assertThat(clientGzip.decompressed.get()).isZero();

        // without the option, nothing is compressed
        EchoGrpc.newBlockingStub(channel).unary(request);
        assertThat(clientGzip.compressed.get()).isEqualTo(1);
    }

    @Test
    void shouldCompressResponsesOfAServerCallThatSetsCompression()
    {
        start(4 << 20);
        final EchoRequest request = text(64 * 1024);
        final Metadata headers = new Metadata();
        headers.put(RESPOND_WITH, "gzip");
        final EchoReply reply = EchoGrpc.newBlockingStub(channel)
            .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers)).unary(request);

        assertThat(reply.getPayload()).isEqualTo(request.getPayload());
        assertThat(serverGzip.compressed.get()).isEqualTo(1);
        assertThat(clientGzip.decompressed.get()).isEqualTo(1);
        assertThat(clientGzip.compressed.get()).isZero();
    }

    @Test
    void shouldNotCompressResponsesForAChannelThatDecompressesNothing() throws Exception
    {
        // grpc-java sends no grpc-accept-encoding from such a channel; the server side assumed gzip and compressed,
        // and the call failed INTERNAL "Can't find decompressor for gzip" (over Netty it succeeds uncompressed)
        start(4 << 20);
        final ManagedChannel bare = ReverbChannelBuilder.forTarget(address)
            .decompressorRegistry(DecompressorRegistry.emptyInstance()).build();
        try
        {
            final EchoRequest request = text(64 * 1024);
            final Metadata headers = new Metadata();
            headers.put(RESPOND_WITH, "gzip");
            final EchoReply reply = EchoGrpc.newBlockingStub(bare)
                .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers)).unary(request);

            assertThat(reply.getPayload()).isEqualTo(request.getPayload());
            assertThat(serverGzip.compressed.get()).as("the response went as it is").isZero();
        }
        finally
        {
            bare.shutdownNow();
            assertThat(bare.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void shouldFailACallWithACompressorTheChannelLacksAsGrpcJavaDoes()
    {
        start(4 << 20);
        assertThatThrownBy(() -> EchoGrpc.newBlockingStub(channel).withCompression("snappy").unary(text(4096)))
            .isInstanceOf(StatusRuntimeException.class)
            .satisfies(t -> assertThat(((StatusRuntimeException)t).getStatus().getCode()).isEqualTo(Status.Code.INTERNAL))
            .hasMessageContaining("Unable to find compressor by name snappy");
    }

    @Test
    void shouldAnswerUnimplementedToACodecTheServerLacks() throws Exception
    {
        start(4 << 20);
        final CountingGzip other = new CountingGzip("x-test");
        final CompressorRegistry both = registryOf(other);
        both.register(new Codec.Gzip());
        final ManagedChannel withOther = ReverbChannelBuilder.forTarget(address).compressorRegistry(both).build();
        try
        {
            assertThatThrownBy(() -> EchoGrpc.newBlockingStub(withOther).withCompression("x-test").unary(text(8192)))
                .isInstanceOf(StatusRuntimeException.class)
                .satisfies(t -> assertThat(((StatusRuntimeException)t).getStatus().getCode())
                    .isEqualTo(Status.Code.UNIMPLEMENTED))
                .hasMessageContaining("Can't find decompressor for x-test");
            assertThat(other.compressed.get()).isEqualTo(1);
            // the same connection serves a gzip call
            assertThat(EchoGrpc.newBlockingStub(withOther).withCompression("gzip").unary(text(8192)).getPayload())
                .isEqualTo(text(8192).getPayload());
        }
        finally
        {
            withOther.shutdownNow();
            assertThat(withOther.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void shouldAnswerUnimplementedToGzipWhenTheServersRegistryLacksIt() throws Exception
    {
        // as over Netty: a decompressor registry without gzip turns receiving gzip off (issue 38)
        final String bare = address + "-no-gzip";
        final Server noGzip = ReverbServerBuilder.forAddress(bare).addService(new GrpcEchoService())
            .decompressorRegistry(DecompressorRegistry.emptyInstance()).build().start();
        final ManagedChannel toIt = ReverbChannelBuilder.forTarget(bare).build();
        try
        {
            assertThatThrownBy(() -> EchoGrpc.newBlockingStub(toIt).withCompression("gzip").unary(text(8192)))
                .isInstanceOf(StatusRuntimeException.class)
                .satisfies(t -> assertThat(((StatusRuntimeException)t).getStatus().getCode())
                    .isEqualTo(Status.Code.UNIMPLEMENTED))
                .hasMessageContaining("Can't find decompressor for gzip");
            assertThat(EchoGrpc.newBlockingStub(toIt).unary(text(8192)).getPayload())
                .as("uncompressed calls go on").isEqualTo(text(8192).getPayload());
        }
        finally
        {
            toIt.shutdownNow();
            assertThat(toIt.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
            noGzip.shutdownNow();
            assertThat(noGzip.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
        AbstractReverbConformanceTest.assertReleased(bare);
    }

    @Test
    void shouldRefuseAZipBombWithResourceExhaustedAndServeTheNextCall()
    {
        final int limit = 64 * 1024;
        start(limit);
        final EchoRequest bomb = EchoRequest.newBuilder().setPayload(ByteString.copyFrom(new byte[8 << 20])).build();

        assertThatThrownBy(() -> EchoGrpc.newBlockingStub(channel).withCompression("gzip").unary(bomb))
            .isInstanceOf(StatusRuntimeException.class)
            .satisfies(t -> assertThat(((StatusRuntimeException)t).getStatus().getCode())
                .isEqualTo(Status.Code.RESOURCE_EXHAUSTED))
            .hasMessageContaining("decompressed request message exceeds the limit of " + limit);
        assertThat(clientGzip.bytesOut.get()).isLessThan(limit);
        final EchoRequest fits = text(limit / 2);
        assertThat(EchoGrpc.newBlockingStub(channel).withCompression("gzip").unary(fits).getPayload())
            .isEqualTo(fits.getPayload());
    }

    /** Calls {@code ServerCall.setCompression} with the codec the client names in {@link #RESPOND_WITH}. */
    private static final class RespondWith implements ServerInterceptor
    {
        @Override
        public <Q, A> ServerCall.Listener<Q> interceptCall(final ServerCall<Q, A> call, final Metadata headers,
            final ServerCallHandler<Q, A> next)
        {
            final String codec = headers.get(RESPOND_WITH);
            return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call)
            {
                @Override
                public void sendHeaders(final Metadata responseHeaders)
                {
                    if (codec != null)
                    {
                        delegate().setCompression(codec);
                    }
                    super.sendHeaders(responseHeaders);
                }
            }, headers);
        }
    }

    /** grpc-java's gzip, counted, under a name of the test's choice. */
    private static final class CountingGzip implements Codec
    {
        final AtomicInteger compressed = new AtomicInteger();
        final AtomicInteger decompressed = new AtomicInteger();
        final AtomicLong bytesOut = new AtomicLong();
        private final String name;

        CountingGzip(final String name)
        {
            this.name = name;
        }

        @Override
        public String getMessageEncoding()
        {
            return name;
        }

        @Override
        public OutputStream compress(final OutputStream os) throws IOException
        {
            compressed.incrementAndGet();
            return new Codec.Gzip().compress(new FilterOutputStream(os)
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
        public InputStream decompress(final InputStream is) throws IOException
        {
            decompressed.incrementAndGet();
            return new Codec.Gzip().decompress(is);
        }
    }
}
