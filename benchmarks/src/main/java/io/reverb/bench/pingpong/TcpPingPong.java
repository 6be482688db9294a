package io.reverb.bench.pingpong;

import io.reverb.rdma.provider.tcp.TcpVerbsProvider;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.util.Arrays;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * Ping-pong over the tcp verbs provider on loopback, both contexts in this JVM (each with its own NIC
 * thread): SEND/RECV of {@code size} bytes, unsignaled sends, the ping and pong threads polling their
 * receive CQ (yielding between empty polls). Prints RTT percentiles.
 *
 * <pre>
 * java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -cp &lt;class path&gt; \
 *     io.reverb.bench.pingpong.TcpPingPong [iterations] [warmup] [size]
 * </pre>
 */
public final class TcpPingPong
{
    private static final int SLOTS = 16;
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(30);

    private TcpPingPong()
    {
    }

    /**
     * @param args iterations (default 20,000), warm-up iterations (default 5,000), message size (default 64).
     */
    public static void main(final String[] args)
    {
        System.exit(new CommandLine(new Options()).execute(args));
    }

    /** The command line (picocli). */
    @Command(name = "TcpPingPong", mixinStandardHelpOptions = true,
        description = "Ping-pong over the tcp verbs provider on loopback, both contexts in this JVM.")
    static final class Options implements Callable<Integer>
    {
        @Parameters(index = "0", arity = "0..1", paramLabel = "ITERATIONS",
            description = "measured round trips (default: ${DEFAULT-VALUE})")
        int iterations = 20_000;

        @Parameters(index = "1", arity = "0..1", paramLabel = "WARMUP",
            description = "warm-up round trips (default: ${DEFAULT-VALUE})")
        int warmup = 5_000;

        @Parameters(index = "2", arity = "0..1", paramLabel = "SIZE",
            description = "message bytes, at most 4096 (default: ${DEFAULT-VALUE})")
        int size = 64;

        @Override
        public Integer call() throws Exception
        {
            final long[] rtts = run(iterations, warmup, size);
            Arrays.sort(rtts);
            System.out.printf("tcp:// loopback ping-pong, %d B, %d round trips%n", size, iterations);
            System.out.printf("RTT us: min %.1f  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f%n",
                rtts[0] / 1e3, percentile(rtts, 50), percentile(rtts, 90), percentile(rtts, 99), percentile(rtts, 99.9),
                rtts[rtts.length - 1] / 1e3);
            return 0;
        }
    }

    /**
     * Runs the ping-pong.
     *
     * @param iterations measured round trips.
     * @param warmup     round trips before measuring.
     * @param size       message size in bytes (at most 4096).
     * @return the measured round-trip times in nanoseconds, unsorted.
     * @throws Exception if the connection fails or a completion is not SUCCESS.
     */
    public static long[] run(final int iterations, final int warmup, final int size) throws Exception
    {
        if (size < 0 || size > 4096)
        {
            throw new IllegalArgumentException("size must be in 0..4096: " + size);
        }
        final long[] rtts = new long[iterations];
        try (VerbsContext server = new TcpVerbsProvider().open(VerbsConfig.defaults());
            VerbsContext client = new TcpVerbsProvider().open(VerbsConfig.defaults()))
        {
            final Endpoint pong;
            final Endpoint ping;
            try (ConnectionListener listener = server.listen("127.0.0.1:0", 1))
            {
                final CompletableFuture<Endpoint> accepted = CompletableFuture.supplyAsync(() ->
                {
                    try
                    {
                        final ConnectionRequest request = listener.accept(TIMEOUT_NANOS);
                        if (request == null)
                        {
                            throw new IllegalStateException("nobody connected");
                        }
                        return new Endpoint(server, attributes -> request.accept(attributes, null));
                    }
                    catch (final Exception ex)
                    {
                        throw new IllegalStateException(ex);
                    }
                });
                ping = new Endpoint(client, attributes -> client.connect(listener.localAddress(), attributes, null));
                pong = accepted.get(TIMEOUT_NANOS, TimeUnit.NANOSECONDS);
            }
            final int total = warmup + iterations;
            final Thread ponger = new Thread(() ->
            {
                for (int i = 0; i < total; i++)
                {
                    pong.awaitOne();
                    pong.send(size);
                }
            }, "tcp-pong");
            ponger.setDaemon(true);
            ponger.start();
            for (int i = 0; i < total; i++)
            {
                final long start = System.nanoTime();
                ping.send(size);
                ping.awaitOne();
                if (i >= warmup)
                {
                    rtts[i - warmup] = System.nanoTime() - start;
                }
            }
            ponger.join(TimeUnit.NANOSECONDS.toMillis(TIMEOUT_NANOS));
        }
        return rtts;
    }

    private static double percentile(final long[] sorted, final double percent)
    {
        final int index = (int)Math.min(sorted.length - 1, Math.ceil(percent / 100.0 * sorted.length) - 1);
        return sorted[Math.max(0, index)] / 1e3;
    }

    @FunctionalInterface
    private interface QpFactory
    {
        QueuePair create(QueuePairAttributes attributes) throws Exception;
    }

    /** One side: a QP with SLOTS receives posted, a send slot, reused flyweights. */
    private static final class Endpoint
    {
        private final QueuePair qp;
        private final CompletionQueue recvCq;
        private final MemoryRegion receives;
        private final MemoryRegion sendBuffer;
        private final SendRequest send = new SendRequest();
        private final RecvRequest recv = new RecvRequest();
        private final WorkCompletions wc = new WorkCompletions(1);

        Endpoint(final VerbsContext context, final QpFactory factory) throws Exception
        {
            final var pd = context.allocPd();
            recvCq = context.createCq(SLOTS * 2, null);
            final CompletionQueue sendCq = context.createCq(SLOTS * 2, null);
            receives = pd.allocate(SLOTS * 4096, Access.LOCAL_WRITE);
            sendBuffer = pd.allocate(4096, Access.LOCAL_WRITE);
            qp = factory.create(new QueuePairAttributes().pd(pd).sendCq(sendCq).recvCq(recvCq)
                .maxSendWr(SLOTS).maxRecvWr(SLOTS));
            for (int i = 0; i < SLOTS; i++)
            {
                repost(i);
            }
        }

        void send(final int size)
        {
            // Unsignaled: one message in flight each way, so the send queue never fills.
            send.reset().opcode(WrOpcode.SEND).flags(0);
            send.setSge(sendBuffer, 0, size);
            if (qp.postSend(send) != PostResult.OK)
            {
                throw new IllegalStateException("postSend failed");
            }
        }

        void awaitOne()
        {
            final long deadline = System.nanoTime() + TIMEOUT_NANOS;
            while (recvCq.poll(wc) == 0)
            {
                if (System.nanoTime() - deadline > 0)
                {
                    throw new IllegalStateException("no message within " + TimeUnit.NANOSECONDS.toSeconds(TIMEOUT_NANOS) + " s");
                }
                Thread.yield();
            }
            if (wc.status(0) != WcStatus.SUCCESS)
            {
                throw new IllegalStateException("receive failed: " + wc.status(0));
            }
            repost((int)wc.wrId(0));
        }

        private void repost(final int slot)
        {
            recv.wrId(slot).setSge(receives, slot * 4096, 4096);
            if (qp.postRecv(recv) != PostResult.OK)
            {
                throw new IllegalStateException("postRecv failed");
            }
        }
    }
}
