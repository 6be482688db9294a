package io.reverb.bench.fault;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The server side of the fault suite ({@code bin/fault-suite}): one stack's server whose handler answers after a
 * fixed delay, counting its calls ({@link HandlerLedger}).
 *
 * <p>It prints {@value #READY} and its address once it accepts calls, and a {@value #STATS} line every second. On
 * SIGTERM it shuts down gracefully: it writes the ids of the calls its handlers run at that moment to the
 * {@code --inflight-file} (the driver checks that each of them ends OK), prints {@value #DRAIN}, lets them finish
 * within {@code --grace-ms}, and prints {@value #EXIT} with whether it terminated, its counts, the registered buffers
 * still in use and the threads left behind.
 *
 * <p>With {@code --go-file FILE} the process starts (the JVM warms up) but binds only once FILE exists, and retries
 * while the address is still taken (up to {@code --bind-retry-ms}): so a replacement can take the address of a
 * server that was just killed or is draining, as soon as it is free.
 *
 * <p>Usage: {@code FaultServer --stack native|grpc-reverb|grpc-netty --uri URI [--delay-ms 100] [--grace-ms 5000]
 * [--inflight-file FILE] [--go-file FILE] [--bind-retry-ms 10000]}.
 */
public final class FaultServer
{
    /** Printed once the server accepts calls, followed by its address. */
    public static final String READY = "FAULT-SERVER-READY";
    /** Printed every second, followed by {@link HandlerLedger#describe()}. */
    public static final String STATS = "FAULT-SERVER-STATS";
    /** Printed when a graceful shutdown begins. */
    public static final String DRAIN = "FAULT-SERVER-DRAIN";
    /** Printed when the graceful shutdown has ended. */
    public static final String EXIT = "FAULT-SERVER-EXIT";

    private FaultServer()
    {
    }

    /**
     * @param args see the class comment.
     * @throws Exception on an unexpected error.
     */
    public static void main(final String[] args) throws Exception
    {
        final Map<String, String> options;
        final FaultStack stack;
        try
        {
            options = options(args, List.of("--stack", "--uri", "--delay-ms", "--grace-ms", "--inflight-file", "--go-file",
                "--bind-retry-ms"));
            stack = FaultStack.parse(required(options, "--stack"));
            required(options, "--uri");
        }
        catch (final IllegalArgumentException ex)
        {
            System.err.println("fault-server: " + ex.getMessage());
            System.exit(2);
            return;
        }
        final String uri = options.get("--uri");
        final Duration delay = Duration.ofMillis(Long.parseLong(options.getOrDefault("--delay-ms", "100")));
        final Duration grace = Duration.ofMillis(Long.parseLong(options.getOrDefault("--grace-ms", "5000")));
        final long bindRetryMillis = Long.parseLong(options.getOrDefault("--bind-retry-ms", "10000"));
        final PrintStream out = System.out;
        final HandlerLedger ledger = new HandlerLedger();
        final ScheduledExecutorService timer = Executors.newScheduledThreadPool(2, r ->
        {
            final Thread thread = new Thread(r, "fault-server-timer");
            thread.setDaemon(true);
            return thread;
        });

        // A first server on a spare address serves a few calls and stops: classes load and the serving path is
        // compiled, a Reverb engine opens (it stays, shared by the JVM), so that a replacement takes the address
        // within milliseconds of it being free and answers its first calls at speed even on a loaded machine; what
        // stays after the first server (process-wide) is the baseline against which the real one must leave nothing.
        warmUp(stack, spareAddress(uri), timer);
        if (options.containsKey("--go-file"))
        {
            final Path go = Path.of(options.get("--go-file"));
            out.println("FAULT-SERVER-WAITING for " + go);
            out.flush();
            while (!Files.exists(go))
            {
                Thread.sleep(1);
            }
        }
        final ThreadCensus baseline = ThreadCensus.take();
        final FaultStack.Server server = startWithRetry(stack, uri, delay, ledger, timer, bindRetryMillis);
        out.println(READY + " " + uri + " at=" + System.currentTimeMillis());
        out.flush();
        timer.scheduleAtFixedRate(() ->
        {
            synchronized (out)
            {
                out.println(STATS + " " + ledger.describe());
                out.flush();
            }
        }, 1, 1, TimeUnit.SECONDS);

        Runtime.getRuntime().addShutdownHook(new Thread(() ->
            shutdownGracefully(server, ledger, grace, options.get("--inflight-file"), baseline, out), "fault-server-drain"));
        while (true)
        {
            Thread.sleep(60_000);
        }
    }

    private static void warmUp(final FaultStack stack, final String address, final ScheduledExecutorService timer)
        throws Exception
    {
        final FaultStack.Server warmup = FaultStacks.startServer(stack, address, Duration.ZERO, new HandlerLedger(), timer);
        try (FaultStack.Client client = FaultStacks.connect(stack, address,
            new FaultStacks.ClientSettings(Duration.ofSeconds(30), Duration.ofSeconds(10))))
        {
            for (int i = 0; i < 200; i++)
            {
                client.call(-1 - i, Duration.ofSeconds(30)).get(60, TimeUnit.SECONDS);
            }
        }
        warmup.shutdown(Duration.ZERO);
        warmup.awaitTermination(Duration.ofSeconds(10));
        Thread.sleep(2_000);
    }

    /** A spare address beside {@code uri}: the same host on an ephemeral port, or another shm name. */
    static String spareAddress(final String uri)
    {
        final URI parsed = URI.create(uri);
        if ("tcp".equals(parsed.getScheme()))
        {
            try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(parsed.getHost())))
            {
                return "tcp://" + parsed.getHost() + ":" + socket.getLocalPort();
            }
            catch (final IOException ex)
            {
                throw new IllegalStateException("no spare port on " + parsed.getHost(), ex);
            }
        }
        return parsed.getScheme() + "://" + parsed.getAuthority() + "-warmup";
    }

    private static FaultStack.Server startWithRetry(final FaultStack stack, final String uri, final Duration delay,
        final HandlerLedger ledger, final ScheduledExecutorService timer, final long retryMillis) throws Exception
    {
        final long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(retryMillis);
        while (true)
        {
            try
            {
                return FaultStacks.startServer(stack, uri, delay, ledger, timer);
            }
            catch (final IOException | RuntimeException ex)
            {
                // the old server may still hold the address (a killed process's socket, a draining server's listener)
                if (System.nanoTime() > end)
                {
                    throw ex;
                }
                Thread.sleep(5);
            }
        }
    }

    private static void shutdownGracefully(final FaultStack.Server server, final HandlerLedger ledger, final Duration grace,
        final String inflightFile, final ThreadCensus baseline, final PrintStream out)
    {
        try
        {
            final List<Long> running = ledger.running();
            if (inflightFile != null)
            {
                Files.writeString(Path.of(inflightFile),
                    running.stream().map(String::valueOf).collect(Collectors.joining("\n", "", "\n")), StandardCharsets.UTF_8);
            }
            synchronized (out)
            {
                out.println(DRAIN + " inflight=" + running.size() + " at=" + System.currentTimeMillis());
                out.flush();
            }
            server.shutdown(grace);
            boolean terminated = server.awaitTermination(grace.plusSeconds(5));
            if (!terminated)
            {
                server.shutdownNow();
                terminated = server.awaitTermination(Duration.ofSeconds(5));
            }
            final List<String> left = ThreadCensus.awaitLeftSince(baseline, 5_000);
            final List<String> engine = ThreadCensus.take().engineThreads(baseline);
            final long buffers = server.buffersInUse();
            synchronized (out)
            {
                out.println(EXIT + " terminated=" + terminated + " " + ledger.describe() + " buffers-in-use=" +
                    (buffers < 0 ? "n/a" : Long.toString(buffers)) + " threads-left=" + left.size() +
                    (left.isEmpty() ? "" : " " + left) + " engine-threads=" + engine.size() +
                    (engine.isEmpty() ? "" : " " + engine + " (process-wide, by design)"));
                out.flush();
            }
        }
        catch (final IOException | RuntimeException ex)
        {
            out.println(EXIT + " error " + ex);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            out.println(EXIT + " interrupted");
        }
    }

    /**
     * Parses {@code --name value} pairs.
     *
     * @param args  the command line.
     * @param known the names allowed.
     * @return value by name.
     * @throws IllegalArgumentException on an unknown name or a name without a value.
     */
    static Map<String, String> options(final String[] args, final List<String> known)
    {
        final Map<String, String> options = new HashMap<>();
        for (int i = 0; i < args.length; i += 2)
        {
            if (!known.contains(args[i]))
            {
                throw new IllegalArgumentException("unknown option " + args[i] + " (known: " + known + ")");
            }
            if (i + 1 >= args.length)
            {
                throw new IllegalArgumentException(args[i] + " needs a value");
            }
            options.put(args[i], args[i + 1]);
        }
        return options;
    }

    /**
     * @param options parsed options.
     * @param name    an option that must be there.
     * @return its value.
     * @throws IllegalArgumentException if it is missing.
     */
    static String required(final Map<String, String> options, final String name)
    {
        final String value = options.get(name);
        if (value == null)
        {
            throw new IllegalArgumentException(name + " is required");
        }
        return value;
    }
}
