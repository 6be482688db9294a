package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import io.reverb.rpc.compression.Codec;
import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.compression.GzipCodec;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * What a peer's compressed requests may cost a server (issue 38, item 3), over {@code inproc://}: they inflate off
 * the transport's thread, within a per-connection budget of inflated bytes (beyond it: RESOURCE_EXHAUSTED for the
 * call, the connection goes on), in order with the call's other frames; receiving gzip can be turned off; a
 * connection's calls are bounded by default.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CompressionLimitsTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final String SERVICE = "reverb.test.CompressionLimits";
    private static final MethodDescriptor<BytesValue, BytesValue> HOLD = method("Hold", MethodDescriptor.MethodType.UNARY);
    private static final MethodDescriptor<BytesValue, BytesValue> ECHO = method("Echo", MethodDescriptor.MethodType.UNARY);
    private static final MethodDescriptor<BytesValue, BytesValue> FIRST_BYTES =
        method("FirstBytes", MethodDescriptor.MethodType.CLIENT_STREAMING);

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final AtomicInteger held = new AtomicInteger();
    private final Sinks.Empty<Void> release = Sinks.empty();

    private static MethodDescriptor<BytesValue, BytesValue> method(final String name, final MethodDescriptor.MethodType type)
    {
        return MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .type(type)
            .fullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
            .requestMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
            .build();
    }

    private RpcChannel start(final UnaryOperator<RpcServer.Builder> server, final UnaryOperator<RpcChannel.Builder> channel)
    {
        final String uri = "inproc://compression-limits-" + IDS.incrementAndGet();
        final ServiceDefinition service = ServiceDefinition.builder(SERVICE)
            .addMethod(HOLD, ServerCalls.unary(request ->
            {
                held.incrementAndGet();
                // keeps the request (and the call) until the test lets go
                return release.asMono().then(Mono.just(BytesValue.of(ByteString.copyFromUtf8(
                    Integer.toString(request.getValue().size())))));
            }))
            .addMethod(ECHO, ServerCalls.unary(Mono::just))
            .addMethod(FIRST_BYTES, ServerCalls.clientStreaming(requests -> requests
                .map(r -> r.getValue().byteAt(0))
                .collectList()
                .map(list ->
                {
                    final byte[] bytes = new byte[list.size()];
                    for (int i = 0; i < bytes.length; i++)
                    {
                        bytes[i] = list.get(i);
                    }
                    return BytesValue.of(ByteString.copyFrom(bytes));
                })))
            .build();
        closeables.add(server.apply(RpcServer.builder(uri).addService(service)).build().start());
        final RpcChannel c = channel.apply(RpcChannel.builder(uri)).build();
        closeables.add(c);
        return c;
    }

    @AfterEach
    void close() throws Exception
    {
        release.tryEmitEmpty();
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
    }

    private static BytesValue zeros(final int size, final int first)
    {
        final byte[] bytes = new byte[size];
        bytes[0] = (byte)first;
        return BytesValue.of(ByteString.copyFrom(bytes));
    }

    private static StatusCode codeOf(final Throwable t)
    {
        assertThat(t).isInstanceOf(RpcException.class);
        return ((RpcException)t).status().code();
    }

    @Test
    void shouldInflateRequestsOffTheTransportThread()
    {
        final Set<String> threads = ConcurrentHashMap.newKeySet();
        final Codec recording = new Codec()
        {
            @Override
            public String name()
            {
                return GzipCodec.NAME;
            }

            @Override
            public OutputStream compress(final OutputStream out) throws IOException
            {
                return GzipCodec.INSTANCE.compress(out);
            }

            @Override
            public InputStream decompress(final InputStream in) throws IOException
            {
                threads.add(Thread.currentThread().getName());
                return GzipCodec.INSTANCE.decompress(in);
            }
        };
        final RpcChannel channel = start(b -> b.codecRegistry(CodecRegistry.defaults().with(recording)), b -> b);
        final BytesValue request = zeros(64 * 1024, 1);

        for (int i = 0; i < 3; i++)
        {
            assertThat(ClientCalls.unary(channel, ECHO, CallOptions.DEFAULT.withCompression("gzip"), request)
                .block(TIMEOUT)).isEqualTo(request);
        }
        assertThat(threads).isNotEmpty().allSatisfy(name -> assertThat(name).startsWith("reverb-inflate-"));
    }

    @Test
    void shouldRefuseCompressedRequestsBeyondTheConnectionsBudgetOfInflatedBytes()
    {
        // 24 calls whose few hundred bytes of gzip each inflate to just under the 256 KiB limit and stay held by their
        // handler: a budget of 1 MiB per connection holds fewer than 4 of them, the others fail alone
        final int limit = 256 * 1024;
        final RpcChannel channel = start(b -> b.maxInboundMessageSize(limit).maxInflatedBytesPerConnection(1 << 20),
            b -> b);
        final BytesValue bomb = zeros(limit - 64, 0);
        final int calls = 24;
        final List<Mono<BytesValue>> results = new ArrayList<>();
        for (int i = 0; i < calls; i++)
        {
            results.add(ClientCalls.unary(channel, HOLD, CallOptions.DEFAULT.withCompression("gzip"), bomb)
                .cache());
        }
        final List<Throwable> refused = new CopyOnWriteArrayList<>();
        results.forEach(r -> r.subscribe(v -> { }, refused::add));
        // every call either reached its handler (and is held there) or was refused: count until all are accounted for
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (held.get() + refused.size() < calls && System.nanoTime() - deadline < 0)
        {
            Thread.onSpinWait();
        }
        final int handled = held.get();
        assertThat(handled).as("requests held at once").isLessThanOrEqualTo(4);
        assertThat(refused).as("the calls beyond the budget").hasSize(calls - handled)
            .allSatisfy(t ->
            {
                assertThat(codeOf(t)).isEqualTo(StatusCode.RESOURCE_EXHAUSTED);
                assertThat(((RpcException)t).status().description()).contains("maxInflatedBytesPerConnection");
            });
        release.tryEmitEmpty();
        assertThat(Flux.fromIterable(results).flatMap(r -> r.onErrorResume(e -> Mono.empty())).count().block(TIMEOUT))
            .as("the held calls end normally").isEqualTo((long)handled);
        final BytesValue small = zeros(10, 7);
        assertThat(ClientCalls.unary(channel, ECHO, CallOptions.DEFAULT, small).block(TIMEOUT))
            .as("the connection still serves").isEqualTo(small);
    }

    @Test
    void shouldDeliverACallsCompressedAndPlainRequestsInTheOrderSent()
    {
        // requests of 8 KiB are compressed, those of 8 bytes are not (below minCompressionSize): the plain ones wait
        // behind the compressed ones still inflating, and the half-close behind them all
        final RpcChannel channel = start(b -> b, b -> b.compression("gzip"));
        final List<BytesValue> requests = new ArrayList<>();
        final byte[] expected = new byte[40];
        for (int i = 0; i < expected.length; i++)
        {
            expected[i] = (byte)i;
            requests.add(zeros(i % 3 == 0 ? 8 : 8 * 1024, i));
        }
        for (int round = 0; round < 5; round++)
        {
            final BytesValue firsts = ClientCalls.clientStreaming(channel, FIRST_BYTES, CallOptions.DEFAULT,
                Flux.fromIterable(requests)).block(TIMEOUT);
            assertThat(firsts.getValue().toByteArray()).containsExactly(expected);
        }
    }

    @Test
    void shouldAnswerUnimplementedToGzipWhenTheServerTurnedItOff()
    {
        final RpcChannel channel = start(b -> b.codecRegistry(CodecRegistry.none()), b -> b);
        assertThatThrownBy(() -> ClientCalls.unary(channel, ECHO, CallOptions.DEFAULT.withCompression("gzip"),
            zeros(64 * 1024, 1)).block(TIMEOUT))
            .satisfies(t -> assertThat(codeOf(t)).isEqualTo(StatusCode.UNIMPLEMENTED))
            .hasMessageContaining("Can't find decompressor for gzip");
        final BytesValue plain = zeros(64 * 1024, 2);
        assertThat(ClientCalls.unary(channel, ECHO, CallOptions.DEFAULT, plain).block(TIMEOUT))
            .as("uncompressed calls go on").isEqualTo(plain);
    }

    @Test
    void shouldFailAGzippedResponseWhenTheChannelTurnedGzipOff()
    {
        final RpcChannel channel = start(b -> b.compression("gzip"),
            b -> b.codecRegistry(CodecRegistry.defaults().without(GzipCodec.NAME)));
        assertThatThrownBy(() -> ClientCalls.unary(channel, ECHO, CallOptions.DEFAULT, zeros(64 * 1024, 1))
            .block(TIMEOUT))
            .satisfies(t -> assertThat(codeOf(t)).isEqualTo(StatusCode.INTERNAL))
            .hasMessageContaining("Can't find decompressor for gzip");
        assertThatThrownBy(() -> RpcChannel.builder("inproc://unused").codecRegistry(CodecRegistry.none())
            .compression("gzip")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shouldBoundTheCallsOfOneConnectionByDefault()
    {
        assertThat(RpcServer.builder("inproc://unused").maxConcurrentCallsPerConnection())
            .isEqualTo(RpcServer.Builder.DEFAULT_MAX_CONCURRENT_CALLS_PER_CONNECTION)
            .isLessThan(Integer.MAX_VALUE);
        assertThat(RpcServer.builder("inproc://unused").maxInflatedBytesPerConnection())
            .isEqualTo(RpcServer.Builder.DEFAULT_MAX_INFLATED_BYTES_PER_CONNECTION);
    }
}
