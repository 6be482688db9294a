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
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

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

    private static BytesValue message(final int i)
    {
        final byte[] bytes = new byte[SIZE];
        bytes[0] = (byte)i;
        bytes[SIZE - 1] = (byte)(i * 3);
        return BytesValue.of(ByteString.copyFrom(bytes));
    }
}
