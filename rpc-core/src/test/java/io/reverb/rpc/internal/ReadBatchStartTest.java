package io.reverb.rpc.internal;

import static io.reverb.rpc.internal.RecordingConnection.frameTypes;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.BytesValue;
import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.TestService;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A server call starts at the end of the transport's read batch that brought its CALL, when the transport signals
 * batch ends and handlers run on its thread: a CANCEL, a connection loss or the deadline within the batch ends it
 * before its handler runs; a transport that signals nothing starts it on the CALL as before. Driven by hand,
 * single-threaded: the transport's read batch is the sequence of {@code onMessage} calls before
 * {@code onReadComplete}.
 */
class ReadBatchStartTest
{
    private final RecordingConnection clientSide = new RecordingConnection(false);
    private final TestService service = new TestService();
    private final ClientTransportImpl channel = TestRuntimes.channel();
    private final ServerRuntime server = TestRuntimes.server(service);
    private final ClientWireConnection client = new ClientWireConnection(channel, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
        ClientWireConnection.LAST_STREAM_ID);

    ReadBatchStartTest()
    {
        client.attach(clientSide);
    }

    @AfterEach
    void tearDown()
    {
        client.closeWithError(Status.UNAVAILABLE);
    }

    /** A unary ECHO call's CALL+MESSAGE, then (if cancel) its CANCEL: the client's transport messages. */
    private List<byte[]> unaryCall(final boolean cancel)
    {
        final UnaryClientCall<StringValue, StringValue> call = new UnaryClientCall<>(channel, TestService.ECHO,
            StringValue.of("hi"), null, null, Deadline.after(Duration.ofMinutes(5)), false);
        call.actual = new Recorder<>();
        call.request(Long.MAX_VALUE);
        call.onConnection(client);
        if (cancel)
        {
            call.cancel();
        }
        return new ArrayList<>(clientSide.messages);
    }

    private static void read(final ServerWireConnection connection, final RecordingConnection transport,
        final List<byte[]> batch)
    {
        for (final byte[] message : batch)
        {
            connection.onMessage(transport, ByteBuffer.wrap(message));
        }
    }

    @Test
    void aCallCancelledInTheBatchThatOpenedItNeverRunsItsHandler()
    {
        final RecordingConnection serverSide = new RecordingConnection(true);
        final ServerWireConnection connection = new ServerWireConnection(server, serverSide);
        final List<byte[]> batch = unaryCall(true);
        assertThat(batch).hasSize(2);
        assertThat(frameTypes(batch.get(0))).containsExactly(FrameType.CALL, FrameType.MESSAGE);
        assertThat(frameTypes(batch.get(1))).containsExactly(FrameType.CANCEL);
        read(connection, serverSide, batch);
        connection.onReadComplete(serverSide);
        assertThat(service.callsStarted.get()).as("handlers run").isZero();
        assertThat(connection.streams.isEmpty()).as("the call is gone").isTrue();
        assertThat(serverSide.messages).as("nothing sent: the client cancelled").isEmpty();
    }

    @Test
    void aStreamingCallCancelledInTheBatchThatOpenedItNeverRunsItsHandler()
    {
        final RecordingConnection serverSide = new RecordingConnection(true);
        final ServerWireConnection connection = new ServerWireConnection(server, serverSide);
        final StreamingClientCall<Int32Value, BytesValue> call = new StreamingClientCall<>(channel, TestService.RANGE,
            Mono.just(Int32Value.of(3)), null, null, null, false);
        call.actual = new Recorder<>();
        call.onConnection(client);
        call.request(5);
        call.cancel();
        read(connection, serverSide, clientSide.messages);
        connection.onReadComplete(serverSide);
        assertThat(service.callsStarted.get()).as("handlers run").isZero();
        assertThat(connection.streams.isEmpty()).isTrue();
        assertThat(serverSide.messages).isEmpty();
    }

    @Test
    void aCallStartsAtTheEndOfItsBatchWithTheRequestReadBeforeIt()
    {
        final RecordingConnection serverSide = new RecordingConnection(true);
        final ServerWireConnection connection = new ServerWireConnection(server, serverSide);
        read(connection, serverSide, unaryCall(false));
        assertThat(service.callsStarted.get()).as("handlers run before the batch ended").isZero();
        assertThat(connection.streams.size()).isEqualTo(1);
        connection.onReadComplete(serverSide);
        assertThat(service.callsStarted.get()).isEqualTo(1);
        assertThat(serverSide.messages).hasSize(1);
        assertThat(frameTypes(serverSide.messages.get(0))).containsExactly(FrameType.MESSAGE, FrameType.STATUS);
        assertThat(connection.streams.isEmpty()).isTrue();
        connection.onReadComplete(serverSide); // an empty batch end starts nothing twice
        assertThat(service.callsStarted.get()).isEqualTo(1);
    }

    @Test
    void aConnectionLostBeforeTheBatchEndedRunsNoHandler()
    {
        final RecordingConnection serverSide = new RecordingConnection(true);
        final ServerWireConnection connection = new ServerWireConnection(server, serverSide);
        read(connection, serverSide, unaryCall(false));
        connection.onClose(serverSide, new IllegalStateException("peer died"));
        connection.onReadComplete(serverSide);
        assertThat(service.callsStarted.get()).isZero();
        assertThat(connection.streams.isEmpty()).isTrue();
        assertThat(serverSide.messages).isEmpty();
    }

    @Test
    void theRequestOfACallEndedBeforeItsStartGoesBackToItsMarshaller()
    {
        final AtomicInteger released = new AtomicInteger();
        final Marshaller<StringValue> proto = ProtoMarshaller.of(StringValue.getDefaultInstance());
        final Marshaller<StringValue> lending = new Marshaller<>()
        {
            @Override
            public int serializedSize(final StringValue value)
            {
                return proto.serializedSize(value);
            }

            @Override
            public void write(final StringValue value, final ByteBuffer target)
            {
                proto.write(value, target);
            }

            @Override
            public StringValue read(final ByteBuffer source)
            {
                return proto.read(source);
            }

            @Override
            public void release(final StringValue message)
            {
                released.incrementAndGet();
            }
        };
        final MethodDescriptor<StringValue, StringValue> method = MethodDescriptor.<StringValue, StringValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Lending", "Echo"))
            .requestMarshaller(lending)
            .responseMarshaller(proto)
            .build();
        final AtomicInteger handlers = new AtomicInteger();
        final ServerRuntime lendingServer = new ServerRuntime(new ServerConfig("inproc://unused",
            List.of(ServiceDefinition.builder("reverb.test.Lending").addMethod(method, ServerCalls.unary(r ->
            {
                handlers.incrementAndGet();
                return Mono.just(r);
            })).build()), List.of(), null, Schedulers.parallel(), RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE, null,
            Duration.ZERO, TransportOptions.EMPTY));
        final RecordingConnection serverSide = new RecordingConnection(true);
        final ServerWireConnection connection = new ServerWireConnection(lendingServer, serverSide);
        final UnaryClientCall<StringValue, StringValue> call = new UnaryClientCall<>(channel, method,
            StringValue.of("lent"), null, null, Deadline.after(Duration.ofMinutes(5)), false);
        call.actual = new Recorder<>();
        call.request(Long.MAX_VALUE);
        call.onConnection(client);
        call.cancel();
        read(connection, serverSide, clientSide.messages);
        connection.onReadComplete(serverSide);
        assertThat(handlers.get()).isZero();
        assertThat(released.get()).as("request released: no handler saw it").isEqualTo(1);
        assertThat(connection.streams.isEmpty()).isTrue();
    }

    @Test
    void aTransportThatSignalsNoBatchesStartsTheCallOnItsCall()
    {
        final RecordingConnection serverSide = new RecordingConnection(false);
        final ServerWireConnection connection = new ServerWireConnection(server, serverSide);
        read(connection, serverSide, unaryCall(false));
        assertThat(service.callsStarted.get()).isEqualTo(1);
        assertThat(serverSide.messages).hasSize(1);
    }
}
