package io.reverb.grpc;

import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Regression test of issue 25: a blocking server-streaming call with a deadline, to a plain grpc-java handler that
 * registers {@code setOnCancelHandler} and answers only after the deadline. The client gets DEADLINE_EXCEEDED, and
 * the handler must learn of it (its cancel handler runs) every time, as over Netty.
 *
 * <p>Before the fix about half of such calls over Reverb ran the handler's completion instead: when grpc-java's
 * server-side deadline fired before the client's CANCEL arrived, {@code ReverbServerStream.cancel} ended the stream
 * as if the status had been sent (the listener's {@code closed(OK)}), so grpc-java called {@code onComplete} and the
 * cancel handler never ran. Many calls at once per run make the race show on every run of the unfixed code.
 *
 * <p>Counts, never times: each call's deadline is short, the handler waits for its {@code Context} to be cancelled
 * (at most 10 s, a safety net) and then tries to answer, as the reported handler did after its sleep.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DeadlineReachesHandlerTest
{
    private static final int CALLS = 32;
    private static final int ROUNDS = 5;
    private static final AtomicInteger IDS = new AtomicInteger();

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
    @ValueSource(strings = {"netty", "inproc", "shm", "tcp"})
    void everyHandlerShouldLearnOfTheClientsDeadline(final String transport) throws Exception
    {
        final SlowService service = new SlowService();
        start(transport, service);
        final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel);
        // connected and warm, so that the calls below reach the server before their short deadline
        assertThat(stub.unary(EchoRequest.getDefaultInstance())).isEqualTo(EchoReply.getDefaultInstance());
        // a round in which no call reached its handler before the deadline (a machine loaded enough) asserts nothing
        // either way: it is run again, at most ROUNDS times
        List<Handler> handlers = List.of();
        int rounds = 0;
        while (rounds < ROUNDS && handlers.isEmpty())
        {
            rounds++;
            callsWithDeadline(stub);
            // every handler that started ends, one way or the other (a call whose deadline passed before it reached
            // the server may never start one); then count which way
            handlers = service.awaitEnded();
        }
        // one line per transport, read by bin/grpc-deadline-loop
        System.out.printf("DeadlineReachesHandlerTest %s: %d of %d calls reached their handler (%d round(s)), %d of" +
            " those handlers told onCancel%n", transport, handlers.size(), CALLS * rounds, rounds,
            handlers.stream().filter(h -> h.cancelled && !h.completed).count());
        assertThat(handlers).as("handlers started").isNotEmpty();
        assertThat(handlers).as("handlers told the call completed").noneMatch(h -> h.completed);
        assertThat(handlers).as("handlers told of the cancellation").allMatch(h -> h.cancelled);
        assertThat(handlers).as("handlers whose Context was cancelled").allMatch(h -> h.contextCancelled);
    }

    private static void callsWithDeadline(final EchoGrpc.EchoBlockingStub stub) throws Exception
    {
        final ExecutorService callers = Executors.newFixedThreadPool(CALLS);
        try
        {
            final List<Future<Status.Code>> outcomes = new ArrayList<>();
            for (int i = 0; i < CALLS; i++)
            {
                outcomes.add(callers.submit(() ->
                {
                    try
                    {
                        final Iterator<EchoReply> replies = stub.withDeadlineAfter(500, TimeUnit.MILLISECONDS)
                            .serverStream(EchoRequest.newBuilder().setCount(1).build());
                        while (replies.hasNext())
                        {
                            replies.next();
                        }
                        return Status.Code.OK;
                    }
                    catch (final StatusRuntimeException e)
                    {
                        return e.getStatus().getCode();
                    }
                }));
            }
            for (final Future<Status.Code> outcome : outcomes)
            {
                assertThat(outcome.get(30, TimeUnit.SECONDS)).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
            }
        }
        finally
        {
            callers.shutdownNow();
        }
    }

    private void start(final String transport, final SlowService service) throws Exception
    {
        if ("netty".equals(transport))
        {
            server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(service).build()
                .start();
            channel = NettyChannelBuilder.forAddress((InetSocketAddress)server.getListenSockets().get(0))
                .usePlaintext().build();
            return;
        }
        switch (transport)
        {
            case "tcp":
                address = "tcp://127.0.0.1:0";
                break;
            case "shm":
                address = "shm://grpc-deadline-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
                break;
            default:
                address = "inproc://grpc-deadline-" + IDS.incrementAndGet();
                break;
        }
        server = ReverbServerBuilder.forAddress(address).addService(service).build().start();
        channel = ReverbChannelBuilder.forTarget(server.getListenSockets().get(0).toString()).build();
    }

    /** One handler invocation: how it learned of the end of its call. */
    private static final class Handler
    {
        volatile boolean cancelled;
        volatile boolean completed;
        volatile boolean contextCancelled;

        boolean ended()
        {
            return cancelled || completed;
        }
    }

    /** Server streaming that answers only once its call is over, as the reported handler did after sleeping. */
    private static final class SlowService extends EchoGrpc.EchoImplBase
    {
        private final Queue<Handler> handlers = new ConcurrentLinkedQueue<>();

        /**
         * @return the handlers started so far, once each has ended (a safety net of 30 s, then the caller's
         * assertions say which did not).
         */
        List<Handler> awaitEnded() throws InterruptedException
        {
            final long safetyNet = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            List<Handler> snapshot = new ArrayList<>(handlers);
            while (System.nanoTime() - safetyNet < 0)
            {
                if (snapshot.stream().allMatch(Handler::ended))
                {
                    final List<Handler> again = new ArrayList<>(handlers);
                    if (again.size() == snapshot.size())
                    {
                        break;
                    }
                    snapshot = again; // more started meanwhile: wait for them too
                }
                Thread.sleep(10);
            }
            return snapshot;
        }

        @Override
        public void unary(final EchoRequest request, final StreamObserver<EchoReply> responses)
        {
            responses.onNext(EchoReply.getDefaultInstance());
            responses.onCompleted();
        }

        @Override
        public void serverStream(final EchoRequest request, final StreamObserver<EchoReply> responses)
        {
            final Handler handler = new Handler();
            final ServerCallStreamObserver<EchoReply> call = (ServerCallStreamObserver<EchoReply>)responses;
            call.setOnCancelHandler(() -> handler.cancelled = true);
            call.setOnCloseHandler(() -> handler.completed = true);
            handlers.add(handler);
            final CountDownLatch contextDone = new CountDownLatch(1);
            Context.current().addListener(c -> contextDone.countDown(), Runnable::run);
            try
            {
                handler.contextCancelled = contextDone.await(10, TimeUnit.SECONDS);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
            try
            {
                // what the reported handler did after its sleep: answer a call that is gone
                call.onNext(EchoReply.newBuilder().setIndex(0).build());
                call.onCompleted();
            }
            catch (final StatusRuntimeException e)
            {
                // grpc-java refuses a write to a call it knows cancelled
            }
        }
    }
}
