package io.reverb.grpc;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.opentelemetry.GrpcOpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.data.HistogramPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetSocketAddress;
import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * grpc-java's OpenTelemetry metrics ({@code grpc-opentelemetry}, gRFC A66), configured on the builders as a
 * grpc-java application does, record over Reverb what they record over Netty: each attempt and call with its status,
 * on both sides, and the bytes of the messages each side sent and received. They are fed by the stream tracers the
 * transport calls; a server's tracers once heard OK for every call, whatever its status.
 */
class GrpcOpenTelemetryMetricsTest
{
    private static final AttributeKey<String> STATUS = AttributeKey.stringKey("grpc.status");
    private static final AttributeKey<String> METHOD = AttributeKey.stringKey("grpc.method");
    private static final String UNARY = "reverb.grpctest.Echo/Unary";

    private Server server;
    private ManagedChannel channel;
    private String address;

    @AfterEach
    void stop() throws Exception
    {
        if (channel != null)
        {
            channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        }
        if (server != null)
        {
            server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        }
        if (address != null)
        {
            AbstractReverbConformanceTest.assertReleased(address);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp", "netty"})
    void shouldRecordEachCallsStatusAndMessageBytesAsOverNetty(final String transport) throws Exception
    {
        final InMemoryMetricReader reader = InMemoryMetricReader.create();
        final OpenTelemetrySdk sdk = OpenTelemetrySdk.builder()
            .setMeterProvider(SdkMeterProvider.builder().registerMetricReader(reader).build()).build();
        final GrpcOpenTelemetry metrics = GrpcOpenTelemetry.newBuilder().sdk(sdk).build();
        try
        {
            final ServerBuilder<?> serverBuilder = serverBuilder(transport).addService(new GrpcEchoService());
            metrics.configureServerBuilder(serverBuilder);
            server = serverBuilder.build().start();
            final ManagedChannelBuilder<?> channelBuilder = channelBuilder(transport);
            metrics.configureChannelBuilder(channelBuilder);
            channel = channelBuilder.build();

            final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel);
            final EchoRequest ok = EchoRequest.newBuilder().setPayload(ByteString.copyFrom(
                new byte[300])).build();
            final EchoRequest failing = EchoRequest.newBuilder().setErrorCode(Status.Code.NOT_FOUND.value())
                .setErrorMessage("no such thing").build();
            long replyBytes = 0;
            for (int i = 0; i < 2; i++)
            {
                final EchoReply reply = stub.unary(ok);
                replyBytes += reply.getSerializedSize();
            }
            assertThatThrownBy(() -> stub.unary(failing)).isInstanceOfSatisfying(StatusRuntimeException.class,
                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
            final long requestBytes = 2L * ok.getSerializedSize() + failing.getSerializedSize();

            // the server records a call where its stream closes, which may come after the client has its status
            final Map<String, Long> expectedByStatus = Map.of("OK", 2L, "NOT_FOUND", 1L);
            final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!countsByStatus(reader.collectAllMetrics(), "grpc.server.call.duration").equals(expectedByStatus) &&
                System.nanoTime() - until < 0)
            {
                Thread.sleep(10);
            }
            final Collection<MetricData> all = reader.collectAllMetrics();
            assertThat(countsByStatus(all, "grpc.client.attempt.duration")).as("client attempts by status")
                .isEqualTo(expectedByStatus);
            assertThat(countsByStatus(all, "grpc.client.call.duration")).as("client calls by status")
                .isEqualTo(expectedByStatus);
            assertThat(countsByStatus(all, "grpc.server.call.duration")).as("server calls by status")
                .isEqualTo(expectedByStatus);
            assertThat(sum(all, "grpc.client.attempt.sent_total_compressed_message_size")).as("client sent")
                .isEqualTo(requestBytes);
            assertThat(sum(all, "grpc.server.call.rcvd_total_compressed_message_size")).as("server received")
                .isEqualTo(requestBytes);
            assertThat(sum(all, "grpc.server.call.sent_total_compressed_message_size")).as("server sent")
                .isEqualTo(replyBytes);
            assertThat(sum(all, "grpc.client.attempt.rcvd_total_compressed_message_size")).as("client received")
                .isEqualTo(replyBytes);
        }
        finally
        {
            sdk.close();
        }
    }

    private ServerBuilder<?> serverBuilder(final String transport)
    {
        switch (transport)
        {
            case "shm":
                address = "shm://grpc-otel-" + ProcessHandle.current().pid();
                return ReverbServerBuilder.forAddress(address);
            case "tcp":
                address = "tcp://127.0.0.1:0";
                return ReverbServerBuilder.forAddress(address);
            default:
                return NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0));
        }
    }

    private ManagedChannelBuilder<?> channelBuilder(final String transport)
    {
        if (transport.equals("netty"))
        {
            return NettyChannelBuilder.forAddress((InetSocketAddress)server.getListenSockets().get(0)).usePlaintext();
        }
        return ReverbChannelBuilder.forTarget(server.getListenSockets().get(0).toString());
    }

    /** @return the number of calls of the Echo/Unary method a duration histogram holds, by status. */
    private static Map<String, Long> countsByStatus(final Collection<MetricData> all, final String name)
    {
        final Map<String, Long> counts = new TreeMap<>();
        for (final HistogramPointData point : points(all, name))
        {
            counts.merge(point.getAttributes().get(STATUS), point.getCount(), Long::sum);
        }
        return counts;
    }

    /** @return the sum of a size histogram's values for the Echo/Unary method. */
    private static long sum(final Collection<MetricData> all, final String name)
    {
        long sum = 0;
        for (final HistogramPointData point : points(all, name))
        {
            sum += (long)point.getSum();
        }
        return sum;
    }

    private static Collection<HistogramPointData> points(final Collection<MetricData> all, final String name)
    {
        return all.stream().filter(m -> m.getName().equals(name))
            .flatMap(m -> m.getHistogramData().getPoints().stream())
            .filter(p -> UNARY.equals(p.getAttributes().get(METHOD)))
            .toList();
    }
}
