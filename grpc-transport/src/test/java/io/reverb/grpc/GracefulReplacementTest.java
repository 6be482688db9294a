package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.grpc.test.EchoRpc;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.publisher.Mono;

/**
 * Graceful shutdown with a replacement (issue 25, item 5): callers keep many calls in flight while the server shuts
 * down gracefully and a new one takes its address; every call ends OK, each handled exactly once (old + new server's
 * handler counts = calls made): calls the old server refused while draining were resent to the new one (transparent
 * retry: rpc-core's for native channels, grpc-java's for grpc-java channels), and those it had started finished.
 * Calls are wait-for-ready, or fail-fast ({@code grpc-fail-fast}): between the old server closing its listener and
 * the new one binding nothing listens there, and a fail-fast call that needs a new connection in that instant failed
 * UNAVAILABLE (with every fail-fast call of grpc-java's backoff after it) until the grace after a GOAWAY
 * ({@link GoAwayGrace}; lengthened here so that a loaded machine's slow start of the new server stays within it).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class GracefulReplacementTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final int CALLERS = 16;
    private static final int CALLS_PER_PHASE = 300;
    private static final Duration DEADLINE = Duration.ofSeconds(30);
    /** Between the old server's shutdown and the new one's start (the fault suite saw 17 ms between two processes). */
    private static final long GAP_MILLIS = 50;

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final long defaultGrace = GoAwayGrace.graceNanos;
    private String address;

    /**
     * Answers after a short pause, so that calls are in flight when the server shuts down; counts its calls (also
     * {@link GoAwayGraceTest}'s servers).
     */
    static final class CountingEcho extends EchoRpc.EchoImplBase
    {
        final AtomicInteger handled = new AtomicInteger();

        @Override
        public Mono<EchoReply> unary(final EchoRequest request)
        {
            handled.incrementAndGet();
            return Mono.delay(Duration.ofMillis(2)).thenReturn(EchoReply.newBuilder().setPayload(request.getPayload()).build());
        }
    }

    @AfterEach
    void closeAndCheckForLeaks() throws Exception
    {
        GoAwayGrace.graceNanos = defaultGrace;
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
        AbstractReverbConformanceTest.assertReleased(address);
    }

    private RpcServer start(final String uri, final CountingEcho service) throws InterruptedException
    {
        // the old server's listener is closed by now; a port may take a moment to be free for a new listener
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true)
        {
            try
            {
                final RpcServer server = RpcServer.builder(uri).addService(service)
                    .shutdownGracePeriod(DEADLINE).build().start();
                closeables.add(server);
                return server;
            }
            catch (final RuntimeException e)
            {
                if (System.nanoTime() - until > 0)
                {
                    throw e;
                }
                Thread.sleep(5);
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"tcp, native", "tcp, grpc", "shm, native", "shm, grpc", "tcp, grpc-fail-fast", "shm, grpc-fail-fast"})
    void noCallIsLostWhenAServerShutsDownGracefullyAndAnotherTakesItsAddress(final String scheme, final String client)
        throws Exception
    {
        final String bind = "tcp".equals(scheme) ? "tcp://127.0.0.1:0" :
            "shm://replace-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
        address = bind;
        final CountingEcho oldService = new CountingEcho();
        final RpcServer old = start(bind, oldService);
        final String target = old.address();

        final Supplier<Runnable> caller;
        final EchoRequest request = EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("x")).build();
        if ("native".equals(client))
        {
            final RpcChannel channel = RpcChannel.builder(target).build();
            closeables.add(channel);
            final EchoRpc.EchoReactorStub stub = EchoRpc.newReactorStub(channel).withDeadlineAfter(DEADLINE)
                .withWaitForReady();
            caller = () -> () -> stub.unary(request).block(DEADLINE.plusSeconds(5));
        }
        else
        {
            final ManagedChannel channel = ReverbChannelBuilder.forTarget(target).build();
            closeables.add(() ->
            {
                channel.shutdownNow();
                assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
            });
            final boolean failFast = "grpc-fail-fast".equals(client);
            if (failFast)
            {
                GoAwayGrace.graceNanos = TimeUnit.SECONDS.toNanos(20);
            }
            caller = () -> () ->
            {
                final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
                (failFast ? stub : stub.withWaitForReady()).unary(request);
            };
        }

        final AtomicLong ok = new AtomicLong();
        final Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
        final CountingEcho newService = new CountingEcho();
        final boolean[] stop = {false};
        final List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < CALLERS; i++)
        {
            final Runnable call = caller.get();
            final Thread t = new Thread(() ->
            {
                while (!stopped(stop))
                {
                    try
                    {
                        call.run();
                        ok.incrementAndGet();
                    }
                    catch (final Throwable e)
                    {
                        failures.add(e);
                    }
                }
            }, "replacement-caller-" + i);
            t.start();
            threads.add(t);
        }
        try
        {
            awaitCount(oldService.handled, CALLS_PER_PHASE, "calls on the old server");
            old.shutdown(); // graceful: GOAWAY, calls it started finish, calls it refuses go to the next server
            Thread.sleep(GAP_MILLIS); // another process takes the address: nothing listens meanwhile
            start(target, newService);
            awaitCount(newService.handled, CALLS_PER_PHASE, "calls on the new server");
        }
        finally
        {
            synchronized (stop)
            {
                stop[0] = true;
            }
            for (final Thread t : threads)
            {
                t.join(TimeUnit.SECONDS.toMillis(60));
            }
        }
        assertThat(failures).as("calls that did not end OK").isEmpty();
        assertThat(oldService.handled.get() + newService.handled.get()).as("handled exactly once, old + new server")
            .isEqualTo(ok.get());
        assertThat(old.awaitTermination(10, TimeUnit.SECONDS)).as("the old server drained and ended").isTrue();
    }

    private static boolean stopped(final boolean[] stop)
    {
        synchronized (stop)
        {
            return stop[0];
        }
    }

    private static void awaitCount(final AtomicInteger count, final int atLeast, final String what)
        throws InterruptedException
    {
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (count.get() < atLeast)
        {
            assertThat(System.nanoTime() - until).as(what + ": " + count.get()).isNegative();
            Thread.sleep(2);
        }
    }
}
