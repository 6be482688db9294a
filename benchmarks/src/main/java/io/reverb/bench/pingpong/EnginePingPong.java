package io.reverb.bench.pingpong;

import com.sun.management.OperatingSystemMXBean;
import com.sun.management.ThreadMXBean;
import io.reverb.rdma.engine.Connection;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.EngineListener;
import io.reverb.rdma.engine.MessageHandler;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.common.WriteClaim;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.HdrHistogram.Histogram;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Engine-level benchmark between two processes over shm (or {@code --scheme tcp}): a benchmark, not a test.
 *
 * <p>For each polling mode it starts a child JVM running an echo engine, connects, and measures:
 * <ul>
 *   <li>64-byte ping-pong round-trip time (p50/p99/p99.9/max, HdrHistogram), with pings sent from
 *       the client's poller thread as soon as the pong arrives (one message in flight);</li>
 *   <li>CPU time per round trip: process CPU time (OperatingSystemMXBean) of both processes over the
 *       measured phase, divided by round trips;</li>
 *   <li>allocation per round trip on both poller threads (com.sun.management.ThreadMXBean);</li>
 *   <li>idle CPU of both processes over 2 s without traffic;</li>
 *   <li>what the slow round trips are made of ({@code --slow-us}, default 20): each round trip over the threshold is
 *       counted by whether the client's poller slept while waiting for it, the server's poller slept before the ping
 *       reached it (the server writes its poller's sleep count into each pong), both, or neither;
 *       {@code --slow-dump FILE} writes each slow round trip (start and end {@code System.nanoTime()}, which is
 *       CLOCK_MONOTONIC and so comparable with {@code -Xlog:safepoint} lines decorated {@code tn} in both JVMs);</li>
 *   <li>1 MiB one-way throughput (claimed and committed back to back, each acknowledged by an
 *       8-byte message; the payload bytes are not written by the benchmark, only moved by the engine, unless
 *       {@code --write-payload} copies every byte into each claim as a serialiser would), with the sending
 *       thread's allocation per message. Over shm the engine writes large messages straight into the receiver's
 *       grant ({@code --direct-write true}, the default), so without {@code --write-payload} nothing copies the
 *       payload at all; compare direct writes against copying with {@code --write-payload}.</li>
 * </ul>
 *
 * <p>Usage ({@code --help} lists the options): {@code EnginePingPong [--modes BUSY,ADAPTIVE,EVENT] [--warmup 50000]
 * [--messages 200000] [--throughput 2000] [--scheme shm|tcp|rdma] [--address host:0]}; run with
 * {@code --add-exports java.base/jdk.internal.misc=ALL-UNNAMED} (and, for rdma, {@code java.base/sun.nio.ch}).
 * {@code --address} is where a tcp/rdma echo server listens (default 127.0.0.1:0; for rdma, the RDMA
 * interface's address); the child JVM inherits {@code java.library.path} and the RDMA interface address (the default of
 * {@code VerbsConfig.rdmaLocalAddress()}).
 */
public final class EnginePingPong
{
    private static final int PING = 64;
    // This run's settings, set once from the command line before anything runs (the child gets the same options).
    /** Size of the one-way throughput phase's messages (1 MiB, or --large-size). */
    private static int large = 1 << 20;
    /** {@link EngineConfig#directWrite(boolean)} of both sides (--direct-write). */
    private static boolean directWrite = true;
    /** Copy every payload byte into each one-way message (as a serialiser would) instead of only its first 8. */
    private static boolean writePayload;
    /** ADAPTIVE's spin settings in microseconds (min, max, yield) of both sides (--adaptive-spin), or null: defaults. */
    private static List<Long> adaptiveSpin;
    private static final int STATS = 3;

    private EnginePingPong()
    {
    }

    /**
     * @param args see the class comment; {@code --serve <name> <mode> <scheme>} is the child's entry point.
     */
    public static void main(final String[] args)
    {
        System.exit(new CommandLine(new Options()).execute(args));
    }

    /** The command line (picocli). */
    @Command(name = "EnginePingPong", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Engine ping-pong between two processes: RTT, CPU and allocation per round trip, idle CPU, " +
            "1 MiB one-way throughput, for each polling mode.")
    static final class Options implements Callable<Integer>
    {
        @Option(names = "--modes", split = ",", paramLabel = "MODE",
            description = "polling modes to measure, each with a fresh echo server (default: ${DEFAULT-VALUE})")
        List<PollingMode> modes = new ArrayList<>(List.of(PollingMode.BUSY, PollingMode.ADAPTIVE, PollingMode.EVENT));

        @Option(names = "--warmup", paramLabel = "N", description = "warm-up round trips (default: ${DEFAULT-VALUE})")
        int warmup = 50_000;

        @Option(names = "--messages", paramLabel = "N", description = "measured round trips (default: ${DEFAULT-VALUE})")
        int messages = 200_000;

        @Option(names = "--throughput", paramLabel = "N", description = "1 MiB messages sent one way (default: ${DEFAULT-VALUE})")
        int throughput = 2_000;

        @Option(names = "--large-size", paramLabel = "BYTES",
            description = "size of the one-way throughput messages (default: 1048576, e.g. 67108864 for 64 MiB)")
        int largeSize = 1 << 20;

        @Option(names = "--direct-write", paramLabel = "true|false", arity = "1",
            description = "write large messages straight into the receiver's grant where the provider can (shm) " +
                "(default: ${DEFAULT-VALUE})")
        boolean directWriteOption = true;

        @Option(names = "--write-payload",
            description = "copy every byte of each one-way message into its claim, as a serialiser would " +
                "(default: only its first 8 bytes are written)")
        boolean writePayloadOption;

        @Option(names = "--adaptive-spin", split = ",", paramLabel = "MICROS",
            description = "ADAPTIVE's min spin, max spin and yield in microseconds, both sides (default: the engine's)")
        List<Long> adaptiveSpinOption;

        @Option(names = "--slow-us", paramLabel = "MICROS",
            description = "round trips above this are broken down by poller sleeps (default: ${DEFAULT-VALUE})")
        long slowMicros = 20;

        @Option(names = "--slow-dump", paramLabel = "FILE",
            description = "write each slow round trip (start/end nanoTime, sleeps) to FILE-<mode>.txt")
        String slowDump;

        @Option(names = "--scheme", paramLabel = "SCHEME", description = "shm, tcp or rdma (default: ${DEFAULT-VALUE})")
        String scheme = "shm";

        @Option(names = "--address", paramLabel = "HOST:PORT",
            description = "where a tcp/rdma echo server listens (default: ${DEFAULT-VALUE}; " +
                "for rdma, the RDMA interface's address)")
        String address = "127.0.0.1:0";

        @Option(names = "--serve", arity = "3", hidden = true, paramLabel = "NAME MODE SCHEME",
            description = "the child's entry point: run an echo server")
        List<String> serve;

        @Override
        public Integer call() throws Exception
        {
            large = largeSize;
            directWrite = directWriteOption;
            adaptiveSpin = adaptiveSpinOption;
            if (adaptiveSpin != null && adaptiveSpin.size() != 3)
            {
                throw new CommandLine.ParameterException(new CommandLine(this),
                    "--adaptive-spin takes three values (min,max,yield microseconds): " + adaptiveSpin);
            }
            writePayload = writePayloadOption;
            if (serve != null)
            {
                serve(serve.get(0), PollingMode.valueOf(serve.get(1)), serve.get(2));
                return 0;
            }
            System.out.printf(Locale.ROOT,
                "Reverb engine ping-pong over %s, two processes, %d B, %d round trips (+%d warm-up); one-way messages of %d B;" +
                    " %d cores, %s%n",
                scheme, PING, messages, warmup, large, Runtime.getRuntime().availableProcessors(),
                System.getProperty("java.vm.version"));
            System.out.printf(Locale.ROOT, "direct writes %s, one-way payload %s%n", directWrite ? "on" : "off",
                writePayload ? "copied into each claim" : "not written (first 8 bytes only)");
            System.out.printf(Locale.ROOT, "%-9s %8s %8s %9s %9s %12s %14s %14s %10s %10s %12s%n",
                "mode", "p50 us", "p99 us", "p99.9 us", "max us", "cpu/rt us", "alloc/rt cli", "alloc/rt srv",
                "idle cpu%", "1MiB GB/s", "alloc/1MiB");
            final List<String> slowLines = new ArrayList<>();
            for (final PollingMode mode : modes)
            {
                final SlowTrace trace = new SlowTrace(TimeUnit.MICROSECONDS.toNanos(slowMicros), messages);
                run(scheme, address, mode, warmup, messages, throughput, trace);
                slowLines.add(trace.summary(mode));
                if (slowDump != null)
                {
                    final Path file = Path.of(slowDump + "-" + mode + ".txt");
                    trace.dump(file);
                    slowLines.add("  slow round trips written to " + file);
                }
            }
            for (final String line : slowLines)
            {
                System.out.println(line);
            }
            return 0;
        }
    }

    /**
     * @return one row of the table, its line separator included, to be written in one call.
     */
    static String row(final PollingMode mode, final double p50, final double p99, final double p999, final double max,
        final double cpuPerRt, final double allocClient, final double allocServer, final double idleCpu,
        final double gbPerSecond, final double allocPerLarge)
    {
        return String.format(Locale.ROOT, "%-9s %8.2f %8.2f %9.2f %9.2f %12.2f %14.1f %14.1f %10.2f %10.2f %12.1f%n",
            mode, p50, p99, p999, max, cpuPerRt, allocClient, allocServer, idleCpu, gbPerSecond, allocPerLarge);
    }

    static EngineConfig config(final PollingMode mode, final String name)
    {
        final EngineConfig config = new EngineConfig().pollingMode(mode).name(name).directWrite(directWrite)
            .maxInboundMessageSize(large).maxOutboundMessageSize(large).rendezvousPoolBytes(8L * large);
        if (adaptiveSpin != null)
        {
            config.adaptiveSpin(TimeUnit.MICROSECONDS.toNanos(adaptiveSpin.get(0)),
                TimeUnit.MICROSECONDS.toNanos(adaptiveSpin.get(1)), TimeUnit.MICROSECONDS.toNanos(adaptiveSpin.get(2)));
        }
        return config;
    }

    private static void run(
        final String scheme, final String address, final PollingMode mode, final int warmup, final int messages,
        final int throughput, final SlowTrace trace) throws Exception
    {
        final String name = "shm".equals(scheme) ? "pingpong-" + ProcessHandle.current().pid() + "-" + mode : address;
        final List<String> command = new ArrayList<>(List.of(
            System.getProperty("java.home") + "/bin/java",
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
            "-Djava.library.path=" + System.getProperty("java.library.path", "")));
        final String disniLocal = VerbsConfig.defaults().rdmaLocalAddress();
        if (disniLocal != null)
        {
            command.add("-D" + VerbsConfig.RDMA_LOCAL_ADDRESS_PROP + "=" + disniLocal);
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"),
            EnginePingPong.class.getName(), "--large-size", String.valueOf(large), "--direct-write",
            String.valueOf(directWrite)));
        if (adaptiveSpin != null)
        {
            command.addAll(List.of("--adaptive-spin",
                adaptiveSpin.get(0) + "," + adaptiveSpin.get(1) + "," + adaptiveSpin.get(2)));
        }
        command.addAll(List.of("--serve", name, mode.name(), scheme));
        final Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
        final BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        String ready = out.readLine();
        // JAVA_TOOL_OPTIONS (e.g. -Xlog:safepoint for the slow round trips' correlation) makes the child say so first.
        while (ready != null && ready.startsWith("Picked up "))
        {
            ready = out.readLine();
        }
        if (ready == null || !ready.startsWith("READY "))
        {
            throw new IllegalStateException("echo server did not start: " + ready);
        }
        try (RdmaEngine engine = RdmaEngine.open(scheme, config(mode, "client")))
        {
            final Connection connection = engine.connect(ready.substring("READY ".length()));
            final Client client = new Client(connection, trace, () -> engine.pollerSleeps(0));
            connection.setHandler(client);
            final Thread poller = engine.pollerThread(0);

            client.pingPhase(warmup, false);
            final long[] server0 = client.serverStats();
            final long cpu0 = processCpuNanos();
            final long alloc0 = allocatedBytes(poller);
            client.pingPhase(messages, true);
            final long cpu1 = processCpuNanos();
            final long alloc1 = allocatedBytes(poller);
            final long[] server1 = client.serverStats();

            Thread.sleep(500); // let ADAPTIVE/EVENT pollers fall asleep
            final long idle0 = processCpuNanos();
            final long[] serverIdle0 = client.serverStats();
            final long idleStart = System.nanoTime();
            Thread.sleep(2_000);
            final long idleNanos = System.nanoTime() - idleStart;
            final long idle1 = processCpuNanos();
            final long[] serverIdle1 = client.serverStats();

            final double cpuPerRt = ((cpu1 - cpu0) + (server1[0] - server0[0])) / 1000.0 / messages;
            final double allocClient = (double)(alloc1 - alloc0) / messages;
            final double allocServer = (double)(server1[1] - server0[1]) / messages;
            final double idleCpu = 100.0 * ((idle1 - idle0) + (serverIdle1[0] - serverIdle0[0])) / idleNanos;

            client.throughputPhase(Math.min(200, throughput), null); // warm-up
            final long[] sendAlloc = new long[1];
            final long elapsed = client.throughputPhase(throughput, sendAlloc);
            final double gbPerSecond = (double)throughput * large / elapsed;

            final Histogram h = client.histogram;
            // One write per row, newline included: printf hands System.out its pieces one by one, and a poller
            // watchdog's warning on stderr (the same pipe when a parent reads both) once landed inside a row, which
            // reverb-rdma-check then could not parse.
            System.out.print(row(mode, h.getValueAtPercentile(50) / 1000.0, h.getValueAtPercentile(99) / 1000.0,
                h.getValueAtPercentile(99.9) / 1000.0, h.getMaxValue() / 1000.0, cpuPerRt, allocClient, allocServer,
                idleCpu, gbPerSecond, (double)sendAlloc[0] / throughput));
            connection.close();
        }
        finally
        {
            child.destroy();
            child.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** Client side: ping-pong from the poller thread, acknowledgements, stats replies. */
    static final class Client implements MessageHandler
    {
        final Connection connection;
        // One claim per sending thread (the poller's pings, the main thread's), each with a reusable Agrona view of
        // the claimed memory (wrapped around the claim's buffer, no allocation).
        final WriteClaim claim = new WriteClaim();
        final UnsafeBuffer out = new UnsafeBuffer(0, 0);
        final WriteClaim mainClaim = new WriteClaim();
        final UnsafeBuffer mainOut = new UnsafeBuffer(0, 0);
        final Histogram histogram = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
        volatile CountDownLatch done;
        volatile long[] stats;
        int remaining;
        boolean record;
        long sentAt;
        volatile int acks;

        final SlowTrace trace;
        final LongSupplier pollerSleeps;
        long sleepsAtSend;
        long serverSleeps = -1;

        Client(final Connection connection, final SlowTrace trace, final LongSupplier pollerSleeps)
        {
            this.connection = connection;
            this.trace = trace;
            this.pollerSleeps = pollerSleeps;
        }

        void pingPhase(final int count, final boolean record) throws InterruptedException
        {
            this.remaining = count;
            this.record = record;
            final CountDownLatch latch = new CountDownLatch(1);
            done = latch;
            ping(mainClaim, mainOut);
            if (!latch.await(10, TimeUnit.MINUTES))
            {
                throw new IllegalStateException("ping-pong stalled");
            }
        }

        long throughputPhase(final int count, final long[] allocation) throws InterruptedException
        {
            acks = 0;
            final ThreadMXBean threads = (ThreadMXBean)ManagementFactory.getThreadMXBean();
            final UnsafeBuffer payload = writePayload ? new UnsafeBuffer(ByteBuffer.allocateDirect(large)) : null;
            if (payload != null)
            {
                payload.setMemory(0, large, (byte)0x5A);
            }
            final long alloc0 = threads.getCurrentThreadAllocatedBytes();
            final long start = System.nanoTime();
            for (int i = 0; i < count; i++)
            {
                int rc;
                while ((rc = connection.tryClaim(large, mainClaim)) == Connection.BACK_PRESSURED)
                {
                    Thread.yield(); // two cores: leave them to the pollers
                }
                if (rc != Connection.OK)
                {
                    throw new IllegalStateException("tryClaim: " + Connection.resultName(rc));
                }
                mainOut.wrap(mainClaim.buffer());
                if (payload != null)
                {
                    mainOut.putBytes(mainClaim.offset(), payload, 0, large);
                }
                mainOut.putLong(mainClaim.offset(), i);
                mainClaim.commit();
            }
            final long alloc1 = threads.getCurrentThreadAllocatedBytes();
            while (acks < count)
            {
                Thread.yield();
            }
            final long elapsed = System.nanoTime() - start;
            if (allocation != null)
            {
                allocation[0] = alloc1 - alloc0;
            }
            return elapsed;
        }

        long[] serverStats() throws InterruptedException
        {
            stats = null;
            int rc;
            while ((rc = connection.tryClaim(STATS, mainClaim)) == Connection.BACK_PRESSURED)
            {
                Thread.onSpinWait();
            }
            if (rc != Connection.OK)
            {
                throw new IllegalStateException("tryClaim: " + Connection.resultName(rc));
            }
            mainOut.wrap(mainClaim.buffer());
            mainOut.putByte(mainClaim.offset(), (byte)'S');
            mainClaim.commit();
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (stats == null)
            {
                if (System.nanoTime() > deadline)
                {
                    throw new IllegalStateException("no stats reply");
                }
                Thread.sleep(1);
            }
            return stats;
        }

        private void ping(final WriteClaim c, final UnsafeBuffer target)
        {
            int rc;
            while ((rc = connection.tryClaim(PING, c)) == Connection.BACK_PRESSURED)
            {
                Thread.onSpinWait();
            }
            if (rc != Connection.OK)
            {
                throw new IllegalStateException("tryClaim: " + Connection.resultName(rc));
            }
            sleepsAtSend = pollerSleeps.getAsLong();
            sentAt = System.nanoTime();
            target.wrap(c.buffer());
            target.putLong(c.offset(), sentAt);
            c.commit();
        }

        @Override
        public void onMessage(final DirectBuffer buffer, final int offset, final int length)
        {
            if (length == PING)
            {
                final long now = System.nanoTime();
                final long sent = buffer.getLong(offset);
                // The server's poller's sleep count when it echoed this ping; its change since the previous pong
                // says whether the server slept before the ping reached it.
                final long sleepsThere = buffer.getLong(offset + 8);
                if (record)
                {
                    histogram.recordValue(now - sent);
                    trace.record(sent, now, pollerSleeps.getAsLong() != sleepsAtSend,
                        serverSleeps >= 0 && sleepsThere != serverSleeps);
                }
                serverSleeps = sleepsThere;
                if (--remaining > 0)
                {
                    ping(claim, out);
                }
                else
                {
                    done.countDown();
                }
            }
            else if (length == 8)
            {
                acks++;
            }
            else if (length == 16)
            {
                stats = new long[] {buffer.getLong(offset), buffer.getLong(offset + 8)};
            }
        }
    }

    /**
     * The slow round trips of one mode: counted by which side's poller slept (the ADAPTIVE tail's suspects), and kept
     * (start and end {@code System.nanoTime()}) for correlation with safepoint logs. Client poller thread only.
     */
    static final class SlowTrace
    {
        private static final int KEPT = 100_000;
        final long thresholdNanos;
        final long[] starts;
        final long[] ends;
        final byte[] sides;
        long total;
        long clientSleeps;
        long serverSleeps;
        long slow;
        final long[] slowBySide = new long[4];

        SlowTrace(final long thresholdNanos, final int messages)
        {
            this.thresholdNanos = thresholdNanos;
            final int kept = Math.min(KEPT, messages);
            this.starts = new long[kept];
            this.ends = new long[kept];
            this.sides = new byte[kept];
        }

        void record(final long start, final long end, final boolean clientSlept, final boolean serverSlept)
        {
            total++;
            final int side = (clientSlept ? 1 : 0) | (serverSlept ? 2 : 0);
            if (clientSlept)
            {
                clientSleeps++;
            }
            if (serverSlept)
            {
                serverSleeps++;
            }
            if (end - start > thresholdNanos)
            {
                if (slow < starts.length)
                {
                    starts[(int)slow] = start;
                    ends[(int)slow] = end;
                    sides[(int)slow] = (byte)side;
                }
                slow++;
                slowBySide[side]++;
            }
        }

        String summary(final PollingMode mode)
        {
            return String.format(Locale.ROOT,
                "%-9s round trips > %d us: %d of %d (%.3f%%); of them client poller slept %d, server poller slept %d, " +
                    "both %d, neither %d; round trips with a sleep: client %d, server %d (%.3f%% / %.3f%%)",
                mode, TimeUnit.NANOSECONDS.toMicros(thresholdNanos), slow, total, percent(slow), slowBySide[1],
                slowBySide[2], slowBySide[3], slowBySide[0], clientSleeps, serverSleeps, percent(clientSleeps),
                percent(serverSleeps));
        }

        private double percent(final long count)
        {
            return total == 0 ? 0 : 100.0 * count / total;
        }

        /** One line per kept slow round trip: start end rtt-ns side (0 neither, 1 client, 2 server, 3 both). */
        void dump(final Path file) throws IOException
        {
            final StringBuilder text = new StringBuilder("# start_ns end_ns rtt_ns slept(0 none,1 client,2 server,3 both)\n");
            final int kept = (int)Math.min(slow, starts.length);
            for (int i = 0; i < kept; i++)
            {
                text.append(starts[i]).append(' ').append(ends[i]).append(' ').append(ends[i] - starts[i]).append(' ')
                    .append(sides[i]).append('\n');
            }
            Files.writeString(file, text);
        }
    }

    private static void serve(final String name, final PollingMode mode, final String scheme) throws Exception
    {
        final CountDownLatch closed = new CountDownLatch(1);
        try (RdmaEngine engine = RdmaEngine.open(scheme, config(mode, "server")))
        {
            final ThreadMXBean threads = (ThreadMXBean)ManagementFactory.getThreadMXBean();
            final long pollerId = engine.pollerThread(0).getId();
            final EngineListener listener = engine.listen(name, c ->
            {
                final WriteClaim reply = new WriteClaim();
                final UnsafeBuffer out = new UnsafeBuffer(0, 0);
                c.onClose(cause -> closed.countDown());
                c.setHandler((buffer, offset, length) ->
                {
                    final int replyLength = length == PING ? PING : length == STATS ? 16 : 8;
                    int rc;
                    while ((rc = c.tryClaim(replyLength, reply)) == Connection.BACK_PRESSURED)
                    {
                        Thread.onSpinWait(); // cannot happen with one message in flight per kind
                    }
                    if (rc != Connection.OK)
                    {
                        return;
                    }
                    out.wrap(reply.buffer());
                    if (length == PING)
                    {
                        out.putBytes(reply.offset(), buffer, offset, PING);
                        out.putLong(reply.offset() + 8, engine.pollerSleeps(0));
                    }
                    else if (length == STATS)
                    {
                        out.putLong(reply.offset(), processCpuNanos());
                        out.putLong(reply.offset() + 8, threads.getThreadAllocatedBytes(pollerId));
                    }
                    else
                    {
                        out.putLong(reply.offset(), buffer.getLong(offset));
                    }
                    reply.commit();
                });
            });
            System.out.println("READY " + listener.address());
            System.out.flush();
            closed.await();
        }
    }

    static long processCpuNanos()
    {
        return ((OperatingSystemMXBean)ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    static long allocatedBytes(final Thread thread)
    {
        return ((ThreadMXBean)ManagementFactory.getThreadMXBean()).getThreadAllocatedBytes(thread.getId());
    }
}
