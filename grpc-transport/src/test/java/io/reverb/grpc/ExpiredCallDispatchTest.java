package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.grpc.test.EchoRpc;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.StatusCode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A grpc-java server over Reverb does not run the handler of a call whose client gave up (deadline) before the
 * server dispatched it (issue 25, item 4: a server frozen by SIGSTOP and thawed started ~150 handlers for callers
 * long gone). The server's executor holds every dispatch on a latch until the client's deadline passed and its
 * CANCEL reached the server (counted by a stream tracer), then lets them run: no handler may start.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ExpiredCallDispatchTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final long CLIENT_DEADLINE_MILLIS = 300;

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final GrpcEchoService service = new GrpcEchoService();
    private final CountDownLatch release = new CountDownLatch(1);
    private final AtomicInteger streamsCreated = new AtomicInteger();
    private final AtomicInteger streamsClosed = new AtomicInteger();
    private final ExecutorService pool = Executors.newFixedThreadPool(2);
    private String address;

    @AfterEach
    void closeAndCheckForLeaks() throws Exception
    {
        release.countDown();
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
        pool.shutdownNow();
        AbstractReverbConformanceTest.assertReleased(address);
    }

    private String startHeldServer(final String scheme) throws Exception
    {
        address = "tcp".equals(scheme) ? "tcp://127.0.0.1:0" : "inproc://expired-dispatch-" + IDS.incrementAndGet();
        final Server server = ReverbServerBuilder.forAddress(address)
            .addService(service)
            .executor(task -> pool.execute(() ->
            {
                try
                {
                    release.await();
                }
                catch (final InterruptedException e)
                {
                    Thread.currentThread().interrupt();
                }
                task.run();
            }))
            .addStreamTracerFactory(new ServerStreamTracer.Factory()
            {
                @Override
                public ServerStreamTracer newServerStreamTracer(final String fullMethodName, final Metadata headers)
                {
                    streamsCreated.incrementAndGet();
                    return new ServerStreamTracer()
                    {
                        @Override
                        public void streamClosed(final Status status)
                        {
                            streamsClosed.incrementAndGet();
                        }
                    };
                }
            })
            .build().start();
        closeables.add(() ->
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        return server.getListenSockets().get(0).toString();
    }

    private void releaseAndCheckNoHandlerRan(final int calls) throws Exception
    {
        // the server saw every call end (the clients' CANCELs) while their dispatch was held
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (streamsClosed.get() < calls)
        {
            assertThat(System.nanoTime() - until).as("server saw the calls end: " + streamsClosed.get() + " of " +
                streamsCreated.get() + " begun, " + calls + " made").isNegative();
            Thread.sleep(2);
        }
        release.countDown();
        // the held dispatches run now; one more task on each thread behind them shows they are done
        for (int i = 0; i < 2; i++)
        {
            pool.submit(() -> { }).get(20, TimeUnit.SECONDS);
        }
        assertThat(service.unaryAttempts.get()).as("handlers started for callers long gone").isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "tcp"})
    void grpcClientCallsExpiredBeforeDispatchShouldNotRunTheirHandler(final String scheme) throws Exception
    {
        final String target = startHeldServer(scheme);
        final ManagedChannel channel = ReverbChannelBuilder.forTarget(target).build();
        closeables.add(() ->
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        // connected first: a call must not spend its short deadline waiting for the connection and never leave
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (channel.getState(true) != ConnectivityState.READY)
        {
            assertThat(System.nanoTime() - until).as("connected").isNegative();
            Thread.sleep(2);
        }
        final int calls = 5;
        for (int i = 0; i < calls; i++)
        {
            assertThatThrownBy(() -> EchoGrpc.newBlockingStub(channel)
                .withDeadlineAfter(CLIENT_DEADLINE_MILLIS, TimeUnit.MILLISECONDS)
                .unary(EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("late")).build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class,
                    e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED));
        }
        releaseAndCheckNoHandlerRan(calls);
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "tcp"})
    void nativeClientCallsExpiredBeforeDispatchShouldNotRunTheirHandler(final String scheme) throws Exception
    {
        final String target = startHeldServer(scheme);
        final RpcChannel channel = RpcChannel.builder(target).build();
        closeables.add(channel);
        // connected first: a call must not spend its short deadline connecting
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's ConnectivityState is imported, Reverb's is spelled out
        while (channel.state(true) != io.reverb.rpc.ConnectivityState.READY)
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        {
            assertThat(System.nanoTime() - until).as("connected").isNegative();
            Thread.sleep(2);
        }
        final int calls = 5;
        for (int i = 0; i < calls; i++)
        {
            assertThatThrownBy(() -> EchoRpc.newReactorStub(channel)
                .withDeadlineAfter(Duration.ofMillis(CLIENT_DEADLINE_MILLIS))
                .unary(EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("late")).build())
                .block(Duration.ofSeconds(20)))
                .isInstanceOfSatisfying(RpcException.class,
                    e -> assertThat(e.status().code()).isEqualTo(StatusCode.DEADLINE_EXCEEDED));
        }
        releaseAndCheckNoHandlerRan(calls);
    }
}
