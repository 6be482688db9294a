package io.reverb.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientStreamTracer;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.InternalClientCalls;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoRequest;
import com.google.common.util.concurrent.MoreExecutors;
import com.google.protobuf.ByteString;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A unary call of grpc-java's blocking stub ends on the thread that waits for it, in one task: the transport gives
 * the response and status of the call's Reverb stream to the stub's executor together (the call is a blocking
 * stub's by grpc-java's stub-type option, {@code InternalClientCalls.getStubType}, not by its executor's class), and
 * the callbacks grpc-java's call layers make from there (the retry layer's commit, headers, message, close) queue
 * behind that task on the same thread instead of each waking it again. Before, they were made on the transport's
 * thread one by one, and each woke the waiting thread: 3.5 wake-ups per call, counted with JFR's
 * {@code jdk.ThreadPark} (benchmarks/results/20261202-1300-grpc-handoff/RESULTS.md); on the stream SPI without the
 * hand-off, 2.8 per call (GrpcAllocProbe, grpc-noretry).
 *
 * <p>What shows where the callbacks run is a stream tracer: grpc-java's transports call it as they call the stream's
 * listener. Calls whose executor is not a blocking stub's keep running on the transport's thread. A blocking call
 * ended early (its thread interrupted, its deadline reached) ends its stream as before: the channel terminates once
 * shut down gracefully, which it does only when the transport holds no stream any more.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BlockingCallHandOffTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final int CALLS = 20;

    private final GrpcEchoService service = new GrpcEchoService();
    private Server server;
    private ManagedChannel channel;
    private String address;

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
        if (address != null)
        {
            AbstractReverbConformanceTest.assertReleased(address);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void blockingUnaryCallShouldEndOnItsWaitingThread(final String transport) throws Exception
    {
        start(transport, true);
        final ThreadRecorder recorder = new ThreadRecorder();
        final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel).withInterceptors(recorder);
        final EchoRequest request = EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("hello")).build();
        for (int i = 0; i < CALLS; i++)
        {
            assertThat(stub.unary(request).getPayload()).isEqualTo(request.getPayload());
        }
        // every inbound message and every end of stream the transport reported, and on the calling thread
        assertThat(recorder.inboundMessages).hasSize(CALLS).containsOnly(Thread.currentThread());
        assertThat(recorder.closes).hasSize(CALLS).containsOnly(Thread.currentThread());
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void blockingUnaryCallThatFailsShouldEndOnItsWaitingThread(final String transport) throws Exception
    {
        start(transport, true);
        final ThreadRecorder recorder = new ThreadRecorder();
        final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel).withInterceptors(recorder);
        final EchoRequest request = EchoRequest.newBuilder()
            .setErrorCode(Status.Code.NOT_FOUND.value()).setErrorMessage("no such thing").build();
        assertThatThrownBy(() -> stub.unary(request)).isInstanceOfSatisfying(StatusRuntimeException.class, e ->
        {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
            assertThat(e.getStatus().getDescription()).isEqualTo("no such thing");
            assertThat(e.getTrailers().get(GrpcEchoService.ERROR_ASCII)).isNotNull();
        });
        assertThat(recorder.inboundMessages).isEmpty();
        assertThat(recorder.closes).containsExactly(Thread.currentThread());
    }

    @Test
    void asynchronousCallsShouldStayOnTheTransportsThread() throws Exception
    {
        start("shm", true);
        final ThreadRecorder recorder = new ThreadRecorder();
        final EchoGrpc.EchoFutureStub stub = EchoGrpc.newFutureStub(channel).withInterceptors(recorder);
        assertThat(stub.unary(EchoRequest.getDefaultInstance()).get(10, TimeUnit.SECONDS).getTotalBytes())
            .as("no deadline").isEqualTo(-1);
        assertThat(recorder.closes).hasSize(1).doesNotContain(Thread.currentThread());
        // only a blocking stub's call is handed to its caller's executor: by grpc-java's stub-type option
        assertThat(ReverbClientStream.waitingCaller(CallOptions.DEFAULT.withExecutor(MoreExecutors.directExecutor())))
            .isNull();
        assertThat(ReverbClientStream.waitingCaller(CallOptions.DEFAULT)).isNull();
    }

    @Test
    void onlyABlockingStubsCallShouldBeHandedToItsCaller()
    {
        final Executor executor = command -> { };
        // twice each: the second answer comes from the per-stub-type cache, which must not mix the types up
        for (int round = 0; round < 2; round++)
        {
            for (final InternalClientCalls.StubType type : InternalClientCalls.StubType.values())
            {
                final CallOptions options = InternalClientCalls.setStubType(
                    CallOptions.DEFAULT.withExecutor(executor), type);
                assertThat(ReverbClientStream.waitingCaller(options)).as("%s, round %d", type, round)
                    .isSameAs(type == InternalClientCalls.StubType.BLOCKING ? executor : null);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void interruptedBlockingCallShouldEndItsStream(final String transport) throws Exception
    {
        start(transport, false); // the handler waits on grpc-java's executor, not on the transport's thread
        final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel);
        stub.unary(EchoRequest.getDefaultInstance()); // connected
        final AtomicReference<Throwable> outcome = new AtomicReference<>();
        final Thread caller = new Thread(() ->
        {
            try
            {
                stub.unary(EchoRequest.newBuilder().setDelayMillis(30_000).build());
            }
            catch (final Throwable t)
            {
                outcome.set(t);
            }
        }, "blocking-caller");
        caller.start();
        assertThat(service.delayedStarted.await(10, TimeUnit.SECONDS)).isTrue();
        caller.interrupt();
        caller.join(10_000);
        assertThat(caller.isAlive()).isFalse();
        assertThat(outcome.get()).isInstanceOfSatisfying(StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.CANCELLED));
        assertStreamsEnded();
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void blockingCallPastItsDeadlineShouldEndItsStream(final String transport) throws Exception
    {
        start(transport, false);
        final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel);
        stub.unary(EchoRequest.getDefaultInstance()); // connected
        assertThatThrownBy(() -> stub.withDeadlineAfter(50, TimeUnit.MILLISECONDS)
            .unary(EchoRequest.newBuilder().setDelayMillis(30_000).build()))
            .isInstanceOfSatisfying(StatusRuntimeException.class,
                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED));
        // and the next blocking call on the same channel is answered
        final EchoRequest request = EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("again")).build();
        assertThat(ClientCalls.blockingUnaryCall(channel, EchoGrpc.getUnaryMethod(), CallOptions.DEFAULT, request)
            .getPayload()).isEqualTo(request.getPayload());
        assertStreamsEnded();
    }

    /** A graceful shutdown terminates the channel only once its transports hold no stream. */
    private void assertStreamsEnded() throws InterruptedException
    {
        channel.shutdown();
        assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).as("channel terminated").isTrue();
    }

    private void start(final String transport, final boolean direct) throws Exception
    {
        address = "shm".equals(transport) ?
            "shm://grpc-handoff-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet() : "tcp://127.0.0.1:0";
        final ReverbServerBuilder serverBuilder = ReverbServerBuilder.forAddress(address).addService(service);
        if (direct)
        {
            serverBuilder.directExecutor();
        }
        server = serverBuilder.build().start();
        final ReverbChannelBuilder channelBuilder =
            ReverbChannelBuilder.forTarget(server.getListenSockets().get(0).toString());
        if (direct)
        {
            channelBuilder.directExecutor();
        }
        channel = channelBuilder.build();
    }

    /** Records the threads on which the transport reports each call's inbound messages and end to grpc-java. */
    private static final class ThreadRecorder implements ClientInterceptor
    {
        final List<Thread> inboundMessages = new CopyOnWriteArrayList<>();
        final List<Thread> closes = new CopyOnWriteArrayList<>();
        /** The tracers of streams that were closed: a retried call has one per attempt. */
        private final Set<ClientStreamTracer> closed = ConcurrentHashMap.newKeySet();

        @Override
        public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
            final MethodDescriptor<ReqT, RespT> method, final CallOptions callOptions, final Channel next)
        {
            return next.newCall(method, callOptions.withStreamTracerFactory(new ClientStreamTracer.Factory()
            {
                @Override
                public ClientStreamTracer newClientStreamTracer(final ClientStreamTracer.StreamInfo info,
                    final Metadata headers)
                {
                    return new ClientStreamTracer()
                    {
                        @Override
                        public void inboundMessage(final int seqNo)
                        {
                            inboundMessages.add(Thread.currentThread());
                        }

                        @Override
                        public void streamClosed(final Status status)
                        {
                            if (closed.add(this))
                            {
                                closes.add(Thread.currentThread());
                            }
                        }
                    };
                }
            }));
        }
    }
}
