package io.reverb.bench.load;

import io.reverb.bench.ServerProcess;
import io.reverb.bench.target.BenchServer;
import io.reverb.bench.target.EchoClient;
import io.reverb.bench.target.ReverbTarget;
import io.reverb.bench.target.TargetSettings;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import java.io.PrintStream;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Correctness under load: every cell of (transport x call kind x calls outstanding) runs closed-loop echo
 * calls, each with a deadline, and is judged by counting: every call OK, none slower than its deadline,
 * and no registered buffer or byte held by the client's or the server's transport once traffic stops.
 * {@code shm://} and {@code tcp://} servers run in a separate process; {@code inproc://} in this one.
 *
 * <p>The small form runs in {@code mvn verify} ({@code LoadMatrixTest}); the full form is
 * {@code bin/reverb-bench load-matrix --cell-duration 30s}.
 */
public final class LoadMatrix
{
    /** Calls outstanding per cell. */
    public static final int[] CONCURRENCY = {1, 64, 128, 512, 2048};
    /** Transports of the matrix. */
    public static final List<String> TRANSPORTS = List.of("shm", "tcp", "inproc");
    /** Messages per server-streaming call. */
    public static final int STREAM_MESSAGES = 10;

    private LoadMatrix()
    {
    }

    /**
     * How big each cell is.
     *
     * @param callsPerCell    calls per cell (0: run for {@code cellDuration} instead); at least 4 per lane are
     *                        run so that every lane issues calls from a completion.
     * @param cellDuration    run length of a cell when {@code callsPerCell} is 0.
     * @param deadline        deadline of every call.
     * @param polling         polling mode for shm/tcp (null: the default, ADAPTIVE).
     */
    public record Size(long callsPerCell, Duration cellDuration, Duration deadline, String polling)
    {
    }

    /**
     * One cell's outcome.
     *
     * @param transport     scheme.
     * @param kind          call kind.
     * @param concurrency   calls outstanding.
     * @param result        what the load generator measured.
     * @param clientUsage   the client transport's resource usage after the cell.
     * @param serverUsage   the server transport's resource usage after the cell.
     * @param deadline      the calls' deadline.
     */
    public record Cell(String transport, CallKind kind, int concurrency, RunResult result, String clientUsage,
        String serverUsage, Duration deadline)
    {
        /** @return failures of this cell, empty if it passed. */
        public List<String> failures()
        {
            final List<String> failures = new ArrayList<>();
            if (result.count == 0 || result.ok != result.count)
            {
                failures.add("statuses " + result.statuses + " (" + result.ok + " OK of " + result.count + ")");
            }
            final long max = result.latency.getMaxValue();
            if (max >= deadline.toNanos())
            {
                failures.add(String.format(Locale.ROOT, "slowest call %.1f ms, deadline %d ms", max / 1e6, deadline.toMillis()));
            }
            if (!isZero(clientUsage))
            {
                failures.add("client transport still holds " + clientUsage);
            }
            if (!isZero(serverUsage))
            {
                failures.add("server transport still holds " + serverUsage);
            }
            return failures;
        }

        /** @return one line for the table. */
        public String line()
        {
            final long max = result.latency.getMaxValue();
            return String.format(Locale.ROOT, "| %-6s | %-16s | %5d | %,12d | %,12d | %,12.0f | %9.1f | %9.2f | %s |",
                transport, kind.cliName(), concurrency, result.count, result.ok,
                result.count * 1e9 / Math.max(1, result.elapsedNanos),
                result.latency.getValueAtPercentile(99.9) / 1e3, max / 1e6,
                failures().isEmpty() ? "pass" : "FAIL: " + String.join("; ", failures()));
        }

        private static boolean isZero(final String usage)
        {
            return usage.startsWith("buffers=0, bytes=0");
        }
    }

    /** Header of {@link Cell#line()}. */
    public static final String TABLE_HEADER =
        "| fabric | kind             |     c |        calls |           OK |      calls/s | p99.9 µs  |  max ms   | verdict |\n" +
        "|--------|------------------|-------|--------------|--------------|--------------|-----------|-----------|---------|";

    /**
     * Runs the matrix.
     *
     * @param transports  schemes to run, of {@link #TRANSPORTS}.
     * @param kinds       call kinds.
     * @param concurrency calls outstanding per cell.
     * @param size        cell size and deadline.
     * @param log         where each cell's line goes as it finishes.
     * @return every cell's outcome.
     * @throws Exception if a server cannot start or a run is interrupted.
     */
    public static List<Cell> run(final List<String> transports, final List<CallKind> kinds, final int[] concurrency,
        final Size size, final PrintStream log) throws Exception
    {
        final List<Cell> cells = new ArrayList<>();
        final ReverbTarget target = new ReverbTarget();
        final TargetSettings settings = new TargetSettings(size.polling(), size.deadline());
        for (final String transport : transports)
        {
            final String listen = switch (transport)
            {
                case "shm" -> "shm://load-matrix-" + ProcessHandle.current().pid();
                case "tcp" -> "tcp://127.0.0.1:0";
                case "inproc" -> "inproc://load-matrix-" + ProcessHandle.current().pid();
                default -> throw new IllegalArgumentException(
                    "unknown transport " + transport + ", expected one of " + TRANSPORTS);
            };
            ServerProcess process = null;
            BenchServer local = null;
            final String address;
            if ("inproc".equals(transport))
            {
                local = target.startServer(URI.create(listen), settings);
                address = local.uri();
            }
            else
            {
                process = ServerProcess.start(listen, size.polling(), List.of(), Duration.ofSeconds(60));
                address = process.uri();
            }
            try (EchoClient client = target.connect(URI.create(address), settings))
            {
                final ResourceUsage clientUsage = Transports.providerFor(URI.create(address)).resourceUsage();
                for (final CallKind kind : kinds)
                {
                    for (final int c : concurrency)
                    {
                        final long calls = size.callsPerCell() > 0 ? Math.max(size.callsPerCell(), 4L * c) : 0;
                        final LoadSpec spec = new LoadSpec(kind, 64, STREAM_MESSAGES, c, calls,
                            size.cellDuration() == null ? 0 : size.cellDuration().toNanos(), 0, false);
                        final RunResult result = new LoadGenerator(client, spec, log, transport).run();
                        final String clientAfter = quiescentUsage(clientUsage);
                        final String serverAfter = process != null ? serverUsage(process) : local.resourceUsage();
                        final Cell cell = new Cell(transport, kind, c, result, clientAfter, serverAfter, size.deadline());
                        cells.add(cell);
                        log.println(cell.line());
                        log.flush();
                    }
                }
            }
            finally
            {
                if (local != null)
                {
                    local.close();
                }
                if (process != null)
                {
                    process.close();
                }
            }
        }
        return cells;
    }

    /** Once the last call completed, buffers may take a moment to come back (a completion still being reaped). */
    private static String quiescentUsage(final ResourceUsage usage) throws InterruptedException
    {
        final long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while ((usage.buffersInUse() != 0 || usage.bytesInUse() != 0) && System.nanoTime() - deadline < 0)
        {
            Thread.sleep(5);
        }
        return usage.describe();
    }

    private static String serverUsage(final ServerProcess process) throws Exception
    {
        final long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        String usage = process.resourceUsage(Duration.ofSeconds(10));
        while (!usage.startsWith("buffers=0, bytes=0") && System.nanoTime() - deadline < 0)
        {
            Thread.sleep(20);
            usage = process.resourceUsage(Duration.ofSeconds(10));
        }
        return usage;
    }

    /**
     * @param cells outcomes.
     * @return the cells that failed, by line.
     */
    public static List<String> failures(final List<Cell> cells)
    {
        final List<String> failed = new ArrayList<>();
        for (final Cell cell : cells)
        {
            if (!cell.failures().isEmpty())
            {
                failed.add(cell.line());
            }
        }
        return failed;
    }
}
