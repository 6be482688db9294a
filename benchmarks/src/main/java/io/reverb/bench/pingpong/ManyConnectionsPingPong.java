package io.reverb.bench.pingpong;

import io.reverb.rdma.engine.Connection;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.EngineListener;
import io.reverb.rdma.engine.MessageHandler;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.common.WriteClaim;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Engine benchmark with many connections on one poller per side (a benchmark, not a test): one client engine and one
 * server engine in this process, {@code N} connections between them, one 64-byte ping in flight on each, every pong
 * answered by the next ping from the client's poller thread. Prints round trips per second over all connections and
 * the round-trip time distribution. Made to see what the tcp provider's poller reads cost when a poller holds many
 * sockets ({@code -Dreverb.tcp.pollerReads=true|false}, the default of {@code VerbsConfig.tcpPollerReads()}).
 *
 * <p>Usage: {@code ManyConnectionsPingPong [scheme] [connections] [seconds] [mode]}, e.g.
 * {@code java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -cp benchmarks/target/reverb-bench.jar
 * io.reverb.bench.pingpong.ManyConnectionsPingPong tcp 64 5 ADAPTIVE}.
 */
public final class ManyConnectionsPingPong
{
    private static final int PING = 64;

    private ManyConnectionsPingPong()
    {
    }

    /**
     * Runs the benchmark.
     *
     * @param args scheme (default tcp), connections (default 64), seconds (default 5), polling mode (default ADAPTIVE)
     * @throws Exception if an engine cannot be opened or connected
     */
    public static void main(final String[] args) throws Exception
    {
        final String scheme = args.length > 0 ? args[0] : "tcp";
        final int connections = args.length > 1 ? Integer.parseInt(args[1]) : 64;
        final int seconds = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        final PollingMode mode = args.length > 3 ? PollingMode.valueOf(args[3]) : PollingMode.ADAPTIVE;
        final String address = "tcp".equals(scheme) ? "127.0.0.1:0" : "many-" + ProcessHandle.current().pid();
        final EngineConfig serverConfig = new EngineConfig().pollingMode(mode).name("server");
        final EngineConfig clientConfig = new EngineConfig().pollingMode(mode).name("client");
        try (RdmaEngine server = RdmaEngine.open(scheme, serverConfig);
            RdmaEngine client = RdmaEngine.open(scheme, clientConfig))
        {
            final EngineListener listener = server.listen(address, c ->
            {
                final WriteClaim reply = new WriteClaim();
                final UnsafeBuffer out = new UnsafeBuffer(0, 0);
                c.setHandler((buffer, offset, length) ->
                {
                    if (c.tryClaim(length, reply) == Connection.OK)
                    {
                        out.wrap(reply.buffer());
                        out.putBytes(reply.offset(), buffer, offset, length);
                        reply.commit();
                    }
                });
            });
            final Pinger[] pingers = new Pinger[connections];
            for (int i = 0; i < connections; i++)
            {
                final Connection connection = client.connect(listener.address());
                pingers[i] = new Pinger(connection);
                connection.setHandler(pingers[i]);
            }
            for (final Pinger pinger : pingers)
            {
                pinger.ping();
            }
            Thread.sleep(2_000); // warm-up
            for (final Pinger pinger : pingers)
            {
                pinger.record = true;
            }
            final long start = System.nanoTime();
            final long before = Pinger.ROUND_TRIPS.get();
            Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
            final long roundTrips = Pinger.ROUND_TRIPS.get() - before;
            final double elapsed = (System.nanoTime() - start) / 1e9;
            final Histogram all = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
            for (final Pinger pinger : pingers)
            {
                pinger.record = false;
            }
            Thread.sleep(100);
            for (final Pinger pinger : pingers)
            {
                synchronized (pinger.histogram)
                {
                    all.add(pinger.histogram);
                }
            }
            System.out.printf(Locale.ROOT, "%s %s connections=%d pollerReads=%s: %,.0f round trips/s, p50 %.1f us, " +
                "p99 %.1f us, p99.9 %.1f us%n", scheme, mode, connections,
                client.config().verbsConfig().tcpPollerReads(), roundTrips / elapsed,
                all.getValueAtPercentile(50) / 1000.0, all.getValueAtPercentile(99) / 1000.0,
                all.getValueAtPercentile(99.9) / 1000.0);
            for (final Pinger pinger : pingers)
            {
                pinger.stopped = true;
            }
        }
    }

    /** One connection's client side: sends the next ping when the pong arrives (on the client's poller thread). */
    private static final class Pinger implements MessageHandler
    {
        static final AtomicLong ROUND_TRIPS = new AtomicLong();

        final Connection connection;
        final WriteClaim claim = new WriteClaim();
        final UnsafeBuffer out = new UnsafeBuffer(0, 0);
        final Histogram histogram = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
        volatile boolean record;
        volatile boolean stopped;
        long sentAt;

        Pinger(final Connection connection)
        {
            this.connection = connection;
        }

        void ping()
        {
            int rc;
            while ((rc = connection.tryClaim(PING, claim)) == Connection.BACK_PRESSURED)
            {
                Thread.onSpinWait(); // one ping in flight: cannot last
            }
            if (rc != Connection.OK)
            {
                return;
            }
            out.wrap(claim.buffer());
            out.setMemory(claim.offset(), PING, (byte)1);
            sentAt = System.nanoTime();
            claim.commit();
        }

        @Override
        public void onMessage(final DirectBuffer buffer, final int offset, final int length)
        {
            if (record)
            {
                synchronized (histogram)
                {
                    histogram.recordValue(Math.min(System.nanoTime() - sentAt, TimeUnit.SECONDS.toNanos(10)));
                }
                ROUND_TRIPS.incrementAndGet();
            }
            if (!stopped)
            {
                ping();
            }
        }
    }
}
