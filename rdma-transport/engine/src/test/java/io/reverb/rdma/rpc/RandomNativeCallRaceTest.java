package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.reactivestreams.Subscription;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Native Reactor calls with random cancels and deadlines, from four threads at once, over {@code inproc://},
 * {@code shm://} and {@code tcp://} (the grpc-java stubs' counterpart is reverb-grpc's {@code RandomCallRaceTest}):
 * server streams read in random demand steps and cancelled after a random number of messages, bidi streams that end or
 * are cancelled midway, client streams answered or cancelled, unary calls with deadlines of 1 us to 3 ms, some against
 * a handler that never answers, and large requests and responses (64 KiB to 1 MiB, the rendezvous path) cut by
 * deadlines or cancels; over shm and tcp also with the server's connections killed at random moments (as if its
 * process died for them), where any call may also end UNAVAILABLE but none may hang or leak. Every
 * call must end at most once, and exactly once unless cancelled, with what its last action allows (every message, in
 * order, when nothing was cancelled; DEADLINE_EXCEEDED for an expired deadline), no signal after its end, and no
 * registered buffer or byte held once the channel and server are gone. {@code -Dreverb.callRaces=N} runs N operations
 * per thread (default 200; a soak: 3000).
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class RandomNativeCallRaceTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration WAIT = Duration.ofSeconds(20);
    /** With kills: at least this many server connections are killed while the calls run. */
    private static final int KILLS = 5;
    private final ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    /** The server's connections are killed at random moments: any call may also end UNAVAILABLE. */
    private volatile boolean chaos;

    @ParameterizedTest(name = "{0}, server connections killed: {1}")
    @CsvSource({"inproc, false", "shm, false", "tcp, false", "shm, true", "tcp, true"})
    void everyCallShouldEndAtMostOnceAsItsLastActionAllows(final String scheme, final boolean kills) throws Exception
    {
        chaos = kills;
        final String bind = "shm".equals(scheme) ? "shm://native-races-" + ProcessHandle.current().pid() + "-" +
            IDS.incrementAndGet() : "tcp".equals(scheme) ? "tcp://127.0.0.1:0" :
            "inproc://native-races-" + IDS.incrementAndGet();
        final RpcServer server = RpcServer.builder(bind).addService(new TestService()).build().start();
        final String target = server.address();
        final RpcChannel channel = RpcChannel.builder(target).build();
        final Thread[] threads = new Thread[4];
        final int iterations = Integer.getInteger("reverb.callRaces", 200);
        // with kills, the callers go on until the killer cut connections under them a few times (bounded)
        final AtomicInteger killed = new AtomicInteger();
        final long callUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        for (int t = 0; t < threads.length; t++)
        {
            threads[t] = new Thread(() ->
            {
                for (int i = 0; i < iterations || kills && killed.get() < KILLS && System.nanoTime() - callUntil < 0; i++)
                {
                    try
                    {
                        switch (ThreadLocalRandom.current().nextInt(5))
                        {
                            case 0 -> serverStream(channel);
                            case 1 -> bidi(channel);
                            case 2 -> large(channel);
                            case 3 -> clientStream(channel);
                            default -> unary(channel);
                        }
                    }
                    catch (final Throwable e)
                    {
                        problems.add("thrown: " + e);
                    }
                }
            }, "native-races-" + t);
            threads[t].start();
        }
        final Thread killer = new Thread(() ->
        {
            final ThreadLocalRandom r = ThreadLocalRandom.current();
            while (!Thread.currentThread().isInterrupted())
            {
                try
                {
                    Thread.sleep(5 + r.nextInt(40));
                }
                catch (final InterruptedException e)
                {
                    return;
                }
                // as if the server's process died for them
                killed.addAndGet(EngineTransportTestHooks.killServerConnections(target));
            }
        }, "native-races-killer");
        if (kills)
        {
            killer.start();
        }
        for (final Thread t : threads)
        {
            t.join();
        }
        killer.interrupt();
        killer.join();
        if (kills)
        {
            assertThat(killed.get()).as("server connections killed under the calls").isGreaterThanOrEqualTo(KILLS);
        }
        channel.close();
        server.shutdown(Duration.ZERO);
        assertThat(server.awaitTermination(WAIT)).isTrue();
        final ResourceUsage usage = Transports.providerFor(Transports.parse(target)).resourceUsage();
        final long until = System.nanoTime() + WAIT.toNanos();
        while ((usage.buffersInUse() != 0 || usage.bytesInUse() != 0) && System.nanoTime() - until < 0)
        {
            Thread.sleep(5);
        }
        assertThat(usage.buffersInUse()).as("buffers held: %s", usage.describe()).isZero();
        assertThat(usage.bytesInUse()).as("bytes held: %s", usage.describe()).isZero();
        assertThat(List.copyOf(problems)).isEmpty();
    }

    /** Records the signals of one call and checks their order; requests {@code step} at a time (0: unbounded). */
    private final class Recorder<T> extends BaseSubscriber<T>
    {
        final CompletableFuture<Throwable> end = new CompletableFuture<>();
        final AtomicInteger received = new AtomicInteger();
        final String what;
        final int step;
        final int cancelAfter;
        volatile boolean cancelled;

        Recorder(final String what, final int step, final int cancelAfter)
        {
            this.what = what;
            this.step = step;
            this.cancelAfter = cancelAfter;
        }

        @Override
        protected void hookOnSubscribe(final Subscription subscription)
        {
            if (cancelAfter == 0)
            {
                cancelled = true;
                subscription.cancel();
                return;
            }
            subscription.request(step == 0 ? Long.MAX_VALUE : step);
        }

        @Override
        protected void hookOnNext(final T value)
        {
            if (end.isDone())
            {
                problems.add(what + ": a message after the end");
            }
            final int n = received.getAndIncrement();
            final int index = value instanceof BytesValue ?
                Integer.parseInt(((BytesValue)value).getValue().substring(1024).toStringUtf8()) :
                ((Int32Value)value).getValue();
            if (index != n)
            {
                problems.add(what + ": message " + index + " as the " + n + "th");
            }
            if (n + 1 == cancelAfter)
            {
                cancelled = true;
                cancel();
            }
            else if (step != 0 && (n + 1) % step == 0)
            {
                request(step);
            }
        }

        @Override
        protected void hookOnComplete()
        {
            ended(null);
        }

        @Override
        protected void hookOnError(final Throwable error)
        {
            ended(error);
        }

        private void ended(final Throwable error)
        {
            if (cancelled)
            {
                problems.add(what + ": an end after the cancel: " + error);
            }
            if (!end.complete(error))
            {
                problems.add(what + ": a second end: " + error);
            }
        }

        /** Waits for the end, or for a cancelled call to settle. */
        Throwable await() throws Exception
        {
            if (cancelAfter >= 0)
            {
                final long until = System.nanoTime() + WAIT.toNanos();
                while (!cancelled && !end.isDone() && System.nanoTime() - until < 0)
                {
                    Thread.sleep(0, 200_000);
                }
                if (cancelled)
                {
                    return null;
                }
            }
            return end.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        }
    }

    /** @return true if {@code error} is one of {@code codes}, or, while connections are killed, UNAVAILABLE. */
    private boolean endedWith(final Throwable error, final StatusCode... codes)
    {
        if (!(error instanceof RpcException))
        {
            return false;
        }
        final StatusCode code = ((RpcException)error).status().code();
        return chaos && code == StatusCode.UNAVAILABLE || Arrays.asList(codes).contains(code);
    }

    private void serverStream(final RpcChannel channel) throws Exception
    {
        final ThreadLocalRandom r = ThreadLocalRandom.current();
        final int count = 1 + r.nextInt(100);
        final int cancelAfter = r.nextInt(count + 20) - 1; // -1 or >= count: never cancelled
        final boolean cancel = cancelAfter >= 0 && cancelAfter < count;
        final Recorder<BytesValue> recorder = new Recorder<>("range count=" + count + " cancelAfter=" + cancelAfter,
            r.nextInt(6), cancel ? cancelAfter : -1);
        ClientCalls.serverStreaming(channel, TestService.RANGE, CallOptions.DEFAULT, Int32Value.of(count))
            .subscribe(recorder);
        final Throwable error = recorder.await();
        if (!recorder.cancelled && (error == null ? recorder.received.get() != count : !endedWith(error)))
        {
            problems.add(recorder.what + ": not cancelled, ended " + error + " with " + recorder.received.get());
        }
    }

    private void bidi(final RpcChannel channel) throws Exception
    {
        final ThreadLocalRandom r = ThreadLocalRandom.current();
        final int n = r.nextInt(30);
        final int cancelAfter = r.nextInt(n + 10) - 1;
        final boolean cancel = cancelAfter >= 0 && cancelAfter < n;
        final Recorder<Int32Value> recorder = new Recorder<>("bidi n=" + n + " cancelAfter=" + cancelAfter,
            r.nextInt(4), cancel ? cancelAfter : -1);
        ClientCalls.bidiStreaming(channel, TestService.BIDI, CallOptions.DEFAULT, Flux.range(0, n).map(Int32Value::of))
            .subscribe(recorder);
        final Throwable error = recorder.await();
        if (!recorder.cancelled && (error == null ? recorder.received.get() != n : !endedWith(error)))
        {
            problems.add(recorder.what + ": not cancelled, ended " + error + " with " + recorder.received.get());
        }
    }

    /** A large request or response (64 KiB to 1 MiB: the rendezvous path), cut by a deadline or a cancel. */
    private void large(final RpcChannel channel) throws Exception
    {
        final ThreadLocalRandom r = ThreadLocalRandom.current();
        final int size = 65_536 + r.nextInt(983_040);
        final long deadlineMicros = 1 + r.nextInt(5000);
        final boolean request = r.nextBoolean();
        final String what = (request ? "large request " : "large response ") + size + " deadline=" + deadlineMicros + "us";
        final CallOptions options =
            CallOptions.DEFAULT.withDeadlineAfter(Duration.ofNanos(TimeUnit.MICROSECONDS.toNanos(deadlineMicros)));
        final Mono<Integer> call = request ?
            ClientCalls.unary(channel, TestService.SIZE, options,
                BytesValue.newBuilder().setValue(ByteString.copyFrom(new byte[size])).build())
                .map(Int32Value::getValue) :
            ClientCalls.unary(channel, TestService.BLOB, options, Int32Value.of(size)).map(b -> b.getValue().size());
        if (r.nextInt(3) == 0)
        {
            // cancelled at a random moment instead (the subscription disposed)
            final Disposable subscription = call.subscribe(v -> { }, e -> { });
            Thread.sleep(0, r.nextInt(500_000));
            subscription.dispose();
            return;
        }
        final Optional<Throwable> error = call.map(n ->
            {
                if (n != size)
                {
                    problems.add(what + ": " + n + " bytes");
                }
                return Optional.<Throwable>empty();
            })
            .onErrorResume(e -> Mono.just(Optional.of(e))).toFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        if (error.isPresent() && !endedWith(error.get(), StatusCode.DEADLINE_EXCEEDED))
        {
            problems.add(what + ": ended " + error.get());
        }
    }

    private void clientStream(final RpcChannel channel) throws Exception
    {
        final ThreadLocalRandom r = ThreadLocalRandom.current();
        final int n = r.nextInt(40);
        final boolean cancel = r.nextBoolean();
        final String what = "sum n=" + n + " cancel=" + cancel;
        final Mono<Int32Value> call = ClientCalls.clientStreaming(channel, TestService.SUM, CallOptions.DEFAULT,
            Flux.range(0, n).map(Int32Value::of).concatWith(cancel ? Flux.never() : Flux.empty()));
        if (cancel)
        {
            final Disposable subscription = call.subscribe(v -> problems.add(what + ": answered " + v),
                e ->
                {
                    if (!endedWith(e))
                    {
                        problems.add(what + ": failed " + e);
                    }
                });
            Thread.sleep(0, r.nextInt(500_000));
            subscription.dispose();
            return;
        }
        final int sum;
        try
        {
            sum = call.block(WAIT).getValue();
        }
        catch (final RpcException e)
        {
            if (!endedWith(e))
            {
                problems.add(what + ": failed " + e);
            }
            return;
        }
        if (sum != n * (n - 1) / 2)
        {
            problems.add(what + ": sum " + sum);
        }
    }

    private void unary(final RpcChannel channel) throws Exception
    {
        final ThreadLocalRandom r = ThreadLocalRandom.current();
        final long deadlineMicros = 1 + r.nextInt(3000);
        final boolean answers = r.nextInt(4) != 0;
        final String what = "unary deadline=" + deadlineMicros + "us answers=" + answers;
        final Throwable error = ClientCalls.unary(channel, TestService.ECHO,
                CallOptions.DEFAULT.withDeadlineAfter(Duration.ofNanos(TimeUnit.MICROSECONDS.toNanos(deadlineMicros))),
                StringValue.of(answers ? "x" : "sleep"))
            .map(v -> Optional.<Throwable>empty()).onErrorResume(e -> Mono.just(Optional.of(e)))
            .toFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS).orElse(null);
        if (error == null && !answers)
        {
            problems.add(what + ": OK from a handler that never answers");
        }
        if (error != null && !endedWith(error, StatusCode.DEADLINE_EXCEEDED))
        {
            problems.add(what + ": ended " + error);
        }
    }
}
