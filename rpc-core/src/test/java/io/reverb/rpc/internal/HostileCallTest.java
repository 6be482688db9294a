package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.wire.FrameHeaderFlyweight;
import io.reverb.rpc.wire.FrameType;
import io.reverb.rpc.wire.StatusFlyweight;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * What a client's frames and a handler's publisher cannot make the server do: record a cancelled call as OK (the
 * CANCEL's code is the client's word), write a method name with control bytes into statuses and logs, or leave a call
 * without a status when the handler's publisher throws from {@code subscribe}.
 */
class HostileCallTest
{
    private static final Marshaller<StringValue> STRING = ProtoMarshaller.of(StringValue.getDefaultInstance());
    private static final MethodDescriptor<StringValue, StringValue> HANG = MethodDescriptor
        .<StringValue, StringValue>newBuilder().type(MethodDescriptor.MethodType.SERVER_STREAMING)
        .fullMethodName(TestService.SERVICE + "/Hang").requestMarshaller(STRING).responseMarshaller(STRING).build();
    private final WireFrames frames = new WireFrames();
    private final AtomicReference<RpcContext> context = new AtomicReference<>();

    private ServerRuntime server()
    {
        final ServiceDefinition service = ServiceDefinition.builder(TestService.SERVICE)
            .addMethod(TestService.ECHO, ServerCalls.<StringValue, StringValue>unary(request -> new Mono<StringValue>()
            {
                @Override
                public void subscribe(final CoreSubscriber<? super StringValue> actual)
                {
                    throw new IllegalStateException("this publisher throws from subscribe");
                }
            }))
            .addMethod(HANG, ServerCalls.<StringValue, StringValue>serverStreaming(request ->
                Flux.deferContextual(ctx ->
                {
                    context.set(RpcContext.from(ctx));
                    return Flux.never();
                })))
            .build();
        return new ServerRuntime(new ServerConfig("inproc://unused", List.of(service), List.of(), null,
            Schedulers.parallel(), RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE, null, Duration.ZERO,
            TransportOptions.EMPTY));
    }

    private static String text(final RecordingConnection transport)
    {
        final StringBuilder all = new StringBuilder();
        for (final byte[] message : transport.messages)
        {
            all.append(new String(message, StandardCharsets.ISO_8859_1));
        }
        return all.toString();
    }

    @Test
    void shouldEndACallWhosePublisherThrowsFromSubscribe()
    {
        final RecordingConnection transport = new RecordingConnection(false);
        final ServerWireConnection connection = new ServerWireConnection(server(), transport);
        connection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(frames.call(1, TestService.ECHO, 1),
            frames.message(1, STRING, StringValue.of("x"), false), frames.halfClose(1))));

        assertThat(connection.streams.isEmpty()).as("the call ended").isTrue();
        final List<Integer> codes = new ArrayList<>();
        for (final ByteBuffer frame : WireFrames.written(transport))
        {
            if (frame.get(FrameHeaderFlyweight.TYPE_OFFSET) == FrameType.STATUS.value())
            {
                codes.add(frame.getInt(FrameHeaderFlyweight.HEADER_LENGTH + StatusFlyweight.CODE_OFFSET));
            }
        }
        assertThat(codes).as("the call's STATUS").containsExactly(StatusCode.UNKNOWN.value());
        assertThat(text(transport)).as("nothing of the exception reaches the client")
            .doesNotContain("this publisher throws from subscribe");
        assertThat(connection.closed).isFalse();
    }

    @Test
    void shouldRecordAClientsCancelAsCancelledWhateverCodeItCarries()
    {
        final RecordingConnection transport = new RecordingConnection(false);
        final ServerWireConnection connection = new ServerWireConnection(server(), transport);
        connection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(frames.call(1, HANG, 1),
            frames.message(1, STRING, StringValue.of("x"), false), frames.halfClose(1))));
        assertThat(context.get()).as("the handler runs").isNotNull();

        connection.onMessage(transport, ByteBuffer.wrap(frames.cancel(1, StatusCode.OK.value())));

        assertThat(connection.streams.isEmpty()).isTrue();
        assertThat(context.get().cancellationStatus().code()).as("not the OK the client sent")
            .isEqualTo(StatusCode.CANCELLED);
        assertThat(context.get().cancellationStatus().description()).contains("its reason: OK");
    }

    @Test
    void shouldCarryAFloodOfRequestNToTheHandlersExecutorInFewTasks() throws Exception
    {
        // a handler executor busy elsewhere; the client sends REQUEST_N after REQUEST_N: one task at a time carries
        // their demand (it was a task per frame, queued without bound)
        final ExecutorService pool = Executors.newSingleThreadExecutor();
        final CountDownLatch busy = new CountDownLatch(1);
        final AtomicInteger tasks = new AtomicInteger();
        try
        {
            pool.execute(() ->
            {
                try
                {
                    busy.await();
                }
                catch (final InterruptedException e)
                {
                    Thread.currentThread().interrupt();
                }
            });
            final Scheduler scheduler = Schedulers.fromExecutor(task ->
            {
                tasks.incrementAndGet();
                pool.execute(task);
            });
            final ServiceDefinition service = ServiceDefinition.builder(TestService.SERVICE)
                .addMethod(TestService.NEVER, ServerCalls.serverStreaming(request -> Flux.never())).build();
            final ServerRuntime runtime = new ServerRuntime(new ServerConfig("inproc://unused", List.of(service),
                List.of(), scheduler, Schedulers.parallel(), RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE, null,
                Duration.ZERO, TransportOptions.EMPTY));
            final RecordingConnection transport = new RecordingConnection(false);
            final ServerWireConnection connection = new ServerWireConnection(runtime, transport);
            connection.onMessage(transport, ByteBuffer.wrap(WireFrames.concat(frames.call(1, TestService.NEVER, 1),
                frames.message(1, ProtoMarshaller.of(Int32Value.getDefaultInstance()), Int32Value.of(1), false),
                frames.halfClose(1))));
            final int before = tasks.get();
            for (int i = 0; i < 10_000; i++)
            {
                connection.onMessage(transport, ByteBuffer.wrap(frames.requestN(1, 1)));
            }
            assertThat(tasks.get() - before).as("tasks for 10,000 REQUEST_N frames").isLessThanOrEqualTo(1);
        }
        finally
        {
            busy.countDown();
            pool.shutdown();
            assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void shouldRefuseAMethodNameWithControlBytes()
    {
        // a descriptor refuses such a name: the frame is written with "__" where the line break goes
        final MethodDescriptor<StringValue, StringValue> named = MethodDescriptor.<StringValue, StringValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY).fullMethodName("no.Such/Method__WARN_forged_log_line")
            .requestMarshaller(STRING).responseMarshaller(STRING).build();
        final byte[] call = frames.call(1, named, 1);
        final int at = new String(call, StandardCharsets.ISO_8859_1).indexOf("__");
        call[at] = '\r';
        call[at + 1] = '\n';
        final RecordingConnection transport = new RecordingConnection(false);
        final ServerWireConnection connection = new ServerWireConnection(server(), transport);
        connection.onMessage(transport, ByteBuffer.wrap(call));

        assertThat(connection.closed).as("a protocol error").isTrue();
        assertThat(text(transport)).contains("method name with a byte outside printable ASCII")
            .doesNotContain("WARN_forged");
    }
}
