package io.reverb.bench.pingpong;

import com.sun.management.ThreadMXBean;
import io.reverb.rdma.provider.shm.ShmVerbsProvider;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionChannel;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Two-process ping-pong over the shm verbs provider: 64-byte SEND/RECV, both sides busy-polling
 * their receive CQ, unsignaled sends. Prints RTT percentiles and the bytes the measuring thread
 * allocated per round trip.
 *
 * <pre>
 * java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -cp &lt;class path&gt; \
 *     io.reverb.bench.pingpong.ShmPingPong [iterations] [warmup] [size]
 * java ... ShmPingPong --floor [iterations]   # bare shared-memory ping-pong, no verbs, for comparison
 * java ... ShmPingPong --event [iterations]   # ping sleeps on its completion channel instead of spinning
 * </pre>
 *
 * The ping side forks the pong side as a second JVM with the same class path.
 */
public final class ShmPingPong
{
    private static final int SLOTS = 16;
    private static final int SLOT_SIZE = 256;

    private ShmPingPong()
    {
    }

    /**
     * @param args see the class comment.
     */
    public static void main(final String[] args)
    {
        System.exit(new CommandLine(new Options()).execute(args));
    }

    /** The command line (picocli). */
    @Command(name = "ShmPingPong", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Two-process ping-pong over the shm verbs provider (64-byte SEND/RECV, busy-polling).")
    static final class Options implements Callable<Integer>
    {
        @Option(names = "--floor", description = "bare shared-memory ping-pong, no verbs, for comparison")
        boolean floor;

        @Option(names = "--event", description = "the ping side sleeps on its completion channel instead of spinning")
        boolean event;

        @Parameters(index = "0", arity = "0..1", paramLabel = "ITERATIONS",
            description = "measured round trips (default 1,000,000; --floor 2,000,000; --event 50,000)")
        Integer iterations;

        @Parameters(index = "1", arity = "0..1", paramLabel = "WARMUP",
            description = "warm-up round trips (default 200,000; --floor and --event: a fifth of ITERATIONS)")
        Integer warmup;

        @Parameters(index = "2", arity = "0..1", paramLabel = "SIZE", description = "message bytes (default 64, at most 256)")
        Integer size;

        @Option(names = "--pong", hidden = true, paramLabel = "NAME", description = "the child's entry point (echo)")
        String pongName;

        @Option(names = "--floor-pong", hidden = true, arity = "2", paramLabel = "FILE ROUNDS",
            description = "the child's entry point (floor echo)")
        List<String> floorPong;

        @Override
        public Integer call() throws Exception
        {
            if (pongName != null)
            {
                pong(pongName);
            }
            else if (floorPong != null)
            {
                floorPong(Paths.get(floorPong.get(0)), Long.parseLong(floorPong.get(1)));
            }
            else if (floor)
            {
                floorPing(iterations != null ? iterations : 2_000_000);
            }
            else if (event)
            {
                final int n = iterations != null ? iterations : 50_000;
                ping(n, warmup != null ? warmup : n / 5, size != null ? size : 64, true);
            }
            else
            {
                ping(iterations != null ? iterations : 1_000_000, warmup != null ? warmup : 200_000,
                    size != null ? size : 64, false);
            }
            return 0;
        }
    }

    private static Process fork(final String... args) throws Exception
    {
        final List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--add-exports");
        command.add("java.base/jdk.internal.misc=ALL-UNNAMED");
        // the child's provider takes the same directory as this one's (the default of VerbsConfig.shmDirectory())
        command.add("-D" + VerbsConfig.SHM_DIR_PROP + "=" + VerbsConfig.defaults().shmDirectory());
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(ShmPingPong.class.getName());
        command.addAll(Arrays.asList(args));
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    private static void awaitReady(final Process child) throws Exception
    {
        final BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        String line;
        // Skip whatever JVM options print first (e.g. a flight recording's banner).
        while ((line = out.readLine()) != null)
        {
            if (line.equals("READY"))
            {
                return;
            }
        }
        throw new IllegalStateException("pong process exited before it was ready (exit " + child.waitFor() + ")");
    }

    private static void ping(final int iterations, final int warmup, final int size, final boolean event) throws Exception
    {
        final String name = "pingpong-" + ProcessHandle.current().pid();
        final Process child = fork("--pong", name);
        try (VerbsContext context = new ShmVerbsProvider().open(VerbsConfig.defaults()))
        {
            awaitReady(child);
            final ProtectionDomain pd = context.allocPd();
            final CompletionQueue sendCq = context.createCq(64, null);
            final CompletionChannel channel = event ? context.createCompletionChannel() : null;
            final CompletionQueue recvCq = context.createCq(64, channel);
            final QueuePair qp = context.connect(name, new QueuePairAttributes().pd(pd).sendCq(sendCq).recvCq(recvCq)
                .maxRecvWr(SLOTS).maxSendWr(SLOTS), null);
            final MemoryRegion recvRegion = pd.allocate(SLOTS * SLOT_SIZE, Access.LOCAL_WRITE);
            final MemoryRegion sendRegion = pd.allocate(SLOT_SIZE, Access.LOCAL_WRITE);
            final RecvRequest recv = new RecvRequest();
            for (int i = 0; i < SLOTS; i++)
            {
                recv.wrId(i).setSge(recvRegion, i * SLOT_SIZE, SLOT_SIZE);
                check(qp.postRecv(recv));
            }
            final SendRequest send = new SendRequest().opcode(WrOpcode.SEND).flags(0);
            send.setSge(sendRegion, 0, size);
            final WorkCompletions wc = new WorkCompletions(16);
            final long[] samples = new long[iterations];

            runRounds(qp, recvCq, channel, recvRegion, sendRegion, send, recv, wc, samples, warmup);

            final ThreadMXBean threads = (ThreadMXBean)ManagementFactory.getThreadMXBean();
            final long threadId = Thread.currentThread().getId();
            final long allocatedBefore = threads.getThreadAllocatedBytes(threadId);
            runRounds(qp, recvCq, channel, recvRegion, sendRegion, send, recv, wc, samples, iterations);
            final long allocated = threads.getThreadAllocatedBytes(threadId) - allocatedBefore;

            qp.close();
            Arrays.sort(samples);
            System.out.printf("shm verbs ping-pong, %d-byte SEND/RECV, %s, 2 processes, %d round trips " +
                "(after %d warm-up)%n", size, event ? "ping waits on its completion channel, pong busy-polls" :
                "busy-polling", iterations, warmup);
            printPercentiles(samples);
            System.out.printf("allocated by the ping thread during the measured loop: %d bytes (%.4f bytes/round trip)%n",
                allocated, (double)allocated / iterations);
        }
        finally
        {
            if (!child.waitFor(10, TimeUnit.SECONDS))
            {
                // SIGTERM first: the pong's shutdown hook then removes its files and listen socket.
                child.destroy();
                if (!child.waitFor(10, TimeUnit.SECONDS))
                {
                    child.destroyForcibly();
                }
            }
        }
    }

    private static void runRounds(
        final QueuePair qp,
        final CompletionQueue recvCq,
        final CompletionChannel channel,
        final MemoryRegion recvRegion,
        final MemoryRegion sendRegion,
        final SendRequest send,
        final RecvRequest recv,
        final WorkCompletions wc,
        final long[] samples,
        final int rounds)
    {
        final UnsafeBuffer payload = sendRegion.buffer();
        for (int i = 0; i < rounds; i++)
        {
            payload.putInt(0, i);
            final long start = System.nanoTime();
            if (channel != null)
            {
                // Arm before sending; the echo's completion then rings the doorbell (ibverbs' arm, poll, sleep).
                recvCq.requestNotify(false);
            }
            check(qp.postSend(send));
            int n;
            while ((n = recvCq.poll(wc)) == 0)
            {
                if (channel != null)
                {
                    awaitQuietly(channel);
                }
                else
                {
                    Thread.onSpinWait();
                }
            }
            final long rtt = System.nanoTime() - start;
            if (n != 1 || wc.status(0) != WcStatus.SUCCESS)
            {
                throw new IllegalStateException("unexpected completion " + wc.status(0) + " x" + n);
            }
            final int slot = (int)wc.wrId(0);
            if (recvRegion.buffer().getInt(slot * SLOT_SIZE) != i)
            {
                throw new IllegalStateException("echo mismatch in round " + i);
            }
            recv.wrId(slot).setSge(recvRegion, slot * SLOT_SIZE, SLOT_SIZE);
            check(qp.postRecv(recv));
            if (i < samples.length)
            {
                samples[i] = rtt;
            }
        }
    }

    private static void awaitQuietly(final CompletionChannel channel)
    {
        try
        {
            channel.await(1_000_000_000L);
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }

    private static void pong(final String name) throws Exception
    {
        try (VerbsContext context = new ShmVerbsProvider().open(VerbsConfig.defaults()))
        {
            final ProtectionDomain pd = context.allocPd();
            final CompletionQueue sendCq = context.createCq(64, null);
            final CompletionQueue recvCq = context.createCq(64, null);
            final MemoryRegion recvRegion = pd.allocate(SLOTS * SLOT_SIZE, Access.LOCAL_WRITE);
            final AtomicBoolean down = new AtomicBoolean();
            final QueuePair qp;
            try (ConnectionListener listener = context.listen(name, 1))
            {
                System.out.println("READY");
                System.out.flush();
                final ConnectionRequest request = listener.accept(TimeUnit.SECONDS.toNanos(30));
                if (request == null)
                {
                    return;
                }
                qp = request.accept(new QueuePairAttributes().pd(pd).sendCq(sendCq).recvCq(recvCq)
                    .maxRecvWr(SLOTS).maxSendWr(SLOTS).disconnectHandler(() -> down.set(true)), null);
            }
            final RecvRequest recv = new RecvRequest();
            for (int i = 0; i < SLOTS; i++)
            {
                recv.wrId(i).setSge(recvRegion, i * SLOT_SIZE, SLOT_SIZE);
                check(qp.postRecv(recv));
            }
            final SendRequest send = new SendRequest().opcode(WrOpcode.SEND).flags(0);
            final WorkCompletions wc = new WorkCompletions(16);
            while (!down.get())
            {
                final int n = recvCq.poll(wc);
                for (int i = 0; i < n; i++)
                {
                    if (wc.status(i) != WcStatus.SUCCESS)
                    {
                        continue;
                    }
                    final int slot = (int)wc.wrId(i);
                    // Echo straight from the receive slot: the shm provider has copied it when postSend returns,
                    // so the slot can be reposted at once.
                    send.setSge(recvRegion, slot * SLOT_SIZE, wc.byteLen(i));
                    qp.postSend(send);
                    recv.wrId(slot).setSge(recvRegion, slot * SLOT_SIZE, SLOT_SIZE);
                    qp.postRecv(recv);
                }
                if (n == 0)
                {
                    Thread.onSpinWait();
                }
            }
            qp.close();
        }
    }

    /** The floor: two processes bouncing a counter through one mapped file, nothing else. */
    private static void floorPing(final int iterations) throws Exception
    {
        final Path file = Files.createTempFile(Paths.get(Files.isDirectory(Paths.get("/dev/shm")) ? "/dev/shm" :
            System.getProperty("java.io.tmpdir")), "reverb-floor-", ".map");
        try
        {
            final MappedByteBuffer mapping;
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE))
            {
                mapping = channel.map(FileChannel.MapMode.READ_WRITE, 0, 4096);
            }
            final UnsafeBuffer buffer = new UnsafeBuffer(mapping);
            final int warmup = iterations / 5;
            final Process child = fork("--floor-pong", file.toString(), Long.toString((long)warmup + iterations));
            awaitReady(child);
            final long[] samples = new long[iterations];
            for (long i = 1; i <= warmup + iterations; i++)
            {
                final long start = System.nanoTime();
                buffer.putLongRelease(0, i);
                while (buffer.getLongAcquire(128) != i)
                {
                    Thread.onSpinWait();
                }
                final long rtt = System.nanoTime() - start;
                if (i > warmup)
                {
                    samples[(int)(i - warmup - 1)] = rtt;
                }
            }
            child.waitFor(10, TimeUnit.SECONDS);
            IoUtil.unmap(mapping);
            Arrays.sort(samples);
            System.out.printf("bare shared-memory ping-pong (one long each way), 2 processes, %d round trips%n", iterations);
            printPercentiles(samples);
        }
        finally
        {
            Files.deleteIfExists(file);
        }
    }

    private static void floorPong(final Path file, final long rounds) throws Exception
    {
        final MappedByteBuffer mapping;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE))
        {
            mapping = channel.map(FileChannel.MapMode.READ_WRITE, 0, 4096);
        }
        final UnsafeBuffer buffer = new UnsafeBuffer(mapping);
        System.out.println("READY");
        System.out.flush();
        for (long i = 1; i <= rounds; i++)
        {
            while (buffer.getLongAcquire(0) != i)
            {
                Thread.onSpinWait();
            }
            buffer.putLongRelease(128, i);
        }
    }

    private static void printPercentiles(final long[] sorted)
    {
        System.out.printf("RTT  min %.2f  p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  p99.99 %.2f  max %.2f  (us)%n",
            sorted[0] / 1e3, percentile(sorted, 50), percentile(sorted, 90), percentile(sorted, 99),
            percentile(sorted, 99.9), percentile(sorted, 99.99), sorted[sorted.length - 1] / 1e3);
    }

    private static double percentile(final long[] sorted, final double p)
    {
        final int index = (int)Math.min(sorted.length - 1, Math.ceil(p / 100.0 * sorted.length) - 1);
        return sorted[Math.max(0, index)] / 1e3;
    }

    private static void check(final int result)
    {
        if (result != PostResult.OK)
        {
            throw new IllegalStateException("post failed: " + PostResult.toString(result));
        }
    }
}
