package io.reverb.bench.floor;

import com.google.protobuf.BytesValue;
import io.aeron.Aeron;
import io.aeron.ExclusivePublication;
import io.aeron.Publication;
import io.aeron.driver.MediaDriver;
import io.aeron.driver.ThreadingMode;
import io.aeron.logbuffer.FragmentHandler;
import io.reverb.bench.EchoService;
import io.reverb.bench.target.ReverbTarget;
import io.reverb.common.WriteClaim;
import io.reverb.rdma.engine.Connection;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.EngineListener;
import io.reverb.rdma.engine.MessageHandler;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.stub.ClientCalls;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.agrona.concurrent.UnsafeBuffer;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;

/**
 * {@code reverb-bench software}: what a round trip costs in software alone. Each echo runs both of its ends on one
 * thread (one BUSY poller serving the client's and the server's connection of one engine; Aeron: one thread polling
 * both subscriptions), so nothing waits for another core and every line stays in that core's cache: a round trip's
 * time is the instructions of its two hops (send, receive, handler, reply), the figure that the two-process
 * benchmarks ({@code floor}, {@code shm://}, {@code floor+aeron}) add core-to-core transfers and waiting to. Unlike
 * theirs, it barely moves from run to run with the VM's vCPU placement, which makes it the one to compare a change to
 * the engine's or rpc-core's per-message path with (benchmarks/RESULTS.md, "Software per hop").
 *
 * <ul>
 *   <li>{@code floor}: the engine's own echo over its shm rings ({@link EngineFloorTarget}'s, without lanes);</li>
 *   <li>{@code shm://}: a unary call of rpc-core's native stub ({@code BytesValue}, the bench's echo service) whose
 *       completion starts the next one;</li>
 *   <li>{@code floor+aeron}: Aeron IPC, an exclusive publication each way, the echo copying the request into the reply
 *       with {@code offer}.</li>
 * </ul>
 * Each figure is the median of half-second samples after the warm-up; payloads up to the engine's eager limit.
 */
public final class SoftwareCost
{
    private static final long SAMPLE_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

    private SoftwareCost()
    {
    }

    /** One echo being measured: its round trips so far and its failure, if any (read from any thread). */
    private abstract static class Echo implements AutoCloseable
    {
        final AtomicLong trips = new AtomicLong();
        volatile Throwable failure;

        final long trips()
        {
            return trips.get();
        }

        final Throwable failure()
        {
            return failure;
        }

        /** One more round trip (the echo's own thread: a release store, no fence). */
        final void counted()
        {
            trips.lazySet(trips.get() + 1);
        }

        @Override
        public abstract void close() throws Exception;
    }

    /**
     * @param payload        bytes per message.
     * @param warmupNanos    warm-up before the samples.
     * @param durationNanos  time sampled.
     * @param rounds         times each echo is measured (each in turn).
     * @param out            where the table goes.
     * @return exit status: 0, or 1 if an echo failed.
     * @throws Exception if an echo cannot start.
     */
    public static int run(final int payload, final long warmupNanos, final long durationNanos, final int rounds,
        final PrintStream out) throws Exception
    {
        final int eagerLimit = new EngineConfig().eagerLimit();
        if (payload < 1 || payload > eagerLimit)
        {
            throw new IllegalArgumentException("software measures payloads of 1 to " + eagerLimit + " bytes (the engine's " +
                "eager limit: a larger message waits for a grant), not " + payload);
        }
        out.printf(Locale.ROOT, "software per round trip, %d B, each echo's two ends on one thread; median of %.1f s " +
            "samples over %.1f s after %.1f s warm-up%n", payload, SAMPLE_NANOS / 1e9, durationNanos / 1e9, warmupNanos / 1e9);
        out.printf(Locale.ROOT, "  %-5s %-12s %12s %12s %10s%n", "round", "echo", "ns/trip", "ns/hop", "x aeron");
        int status = 0;
        for (int round = 1; round <= rounds; round++)
        {
            final String[] names = {"floor", "shm://", "floor+aeron"};
            final double[] nanos = new double[names.length];
            for (int i = 0; i < names.length; i++)
            {
                try (Echo echo = start(names[i], payload))
                {
                    nanos[i] = measure(echo, warmupNanos, durationNanos);
                    if (echo.failure() != null)
                    {
                        out.println("  " + names[i] + " FAILED: " + echo.failure());
                        status = 1;
                    }
                }
            }
            for (int i = 0; i < names.length; i++)
            {
                out.printf(Locale.ROOT, "  %-5d %-12s %12.1f %12.1f %9.2fx%n", round, names[i], nanos[i], nanos[i] / 2,
                    nanos[i] / nanos[names.length - 1]);
            }
        }
        return status;
    }

    private static Echo start(final String name, final int payload) throws Exception
    {
        return switch (name)
        {
            case "floor" -> new EngineEcho(payload);
            case "shm://" -> new RpcEcho(payload);
            default -> new AeronEcho(payload);
        };
    }

    /** @return the median nanoseconds per round trip of the samples, NaN if the echo stopped */
    private static double measure(final Echo echo, final long warmupNanos, final long durationNanos)
        throws InterruptedException
    {
        TimeUnit.NANOSECONDS.sleep(warmupNanos);
        final List<Double> samples = new ArrayList<>();
        final long end = System.nanoTime() + durationNanos;
        long trips = echo.trips();
        long t = System.nanoTime();
        while (t < end && echo.failure() == null)
        {
            TimeUnit.NANOSECONDS.sleep(SAMPLE_NANOS);
            final long trips2 = echo.trips();
            final long t2 = System.nanoTime();
            if (trips2 == trips)
            {
                return Double.NaN; // stopped: its failure says why
            }
            samples.add((double)(t2 - t) / (trips2 - trips));
            trips = trips2;
            t = t2;
        }
        if (samples.isEmpty())
        {
            return Double.NaN;
        }
        final double[] sorted = samples.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    private static EngineConfig busyOnePoller(final String name)
    {
        return new EngineConfig().name(name).pollingMode(PollingMode.BUSY).pollerCount(1);
    }

    /** The engine's echo: a client connection and the server's, of one engine with one poller. */
    private static final class EngineEcho extends Echo
    {
        private final RdmaEngine engine;

        EngineEcho(final int payload) throws Exception
        {
            engine = RdmaEngine.open("shm", busyOnePoller("software-floor"));
            try
            {
                final EngineListener listener = engine.listen("reverb-software-" + ProcessHandle.current().pid(),
                    connection -> connection.setHandler(new Reply(connection, false)));
                final Connection client = engine.connect(listener.address());
                final Reply chain = new Reply(client, true);
                client.setHandler(chain);
                chain.send(new UnsafeBuffer(new byte[payload]), 0, payload);
            }
            catch (final Exception | Error ex)
            {
                engine.close();
                throw ex;
            }
        }

        /** Answers each message with its bytes; the client's also counts it. */
        private final class Reply implements MessageHandler
        {
            private final Connection connection;
            private final boolean counts;
            private final WriteClaim claim = new WriteClaim();
            private final UnsafeBuffer out = new UnsafeBuffer(0, 0);

            Reply(final Connection connection, final boolean counts)
            {
                this.connection = connection;
                this.counts = counts;
            }

            @Override
            public void onMessage(final DirectBuffer buffer, final int offset, final int length)
            {
                if (counts)
                {
                    counted();
                }
                send(buffer, offset, length);
            }

            void send(final DirectBuffer buffer, final int offset, final int length)
            {
                // One message in flight: a claim that finds no room is a fault of the engine, not back-pressure to wait on.
                final int rc = connection.tryClaim(length, claim);
                if (rc != Connection.OK)
                {
                    failure = new IllegalStateException("tryClaim returned " + rc + " with one message in flight");
                    return;
                }
                out.wrap(claim.buffer());
                out.putBytes(claim.offset(), buffer, offset, length);
                claim.commit();
            }
        }

        @Override
        public void close()
        {
            engine.close();
        }
    }

    /** rpc-core's unary call over shm://: server and channel on one engine with one poller, each call started by the last. */
    private static final class RpcEcho extends Echo implements CoreSubscriber<BytesValue>
    {
        private final RdmaEngine engine;
        private final RpcServer server;
        private final RpcChannel channel;
        private final BytesValue request;
        private volatile boolean stopped;

        RpcEcho(final int payload) throws Exception
        {
            engine = RdmaEngine.open("shm", busyOnePoller("software-rpc"));
            RpcServer started = null;
            try
            {
                started = RpcServer.builder("shm://reverb-software-rpc-" + ProcessHandle.current().pid())
                    .transportOptions(EngineOptions.of(engine)).addService(ReverbTarget.serviceDefinition()).build().start();
                server = started;
                channel = RpcChannel.builder(server.address()).transportOptions(EngineOptions.of(engine)).build();
            }
            catch (final Exception | Error ex)
            {
                if (started != null)
                {
                    started.close();
                }
                engine.close();
                throw ex;
            }
            request = EchoService.payload(payload);
            next();
        }

        private void next()
        {
            ClientCalls.unary(channel, ReverbTarget.ECHO_METHOD, CallOptions.DEFAULT, request).subscribe(this);
        }

        @Override
        public void onSubscribe(final Subscription subscription)
        {
            subscription.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(final BytesValue value)
        {
        }

        @Override
        public void onError(final Throwable t)
        {
            if (!stopped)
            {
                failure = t;
            }
        }

        @Override
        public void onComplete()
        {
            counted();
            if (!stopped)
            {
                next();
            }
        }

        @Override
        public void close()
        {
            stopped = true;
            channel.close();
            server.close();
            engine.close();
        }
    }

    /** Aeron IPC: an exclusive publication each way, one thread polling both subscriptions. */
    private static final class AeronEcho extends Echo
    {
        private static final int REQUEST_STREAM = 1001;
        private static final int REPLY_STREAM = 1002;
        private final MediaDriver driver;
        private final Aeron aeron;
        private final Thread thread;
        private volatile boolean running = true;

        AeronEcho(final int payload)
        {
            final String channel = "aeron:ipc?term-length=" + AeronFloorTarget.termLength(payload + EngineFloorTarget.HEADER);
            driver = MediaDriver.launch(new MediaDriver.Context()
                .aeronDirectoryName(AeronFloorTarget.directory("software-" + ProcessHandle.current().pid()))
                .dirDeleteOnStart(true)
                .dirDeleteOnShutdown(true)
                .threadingMode(ThreadingMode.SHARED)
                .sharedIdleStrategy(new SleepingMillisIdleStrategy(1)));
            try
            {
                aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(driver.aeronDirectoryName()));
            }
            catch (final RuntimeException | Error ex)
            {
                driver.close();
                throw ex;
            }
            final ExclusivePublication requests = aeron.addExclusivePublication(channel, REQUEST_STREAM);
            final var requestsIn = aeron.addSubscription(channel, REQUEST_STREAM);
            final ExclusivePublication replies = aeron.addExclusivePublication(channel, REPLY_STREAM);
            final var repliesIn = aeron.addSubscription(channel, REPLY_STREAM);
            final FragmentHandler echo = (buffer, offset, length, header) -> offer(replies, buffer, offset, length);
            final FragmentHandler back = (buffer, offset, length, header) ->
            {
                counted();
                offer(requests, buffer, offset, length);
            };
            thread = new Thread(() ->
            {
                while (running && (!requests.isConnected() || !replies.isConnected()))
                {
                    Thread.onSpinWait();
                }
                offer(requests, new UnsafeBuffer(new byte[payload]), 0, payload);
                while (running)
                {
                    requestsIn.poll(echo, 10);
                    repliesIn.poll(back, 10);
                }
            }, "software-aeron");
            thread.setDaemon(true);
            thread.start();
        }

        private void offer(final ExclusivePublication publication, final DirectBuffer buffer, final int offset,
            final int length)
        {
            long result;
            while ((result = publication.offer(buffer, offset, length)) < 0)
            {
                if (result == Publication.CLOSED || result == Publication.MAX_POSITION_EXCEEDED || !running)
                {
                    if (running)
                    {
                        failure = new IllegalStateException("offer returned " + result);
                        running = false;
                    }
                    return;
                }
            }
        }

        @Override
        public void close() throws InterruptedException
        {
            running = false;
            thread.join(TimeUnit.SECONDS.toMillis(10));
            aeron.close();
            driver.close();
        }
    }
}
