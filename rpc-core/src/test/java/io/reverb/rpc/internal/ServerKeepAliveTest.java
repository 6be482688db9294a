package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import io.reverb.rpc.wire.FrameHeaderFlyweight;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/**
 * The server's own keep-alive and max connection idle (grpc-java's server {@code keepAliveTime}/{@code
 * keepAliveTimeout} and {@code maxConnectionIdle}): a client that answers no PING (its host vanished without closing
 * the connection) is closed and its calls' handlers cancelled; one that answers is kept; a connection without calls
 * is drained after the idle time, one with a call running is not. Outcomes are counted, not timed: the waits are
 * bounds.
 */
class ServerKeepAliveTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final Marshaller<StringValue> STRING = ProtoMarshaller.of(StringValue.getDefaultInstance());
    private static final MethodDescriptor<StringValue, StringValue> HANG = MethodDescriptor
        .<StringValue, StringValue>newBuilder().type(MethodDescriptor.MethodType.SERVER_STREAMING)
        .fullMethodName(TestService.SERVICE + "/Hang").requestMarshaller(STRING).responseMarshaller(STRING).build();
    private final WireFrames frames = new WireFrames();
    private final AtomicReference<RpcContext> context = new AtomicReference<>();
    private final RecordingConnection transport = new RecordingConnection(false);
    private ServerWireConnection connection;

    private ServerWireConnection open(final UnaryOperator<RpcServer.Builder> settings)
    {
        final ServiceDefinition service = ServiceDefinition.builder(TestService.SERVICE)
            .addMethod(HANG, ServerCalls.<StringValue, StringValue>serverStreaming(request ->
                Flux.deferContextual(ctx ->
                {
                    context.set(RpcContext.from(ctx));
                    return Flux.never();
                })))
            .build();
        final ServerRuntime server = new ServerRuntime(ServerConfig.of(
            settings.apply(RpcServer.builder("inproc://unused").addService(service))));
        connection = new ServerWireConnection(server, transport);
        return connection;
    }

    @AfterEach
    void close()
    {
        if (connection != null)
        {
            connection.closeNow(Status.CANCELLED.withDescription("test over"));
        }
    }

    private void startHangingCall()
    {
        connection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(frames.call(1, HANG, 1),
            frames.message(1, STRING, StringValue.of("x"), false), frames.halfClose(1))));
        assertThat(context.get()).as("the handler runs").isNotNull();
    }

    @Test
    void shouldCloseAConnectionWhoseClientAnswersNoPingAndCancelItsCalls()
    {
        open(b -> b.keepAlive(Duration.ofMillis(20), Duration.ofMillis(100)));
        startHangingCall();

        Await.until("the silent client's connection closed", TIMEOUT, () -> transport.closeAsked);

        assertThat(pings(transport)).as("PINGs the server sent").isNotEmpty();
        assertThat(context.get().isCancelled()).as("the handler is cancelled").isTrue();
        assertThat(context.get().cancellationStatus().code()).isEqualTo(StatusCode.UNAVAILABLE);
        assertThat(context.get().cancellationStatus().description()).contains("keep-alive");
        assertThat(connection.streams.isEmpty()).isTrue();
    }

    @Test
    void shouldKeepAConnectionWhoseClientAnswersEveryPing()
    {
        // a timeout far above any scheduling delay of this test's answers: only a missing answer can close it
        open(b -> b.keepAlive(Duration.ofMillis(10), TIMEOUT));
        startHangingCall();
        int answered = 0;
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (answered < 5)
        {
            assertThat(System.nanoTime() - deadline).as("the server PINGs again").isNegative();
            final List<Long> pings = pings(transport);
            if (pings.size() > answered)
            {
                connection.onMessage(transport, ByteBuffer.wrap(frames.pingAck(pings.get(answered))));
                answered++;
            }
            Thread.onSpinWait();
        }
        assertThat(transport.closeAsked).isFalse();
        assertThat(context.get().isCancelled()).isFalse();
    }

    @Test
    void shouldDefaultToGrpcJavasServerKeepAliveAndRefuseNonsense()
    {
        final RpcServer.Builder builder = RpcServer.builder("inproc://unused");
        assertThat(builder.keepAliveTimeNanos()).isEqualTo(Duration.ofHours(2).toNanos());
        assertThat(builder.keepAliveTimeoutNanos()).isEqualTo(Duration.ofSeconds(20).toNanos());
        assertThat(builder.maxConnectionIdleNanos()).as("off").isEqualTo(Long.MAX_VALUE);
        assertThat(builder.keepAlive(null, Duration.ofSeconds(1)).keepAliveTimeNanos()).as("off").isEqualTo(Long.MAX_VALUE);
        assertThat(builder.keepAlive(Duration.ofDays(365L * 1_000_000), Duration.ofSeconds(1)).keepAliveTimeNanos())
            .as("saturated").isEqualTo(Long.MAX_VALUE);
        assertThatThrownBy(() -> builder.keepAlive(Duration.ZERO, Duration.ofSeconds(1)))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keep-alive time must be positive");
        assertThatThrownBy(() -> builder.keepAlive(Duration.ofSeconds(1), Duration.ofSeconds(-1)))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keep-alive timeout must be positive");
        assertThatThrownBy(() -> builder.maxConnectionIdle(Duration.ZERO))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxConnectionIdle must be positive");
    }

    @Test
    void shouldDrainAConnectionWithoutCallsAfterTheMaxIdleTime()
    {
        open(b -> b.maxConnectionIdle(Duration.ofMillis(40)));

        Await.until("the idle connection drained", TIMEOUT, () -> transport.closeAsked);

        assertThat(goAways(transport)).as("GOAWAY before the close").isEqualTo(1);
    }

    @Test
    void shouldNotDrainAConnectionWhileACallRuns() throws Exception
    {
        open(b -> b.maxConnectionIdle(Duration.ofMillis(20)));
        startHangingCall();
        Thread.sleep(300); // fifteen idle times: a running call keeps the connection, however long it runs
        assertThat(goAways(transport)).isZero();
        assertThat(transport.closeAsked).isFalse();
    }

    /** @return the payloads of the PINGs (not ACKs) the server wrote, in order. */
    private static List<Long> pings(final RecordingConnection transport)
    {
        final List<Long> payloads = new ArrayList<>();
        for (final ByteBuffer frame : WireFrames.written(transport))
        {
            if (frame.get(FrameHeaderFlyweight.TYPE_OFFSET) == FrameType.PING.value() &&
                (frame.getShort(FrameHeaderFlyweight.FLAGS_OFFSET) & FrameType.Flags.ACK) == 0)
            {
                payloads.add(frame.getLong(FrameHeaderFlyweight.HEADER_LENGTH));
            }
        }
        return payloads;
    }

    private static int goAways(final RecordingConnection transport)
    {
        int n = 0;
        for (final ByteBuffer frame : WireFrames.written(transport))
        {
            n += frame.get(FrameHeaderFlyweight.TYPE_OFFSET) == FrameType.GOAWAY.value() ? 1 : 0;
        }
        return n;
    }
}
