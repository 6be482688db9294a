package io.reverb.bench.loopback;

import com.google.protobuf.BytesValue;
import com.sun.management.ThreadMXBean;
import io.reverb.bench.EchoService;
import io.reverb.bench.target.ReverbTarget;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.Transports;
import io.reverb.common.ClaimResult;
import io.reverb.common.WriteClaim;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;

/**
 * What rpc-core costs per native unary call, both sides, without a transport's cost or a machine's scheduling in the
 * figure: client and server in this process over {@code loopback://} ({@link LoopbackTransportProvider}), each call
 * issued from the completion of the previous one (as {@code reverb-bench}'s closed loop issues calls from the
 * client's poller), every step on one thread. It prints, per call: the thread's CPU time (ThreadMXBean, less
 * sensitive to a loaded machine than latency), the bytes that thread allocated, and the bytes all threads allocated
 * (equal when nothing ran elsewhere). Mode {@code raw} is the same chain of 4 + 64-byte messages over the same
 * loopback with no RPC: its CPU time is the probe's own floor, to subtract. Modes {@code rpc-phases} and
 * {@code raw-phases} also split each message's delivery at the first message it commits: on the client, the response's
 * handling up to the next call's commit; on the server, the request's up to the response's. Between two processes
 * what comes before the commit is on the round trip's path, what comes after runs while the peer works.
 *
 * <pre>
 * java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED -cp benchmarks/target/reverb-bench.jar \
 *     io.reverb.bench.loopback.RpcCostProbe [calls per round] [rounds] [rpc|raw|rpc-phases|raw-phases ...]
 * </pre>
 *
 * Defaults: 1,000,000 calls per round after as many for warm-up, 5 rounds, modes {@code rpc raw}.
 */
public final class RpcCostProbe
{
    private static final int PAYLOAD = 64;

    private RpcCostProbe()
    {
    }

    /**
     * @param args optional calls per round, optional rounds, then modes.
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception
    {
        int calls = 1_000_000;
        int rounds = 5;
        int first = 0;
        if (args.length > first && args[first].matches("\\d+"))
        {
            calls = Integer.parseInt(args[first++]);
        }
        if (args.length > first && args[first].matches("\\d+"))
        {
            rounds = Integer.parseInt(args[first++]);
        }
        final String[] modes = args.length > first ? Arrays.copyOfRange(args, first, args.length) :
            new String[] {"rpc", "raw"};
        System.out.printf(Locale.ROOT, "RpcCostProbe: %,d calls per round, %d rounds, %s, %d cores%n", calls, rounds,
            System.getProperty("java.vm.version"), Runtime.getRuntime().availableProcessors());
        for (final String mode : modes)
        {
            switch (mode)
            {
                case "rpc" -> rpc(calls, rounds, false);
                case "raw" -> raw(calls, rounds, false);
                case "rpc-phases" -> rpc(calls, rounds, true);
                case "raw-phases" -> raw(calls, rounds, true);
                default -> throw new IllegalArgumentException("unknown mode " + mode +
                    " (rpc, raw, rpc-phases, raw-phases)");
            }
        }
        System.exit(0);
    }

    private static void rpc(final int calls, final int rounds, final boolean phases)
    {
        final String uri = "loopback://cost-" + ProcessHandle.current().pid();
        try (RpcServer server = RpcServer.builder(uri).addService(ReverbTarget.serviceDefinition()).build().start();
            // no keep-alive: its PING (one per 30 s) is written by a timer thread, which would then deliver a part of
            // the chain while it held the loopback's delivery, and the chain's CPU time would not all be this thread's
            RpcChannel channel = RpcChannel.builder(uri).keepAlive(Duration.ZERO, Duration.ofSeconds(10)).build())
        {
            final BytesValue request = EchoService.payload(PAYLOAD);
            // connects, off the chain: the chain's calls find the connection ready
            ClientCalls.unary(channel, ReverbTarget.ECHO_METHOD, CallOptions.DEFAULT, request).block(Duration.ofSeconds(10));
            final Chain chain = new Chain(channel, request);
            measure("rpc (warm-up)", calls, chain::run, phases);
            for (int round = 0; round < rounds; round++)
            {
                measure(phases ? "rpc-phases" : "rpc", calls, chain::run, phases);
            }
        }
    }

    private static void raw(final int calls, final int rounds, final boolean phases) throws Exception
    {
        final String uri = "loopback://raw-" + ProcessHandle.current().pid();
        final LoopbackTransportProvider provider = (LoopbackTransportProvider)Transports.providerFor(URI.create(uri));
        final RawEcho echo = new RawEcho();
        try (var listener = provider.listen(URI.create(uri), connection -> echo))
        {
            final RawClient client = new RawClient();
            client.connection = provider.connect(URI.create(uri), client).get();
            measure("raw (warm-up)", calls, client::run, phases);
            for (int round = 0; round < rounds; round++)
            {
                measure(phases ? "raw-phases" : "raw", calls, client::run, phases);
            }
            client.connection.close();
        }
    }

    /** The work of one round: makes the calls, returns how many completed on this thread. */
    private interface Round
    {
        int run(int calls);
    }

    private static void measure(final String name, final int calls, final Round round, final boolean phases)
    {
        final LoopbackTransportProvider.Phases split = phases ? new LoopbackTransportProvider.Phases() : null;
        LoopbackTransportProvider.phases = split;
        final ThreadMXBean mx = (ThreadMXBean)ManagementFactory.getThreadMXBean();
        final long thread = Thread.currentThread().getId();
        final long all0 = allThreadsAllocated(mx);
        final long cpu0 = mx.getCurrentThreadCpuTime();
        final long bytes0 = mx.getThreadAllocatedBytes(thread);
        final long wall0 = System.nanoTime();
        final int done = round.run(calls);
        final long wall = System.nanoTime() - wall0;
        final long cpu = mx.getCurrentThreadCpuTime() - cpu0;
        final long bytes = mx.getThreadAllocatedBytes(thread) - bytes0;
        final long all = allThreadsAllocated(mx) - all0;
        LoopbackTransportProvider.phases = null;
        if (done != calls)
        {
            throw new IllegalStateException(name + ": " + done + " of " + calls + " calls completed on the calling " +
                "thread: the chain left it (a hop to another thread), so its CPU time is not the whole cost");
        }
        System.out.printf(Locale.ROOT, "%-14s %8.1f ns CPU/call %8.1f ns wall/call %7.1f B/call (thread) " +
            "%7.1f B/call (all threads)%n", name, (double)cpu / calls, (double)wall / calls, (double)bytes / calls,
            (double)all / calls);
        if (split != null)
        {
            // client: the response's delivery up to the next call's commit; server: the request's up to the response's
            System.out.printf(Locale.ROOT, "%-14s client %6.1f ns to its commit + %6.1f ns after; server %6.1f + %6.1f " +
                "(wall ns per delivery; %,d + %,d deliveries)%n", "", per(split.before[0], split.deliveries[0]),
                per(split.after[0], split.deliveries[0]), per(split.before[1], split.deliveries[1]),
                per(split.after[1], split.deliveries[1]), split.deliveries[0], split.deliveries[1]);
        }
    }

    private static double per(final long nanos, final long count)
    {
        return count == 0 ? 0 : (double)nanos / count;
    }

    private static long allThreadsAllocated(final ThreadMXBean mx)
    {
        return Arrays.stream(mx.getThreadAllocatedBytes(mx.getAllThreadIds())).filter(b -> b > 0).sum();
    }

    /** Issues each call from the completion of the previous one (one subscriber reused, as the bench's lane). */
    private static final class Chain implements CoreSubscriber<BytesValue>
    {
        private final RpcChannel channel;
        private final BytesValue request;
        private int remaining;
        private int completed;
        private Throwable error;

        Chain(final RpcChannel channel, final BytesValue request)
        {
            this.channel = channel;
            this.request = request;
        }

        int run(final int calls)
        {
            remaining = calls;
            completed = 0;
            next();
            if (error != null)
            {
                throw new IllegalStateException("a call failed", error);
            }
            return completed;
        }

        private void next()
        {
            remaining--;
            ClientCalls.unary(channel, ReverbTarget.ECHO_METHOD, CallOptions.DEFAULT, request).subscribe(this);
        }

        @Override
        public void onSubscribe(final Subscription s)
        {
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(final BytesValue value)
        {
        }

        @Override
        public void onError(final Throwable t)
        {
            error = t;
        }

        @Override
        public void onComplete()
        {
            completed++;
            if (remaining > 0)
            {
                next();
            }
        }
    }

    /** The raw floor's server: each message copied into a reply. */
    private static final class RawEcho implements ConnectionHandler
    {
        private final WriteClaim claim = new WriteClaim();

        @Override
        public void onMessage(final Connection connection, final ByteBuffer message)
        {
            final int length = message.remaining();
            if (connection.tryClaim(length, claim) != ClaimResult.OK)
            {
                throw new IllegalStateException("loopback claim failed");
            }
            claim.buffer().put(message);
            claim.commit();
        }

        @Override
        public void onWritable(final Connection connection)
        {
        }

        @Override
        public void onClose(final Connection connection, final Throwable cause)
        {
        }
    }

    /** The raw floor's client: the next message sent from the reply to the previous one. */
    private static final class RawClient implements ConnectionHandler
    {
        private final WriteClaim claim = new WriteClaim();
        private final byte[] payload = new byte[4 + PAYLOAD];
        Connection connection;
        private int remaining;
        private int completed;

        int run(final int calls)
        {
            remaining = calls;
            completed = 0;
            send();
            return completed;
        }

        private void send()
        {
            remaining--;
            if (connection.tryClaim(payload.length, claim) != ClaimResult.OK)
            {
                throw new IllegalStateException("loopback claim failed");
            }
            claim.buffer().put(payload);
            claim.commit();
        }

        @Override
        public void onMessage(final Connection connection, final ByteBuffer message)
        {
            completed++;
            if (remaining > 0)
            {
                send();
            }
        }

        @Override
        public void onWritable(final Connection connection)
        {
        }

        @Override
        public void onClose(final Connection connection, final Throwable cause)
        {
        }
    }
}
