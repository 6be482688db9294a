package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.publisher.Mono;

/**
 * Large messages and the lifetime of the memory they are read from, over one transport (subclassed per transport,
 * as {@link AbstractRpcTransportTest}). Released arrays are poisoned ({@link ProtoMarshaller#aliasing(com.google.protobuf.MessageLite, boolean)}),
 * so a message read after its memory was reused shows as {@code 0xDB} bytes: the tests would catch a recycled buffer
 * being read, and one of them shows that they do.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class AbstractLargeMessageTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final int SIZE = 1 << 20;
    private static final int CALLS = 6;

    private final List<AutoCloseable> closeables = new ArrayList<>();

    /**
     * @return a fresh server address for this transport.
     */
    protected abstract String newServerUri();

    @AfterEach
    void closeAll() throws Exception
    {
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
    }

    private static MethodDescriptor<BytesValue, BytesValue> echo(final Marshaller<BytesValue> requests,
        final Marshaller<BytesValue> responses)
    {
        return MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Large", "Echo"))
            .requestMarshaller(requests)
            .responseMarshaller(responses)
            .build();
    }

    private static BytesValue pattern(final int seed)
    {
        final byte[] bytes = new byte[SIZE];
        for (int i = 0; i < bytes.length; i++)
        {
            bytes[i] = (byte)(i * 7 + seed * 13 + 1);
        }
        return BytesValue.of(ByteString.copyFrom(bytes));
    }

    private RpcChannel start(final MethodDescriptor<BytesValue, BytesValue> method, final List<BytesValue> kept,
        final List<Boolean> intactInHandler)
    {
        final String uri = newServerUri();
        final ServiceDefinition service = ServiceDefinition.builder("reverb.test.Large")
            .addMethod(method, ServerCalls.unary(request ->
            {
                kept.add(request);
                intactInHandler.add(request.getValue().byteAt(0) != (byte)0xDB);
                return Mono.just(request);
            }))
            .build();
        final RpcServer server = RpcServer.builder(uri).addService(service).build().start();
        closeables.add(server);
        final RpcChannel channel = RpcChannel.builder(uri).build();
        closeables.add(channel);
        return channel;
    }

    @Test
    void shouldKeepHeldMessagesIntactWhileTheirBuffersAreReusedByDefault()
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final List<BytesValue> keptByServer = new CopyOnWriteArrayList<>();
        final RpcChannel channel = start(echo(m, m), keptByServer, new CopyOnWriteArrayList<>());
        final List<BytesValue> keptByClient = new ArrayList<>();
        for (int i = 0; i < CALLS; i++)
        {
            keptByClient.add(ClientCalls.unary(channel, echo(m, m), CallOptions.DEFAULT, pattern(i)).block(TIMEOUT));
        }
        // every call reused the transport's buffers of the one before: what was kept must still be what was sent
        for (int i = 0; i < CALLS; i++)
        {
            assertThat(keptByServer.get(i)).as("request %d kept by the server", i).isEqualTo(pattern(i));
            assertThat(keptByClient.get(i)).as("response %d kept by the client", i).isEqualTo(pattern(i));
        }
    }

    @Test
    void shouldLendArraysForTheMessagesLifetimeOnlyInAliasingMode()
    {
        final ProtoMarshaller<BytesValue> serverSide =
            (ProtoMarshaller<BytesValue>)ProtoMarshaller.aliasing(BytesValue.getDefaultInstance(), true);
        final ProtoMarshaller<BytesValue> clientSide =
            (ProtoMarshaller<BytesValue>)ProtoMarshaller.aliasing(BytesValue.getDefaultInstance(), true);
        final List<BytesValue> keptByServer = new CopyOnWriteArrayList<>();
        final List<Boolean> intactInHandler = new CopyOnWriteArrayList<>();
        final RpcChannel channel = start(echo(serverSide, serverSide), keptByServer, intactInHandler);
        final MethodDescriptor<BytesValue, BytesValue> clientMethod = echo(clientSide, clientSide);
        final List<BytesValue> keptByClient = new ArrayList<>();
        final List<Boolean> intactInOnNext = new ArrayList<>();
        for (int i = 0; i < CALLS; i++)
        {
            final BytesValue expected = pattern(i);
            final BytesValue response = ClientCalls.unary(channel, clientMethod, CallOptions.DEFAULT, expected)
                .doOnNext(r -> intactInOnNext.add(r.equals(expected)))
                .block(TIMEOUT);
            keptByClient.add(response);
            // block() returns at onNext, before the call gives the array back: wait for the count
            awaitNoneLent(clientSide);
            assertThat(serverSide.lentArrays()).as("server arrays lent after call %d", i).isZero();
        }
        // within their lifetime (the handler until the call's last frame, the client's onNext) messages are intact
        assertThat(intactInHandler).hasSize(CALLS).containsOnly(true);
        assertThat(intactInOnNext).hasSize(CALLS).containsOnly(true);
        // beyond it they read reused (here poisoned) memory: the documented hazard of the opt-in mode, and the proof
        // that the poison makes a recycled buffer visible
        for (int i = 0; i < CALLS; i++)
        {
            assertThat(keptByServer.get(i).getValue().byteAt(SIZE / 2)).as("request %d after its call", i)
                .isEqualTo((byte)0xDB);
            assertThat(keptByClient.get(i).getValue().byteAt(SIZE / 2)).as("response %d after onNext", i)
                .isEqualTo((byte)0xDB);
        }
    }

    private static void awaitNoneLent(final ProtoMarshaller<?> marshaller)
    {
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (marshaller.lentArrays() != 0)
        {
            assertThat(System.nanoTime() - deadline).as("arrays still lent: %d", marshaller.lentArrays()).isNegative();
            Thread.onSpinWait();
        }
    }

    @Test
    void shouldNeverReuseAnArrayWhileItsMessageIsStillInUse()
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.aliasing(BytesValue.getDefaultInstance(), true);
        final RpcChannel channel = start(echo(m, m), new CopyOnWriteArrayList<>(), new CopyOnWriteArrayList<>());
        // several calls in flight at once: each response must be its own request, never another call's bytes
        final List<Mono<Boolean>> calls = new ArrayList<>();
        for (int i = 0; i < CALLS; i++)
        {
            final BytesValue expected = pattern(100 + i);
            calls.add(ClientCalls.unary(channel, echo(m, m), CallOptions.DEFAULT, expected).map(expected::equals));
        }
        final List<Boolean> results = Mono.zip(calls, values ->
        {
            final List<Boolean> list = new ArrayList<>();
            for (final Object v : values)
            {
                list.add((Boolean)v);
            }
            return list;
        }).block(TIMEOUT);
        assertThat(results).hasSize(CALLS).containsOnly(true);
    }
}
