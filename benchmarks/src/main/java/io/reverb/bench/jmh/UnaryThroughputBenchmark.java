package io.reverb.bench.jmh;

import com.google.protobuf.BytesValue;
import io.reverb.bench.EchoService;
import io.reverb.bench.target.CallObserver;
import io.reverb.bench.target.EchoClient;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Unary 64 B throughput with a fixed number of calls outstanding (1, 16, 128): that many lanes
 * each re-issue a call from the completion of the previous one, through the asynchronous API.
 * The benchmark thread only counts: each invocation waits for {@code outstanding} more
 * completions. Read the {@code calls} secondary score (calls/s), not the primary (batches/s).
 */
public class UnaryThroughputBenchmark extends JmhSettings
{
    /**
     * Waits for {@code outstanding} more completions of the pipeline.
     *
     * @param pipeline the running lanes.
     * @param calls    counts calls for the secondary score.
     */
    @Benchmark
    public void unary64(final Pipeline pipeline, final Calls calls)
    {
        pipeline.awaitMore(pipeline.outstanding);
        calls.calls += pipeline.outstanding;
    }

    /**
     * Calls completed in the iteration, reported as calls/s.
     */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Calls
    {
        /** Completed calls. */
        public long calls;

        /**
         * Zeroes the counter.
         */
        @Setup(Level.Iteration)
        public void reset()
        {
            calls = 0;
        }
    }

    /**
     * A target with {@code outstanding} lanes of back-to-back asynchronous calls.
     */
    @State(Scope.Benchmark)
    public static class Pipeline
    {
        /** Which framework and transport; see {@link JmhTargets#ALL}. */
        @Param({"reverb-shm-adaptive", "reverb-shm-busy", "reverb-shm-event", "reverb-inproc", "grpc-netty", "grpc-inproc"})
        public String target;

        /** Calls in flight at once. */
        @Param({"1", "16", "128"})
        public int outstanding;

        private final EchoTargetState connection = new EchoTargetState();
        private final BytesValue request = EchoService.payload(64);
        private final AtomicLong completed = new AtomicLong();
        private final AtomicLong errors = new AtomicLong();
        private volatile long waitingFor = Long.MAX_VALUE;
        private volatile Thread waiter;
        private volatile boolean running;
        private CountDownLatch stopped;
        private long awaited;
        private volatile Throwable lastError;

        /**
         * Starts the target and the lanes.
         *
         * @throws Exception if the target cannot run here.
         */
        @Setup(Level.Trial)
        public void start() throws Exception
        {
            connection.target = target;
            connection.start();
            running = true;
            stopped = new CountDownLatch(outstanding);
            awaited = 0;
            for (int i = 0; i < outstanding; i++)
            {
                new Lane(connection.client).next();
            }
        }

        void awaitMore(final int calls)
        {
            awaited += calls;
            if (completed.get() >= awaited)
            {
                return;
            }
            waiter = Thread.currentThread();
            waitingFor = awaited;
            while (completed.get() < awaited)
            {
                LockSupport.parkNanos(this, 1_000_000L);
                if (errors.get() > 0)
                {
                    throw new IllegalStateException("calls failed: " + errors.get(), lastError);
                }
            }
            waitingFor = Long.MAX_VALUE;
        }

        /**
         * Stops the lanes, waits for calls in flight, closes the target.
         *
         * @throws InterruptedException if interrupted while draining.
         */
        @TearDown(Level.Trial)
        public void stop() throws InterruptedException
        {
            running = false;
            final boolean drained = stopped.await(10, TimeUnit.SECONDS);
            connection.stop();
            if (!drained)
            {
                throw new IllegalStateException("calls still outstanding 10 s after the benchmark stopped");
            }
            if (errors.get() > 0)
            {
                throw new IllegalStateException("calls failed: " + errors.get(), lastError);
            }
        }

        private final class Lane implements CallObserver
        {
            private final EchoClient.Caller caller;
            private final AtomicInteger wip = new AtomicInteger();

            Lane(final EchoClient client)
            {
                caller = client.newCaller(this);
            }

            void next()
            {
                if (wip.getAndIncrement() != 0)
                {
                    return;
                }
                do
                {
                    if (!running)
                    {
                        stopped.countDown();
                        return;
                    }
                    caller.echo(request);
                }
                while (wip.decrementAndGet() != 0);
            }

            @Override
            public void onMessage()
            {
            }

            @Override
            public void onClose(final int statusCode, final Throwable error)
            {
                if (statusCode != 0)
                {
                    lastError = error;
                    errors.incrementAndGet();
                }
                if (completed.incrementAndGet() >= waitingFor)
                {
                    final Thread thread = waiter;
                    if (thread != null)
                    {
                        LockSupport.unpark(thread);
                    }
                }
                next();
            }
        }
    }
}
