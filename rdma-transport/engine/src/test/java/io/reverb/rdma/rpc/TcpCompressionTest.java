package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import io.reverb.rdma.engine.ConnectionStats;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rpc.AbstractCompressionTest;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * rpc-core's compression suite over {@code tcp://} (the connection engine: eager SENDs and the rendezvous RDMA WRITE),
 * and the bytes the engine puts on the wire for 1 MiB, with and without gzip, counted by the engine itself.
 */
class TcpCompressionTest extends AbstractCompressionTest
{
    private static final int MIB = 1 << 20;
    private static final Marshaller<BytesValue> BYTES = ProtoMarshaller.of(BytesValue.getDefaultInstance());
    private static final MethodDescriptor<BytesValue, BytesValue> ECHO = MethodDescriptor.<BytesValue, BytesValue>newBuilder()
        .type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Wire", "Echo"))
        .requestMarshaller(BYTES)
        .responseMarshaller(BYTES)
        .build();

    @Override
    protected String newServerUri()
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return "tcp://127.0.0.1:" + socket.getLocalPort();
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }

    /** Sends one echo of {@code message} through an engine of the test's own and returns what the engine sent. */
    private ConnectionStats echoCounted(final String name, final BytesValue message, final boolean gzip)
    {
        final String uri = newServerUri();
        try (RdmaEngine engine = RdmaEngine.open("tcp", new EngineConfig().name(name)))
        {
            try (RpcServer server = RpcServer.builder(uri).transportOptions(EngineOptions.of(engine))
                    .addService(ServiceDefinition.builder("reverb.test.Wire").addMethod(ECHO, ServerCalls.unary(Mono::just))
                        .build())
                    .compression(gzip ? "gzip" : null).build().start();
                RpcChannel channel = RpcChannel.builder(uri).transportOptions(EngineOptions.of(engine))
                    .compression(gzip ? "gzip" : null).build())
            {
                assertThat(ClientCalls.unary(channel, ECHO, CallOptions.DEFAULT, message).block(Duration.ofSeconds(30)))
                    .isEqualTo(message);
            }
            return engine.stats();
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException(e);
        }
    }

    private static long bytesSent(final ConnectionStats stats)
    {
        return stats.eagerBytesSent() + stats.rendezvousBytesSent();
    }

    @Test
    void shouldPutAFractionOfTheBytesOnTheWireForOneMibOfText()
    {
        final BytesValue text = compressible(MIB, 11);
        final ConnectionStats plain = echoCounted("wire-plain", text, false);
        final ConnectionStats gzip = echoCounted("wire-gzip", text, true);
        System.out.println("tcp echo of 1 MiB of text, bytes the engine sent (both ends): plain " + bytesSent(plain) +
            ", gzip " + bytesSent(gzip));
        // request and response, each 1 MiB, by rendezvous when plain
        assertThat(plain.rendezvousMessagesSent()).isEqualTo(2);
        assertThat(bytesSent(plain)).isGreaterThanOrEqualTo(2L * MIB);
        assertThat(bytesSent(gzip)).isLessThan(2L * MIB / 50);
    }

    @Test
    void shouldCarryACompressedMessageStillLargerThanTheEagerLimitByRendezvous()
    {
        // 1 MiB over four symbols: gzip takes it to about a quarter, still far above the eager limit
        final byte[] bytes = new byte[MIB];
        final Random random = new Random(7);
        for (int i = 0; i < bytes.length; i++)
        {
            bytes[i] = (byte)('a' + random.nextInt(4));
        }
        final BytesValue message = BytesValue.of(ByteString.copyFrom(bytes));
        final ConnectionStats gzip = echoCounted("wire-rendezvous", message, true);
        assertThat(gzip.rendezvousMessagesSent()).isEqualTo(2);
        assertThat(gzip.rendezvousBytesSent()).isBetween(2L * MIB / 8, 2L * MIB / 2);
    }
}
