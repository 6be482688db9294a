package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.google.protobuf.Int32Value;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rpc.AbstractLargeMessageTest;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Large messages and their memory's lifetime over {@code shm://} (the engine's rendezvous path), and a server stream
 * of 64 x 1 MiB held to its window of registered memory; with direct writes (the default: each large message is
 * serialised straight into the receiver's granted buffer), and without in {@link ShmLargeMessageCopyingTest}.
 */
class ShmLargeMessageTest extends AbstractLargeMessageTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final int MESSAGES = 64;
    private static final int SIZE = 1 << 20;
    private static final int WINDOW = 4;

    /** @return whether the addresses ask for direct writes (the default) or turn them off. */
    protected boolean directWrite()
    {
        return true;
    }

    @Override
    protected String newServerUri()
    {
        return "shm://large-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet() +
            (directWrite() ? "" : "?directWrite=false");
    }

    @Test
    void shouldStreamLargeMessagesWithinTheirWindowOfRegisteredMemory() throws IOException
    {
        final String uri = newServerUri();
        final MethodDescriptor<Int32Value, BytesValue> stream = MethodDescriptor.<Int32Value, BytesValue>newBuilder()
            .type(MethodDescriptor.MethodType.SERVER_STREAMING)
            .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Large", "Stream"))
            .requestMarshaller(ProtoMarshaller.of(Int32Value.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.aliasing(BytesValue.getDefaultInstance()))
            .build();
        final ServiceDefinition service = ServiceDefinition.builder("reverb.test.Large")
            .addMethod(stream, ServerCalls.serverStreaming(n -> Flux.range(0, n.getValue()).map(ShmLargeMessageTest::message)))
            .build();
        final ResourceUsage usage = Transports.providerFor(Transports.parse(uri)).resourceUsage();
        final AtomicLong maxBytes = new AtomicLong();
        final AtomicInteger intact = new AtomicInteger();
        final AtomicInteger index = new AtomicInteger();
        final long direct;
        // an engine of the test's own (client and server: one JVM, one engine), whose counters it reads; the address's
        // ?directWrite= agrees with it
        try (RdmaEngine engine = RdmaEngine.open("shm", new EngineConfig().name("large-stream").directWrite(directWrite())))
        {
            try (RpcServer server = RpcServer.builder(uri).transportOptions(EngineOptions.of(engine)).addService(service)
                    .build().start();
                RpcChannel channel = RpcChannel.builder(uri).transportOptions(EngineOptions.of(engine)).build())
            {
                final Long count = ClientCalls.serverStreaming(channel, stream, CallOptions.DEFAULT,
                        Int32Value.of(MESSAGES))
                    .doOnNext(m ->
                    {
                        // sampled at each delivery: registered memory of both ends (one JVM) while the stream runs
                        maxBytes.accumulateAndGet(usage.bytesInUse(), Math::max);
                        if (m.equals(message(index.getAndIncrement())))
                        {
                            intact.incrementAndGet();
                        }
                    })
                    .limitRate(WINDOW)
                    .count()
                    .block(Duration.ofSeconds(60));
                assertThat(count).isEqualTo(MESSAGES);
            }
            // read once both ends are closed: the server counts its last write after the client may have read it
            direct = engine.stats().directWritesSent();
            assertThat(engine.isClosed()).as("the transport never closes the caller's engine").isFalse();
        }
        // the server's 64 responses (and nothing else here is large) went straight into the client's grants, or not
        assertThat(direct).isEqualTo(directWrite() ? MESSAGES : 0);
        assertThat(intact.get()).isEqualTo(MESSAGES);
        // each message outstanding (at most WINDOW requested and not delivered, plus the one being delivered) holds at
        // most one buffer at each end, of the engine's size class for it
        final long sizeClass = Long.highestOneBit(SIZE + 4096L) << 1;
        final long bound = 2L * (WINDOW + 1) * sizeClass;
        System.out.println("shm server stream of " + MESSAGES + " x 1 MiB, window " + WINDOW + ": at most " + maxBytes.get() +
            " registered bytes in use at a delivery (bound " + bound + ")");
        assertThat(maxBytes.get()).isPositive().isLessThanOrEqualTo(bound);
    }

    /**
     * Counts the copies of a 1 MiB unary echo with the default marshaller ({@code ProtoMarshaller.of}), each direction:
     * the sender serialises straight into the buffer the receiver granted (one copy; with direct writes the fabric
     * copies nothing, counted by the engine's direct writes), and the receiver copies each byte out of registered
     * memory exactly once, into the arrays its message keeps (counted by the marshaller; the field's arrays are the
     * copy's targets, 256 KiB each, with no whole-message array behind them). A copy that comes back on either side
     * (an intermediate array, the fabric's copy) fails it.
     */
    @Test
    void shouldCopyEachDirectionOfALargeEchoOnceIntoThePeerAndOnceOutOfRegisteredMemoryByDefault() throws IOException
    {
        final int echoes = 3;
        final String uri = newServerUri();
        final ProtoMarshaller<BytesValue> requests =
            (ProtoMarshaller<BytesValue>)ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final ProtoMarshaller<BytesValue> responses =
            (ProtoMarshaller<BytesValue>)ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final MethodDescriptor<BytesValue, BytesValue> echo = MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Large", "Echo"))
            .requestMarshaller(requests)
            .responseMarshaller(responses)
            .build();
        final List<BytesValue> received = new CopyOnWriteArrayList<>();
        final ServiceDefinition service = ServiceDefinition.builder("reverb.test.Large")
            .addMethod(echo, ServerCalls.unary(request ->
            {
                received.add(request);
                return Mono.just(request);
            }))
            .build();
        final List<BytesValue> answers = new CopyOnWriteArrayList<>();
        final long direct;
        try (RdmaEngine engine = RdmaEngine.open("shm", new EngineConfig().name("large-echo").directWrite(directWrite())))
        {
            try (RpcServer server = RpcServer.builder(uri).transportOptions(EngineOptions.of(engine)).addService(service)
                    .build().start();
                RpcChannel channel = RpcChannel.builder(uri).transportOptions(EngineOptions.of(engine)).build())
            {
                for (int i = 0; i < echoes; i++)
                {
                    final BytesValue request = message(i);
                    final BytesValue answer = ClientCalls.unary(channel, echo, CallOptions.DEFAULT, request)
                        .block(Duration.ofSeconds(30));
                    assertThat(answer).isEqualTo(request);
                    answers.add(answer);
                }
            }
            // read once both ends are closed: the server counts its last write after the client may have read it
            direct = engine.stats().directWritesSent();
        }
        // the payload's bytes, once: the field's tag and length are cut out with it, and nothing else is in the message
        final long once = SIZE;
        assertThat(direct).as("large messages serialised straight into the peer's grant: the fabric copies nothing")
            .isEqualTo(directWrite() ? 2L * echoes : 0);
        assertThat(requests.largeBytesCopiedIn()).as("each request copied out of the server's registered memory once")
            .isEqualTo(echoes * once);
        assertThat(responses.largeBytesCopiedIn()).as("each response copied out of the client's registered memory once")
            .isEqualTo(echoes * once);
        for (final BytesValue message : received)
        {
            assertOwnChunks(message);
        }
        for (final BytesValue message : answers)
        {
            assertOwnChunks(message);
        }
    }

    /** The field's bytes live in the 256 KiB arrays they were copied into (a read-only view's capacity is its array's). */
    private static void assertOwnChunks(final BytesValue message)
    {
        final List<ByteBuffer> pieces = message.getValue().asReadOnlyByteBufferList();
        assertThat(pieces).hasSize(SIZE / (256 * 1024));
        for (final ByteBuffer piece : pieces)
        {
            assertThat(piece.capacity()).isEqualTo(256 * 1024);
        }
    }

    private static BytesValue message(final int i)
    {
        final byte[] bytes = new byte[SIZE];
        bytes[0] = (byte)i;
        bytes[SIZE - 1] = (byte)(i * 3);
        return BytesValue.of(ByteString.copyFrom(bytes));
    }
}
