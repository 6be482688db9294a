package io.reverb.bench;

import com.google.protobuf.BytesValue;
import com.sun.management.OperatingSystemMXBean;
import io.reverb.bench.BenchOptions.ServerPlacement;
import io.reverb.bench.balance.BalanceBench;
import io.reverb.bench.floor.FloorTargets;
import io.reverb.bench.floor.SoftwareCost;
import io.reverb.bench.floor.TcpFloorTarget;
import io.reverb.bench.load.CallKind;
import io.reverb.bench.load.LoadGenerator;
import io.reverb.bench.load.LoadMatrix;
import io.reverb.bench.load.LoadSpec;
import io.reverb.bench.load.RunResult;
import io.reverb.bench.report.CsvReport;
import io.reverb.bench.report.HtmlReport;
import io.reverb.bench.report.JsonReport;
import io.reverb.bench.report.TextReport;
import io.reverb.bench.target.BenchServer;
import io.reverb.bench.target.EchoClient;
import io.reverb.bench.target.GrpcTarget;
import io.reverb.bench.target.Target;
import io.reverb.bench.target.TargetSettings;
import io.reverb.bench.target.Targets;
import org.openjdk.jmh.Main;

import java.io.IOException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code reverb-bench}: an RPC latency benchmarking tool in the spirit of ghz and grpc-java's
 * qps client, for Reverb over any of its transports and for grpc-java as the baseline.
 *
 * <pre>
 * reverb-bench [run] [options]      benchmark one or more targets (default: Reverb and grpc-java side by side)
 * reverb-bench server --uri URI     run only an echo server
 * reverb-bench report FILE.json...  merge JSON results into one text/HTML report
 * reverb-bench idle-cpu --uri URI   CPU used by an idle server process
 * reverb-bench software             software per round trip (each echo's two ends on one thread)
 * reverb-bench jmh [JMH options]    the JMH suite (io.reverb.bench.jmh)
 * </pre>
 *
 * Run {@code reverb-bench --help} for the options.
 */
public final class ReverbBench
{
    /** Default grpc-java target: Netty on loopback, ephemeral port. */
    public static final String DEFAULT_GRPC_URI = "grpc://127.0.0.1:0";
    /** Default HTML report written by a run with default targets. */
    public static final String DEFAULT_HTML = "reverb-bench-report.html";

    private static final String USAGE = """
        reverb-bench: RPC latency benchmarking for Reverb (and grpc-java as the baseline)

        Usage:
          reverb-bench [run] [options]        run the benchmark against each --uri, side by side
          reverb-bench server --uri URI       run only an echo server (prints its address; several --uri: one
                                              process serves them all)
          reverb-bench report A.json B.json   merge JSON results (--html, --format)
          reverb-bench idle-cpu --uri URI     CPU used by an idle server process (--seconds 10s)
          reverb-bench load-matrix            every call OK under load: shm, tcp, inproc x unary, server-streaming x
                                              c = 1, 64, 128, 512, 2048 (--cell-duration 30s or --cell-calls N, default
                                              20000; --deadline 10s; --polling MODE); exits 1 if a cell fails
          reverb-bench software               software per round trip, each echo's two ends on one thread: floor,
                                              shm://, floor+aeron (--payload 64B, -z 8s, --warmup 3s, --rounds 1)
          reverb-bench jmh [JMH options]      run the JMH suite (e.g. jmh -prof gc UnaryLatency)

        Targets:
          --uri URI             repeatable; Reverb: shm://name, tcp://host:port, rdma://host:port, inproc://name
                                tcps://host:port (tcp:// inside TLS 1.3, self-signed; benchmark only),
                                reverbs://host:port (reverb:// with that TLS: stays on tcp, no plaintext rdma)
                                grpc-java: grpc://127.0.0.1:PORT (Netty, plaintext), grpc-inproc://name
                                grpc-java on Reverb: grpc+shm://name, grpc+tcp://host:port, grpc+inproc://name
                                (add ?direct=true to a grpc URI for directExecutor on both sides)
                                the floor, no RPC (two processes, same payload and polling mode): floor (the
                                engine's shm rings), floor+aeron (Aeron IPC); a Reverb run's ratio to it is printed
          --compare A,B,...     several targets at once
                                default: shm://reverb-bench (or inproc:// if shm is not available) and
                                grpc://127.0.0.1:0, and an HTML report in reverb-bench-report.html
          --rounds N            run the whole target list N times, round by round (A B A B ...): each round's
                                ratios pair that round's runs (labels end in #1, #2...), then each pair's median
                                over the rounds (default 1)
          --server PLACE        separate-process (default), same-process, none (connect to a running server)
          --server-jvm-arg ARG  extra JVM argument for a server process (repeatable)
          --server-start-timeout DURATION
                                how long a server process may take to come up (default 60s)
          --polling MODES       BUSY | EVENT | ADAPTIVE (or a list, e.g. BUSY,EVENT,ADAPTIVE: one run per mode),
                                for Reverb transports that poll completions (default: the transport's, ADAPTIVE)

        Load:
          -c N                  calls outstanding (default 1)
          -n N                  total calls, or
          -z DURATION           run time, e.g. 10s, 500ms, 1m (default 10s)
          --rps R               open loop at R calls/s (latency measured from each call's intended send time)
          --payload SIZES       payload bytes, comma-separated, e.g. 64,4k,1MiB (default 64)
          --kind KIND           unary (default) | server-streaming
          --stream-messages N   messages per server-streaming call (default 100)
          --warmup DURATION     warm-up before measuring (default 3s; 0 for none)

        Output:
          --format F            text (default) | json | csv, on stdout
          -o, --output FILE     write the formatted results to FILE instead of stdout
          --html FILE           self-contained HTML report with a latency-by-percentile plot
          --input FILE.json     add runs from an earlier JSON result to the report (repeatable)
          -q, --no-progress     no progress lines on stderr
        """;

    private ReverbBench()
    {
    }

    /**
     * @param args command line.
     */
    public static void main(final String[] args)
    {
        try
        {
            final int status = run(args, System.out, System.err);
            System.out.flush();
            System.exit(status);
        }
        catch (final IllegalArgumentException ex)
        {
            System.err.println("reverb-bench: " + ex.getMessage());
            System.exit(2);
        }
        catch (final Exception ex)
        {
            System.err.println("reverb-bench: " + ex);
            ex.printStackTrace(System.err);
            System.exit(1);
        }
    }

    /**
     * Runs a command line.
     *
     * @param args command line.
     * @param out  where results go.
     * @param err  where progress and errors go.
     * @return process exit status.
     * @throws Exception if a run fails.
     */
    public static int run(final String[] args, final PrintStream out, final PrintStream err) throws Exception
    {
        final String command = args.length > 0 && !args[0].startsWith("-") ? args[0] : "run";
        final String[] rest = command.equals("run") && (args.length == 0 || args[0].startsWith("-")) ?
            args : Arrays.copyOfRange(args, 1, args.length);
        if (command.equals("balance"))
        {
            // several server processes behind one balanced channel, one slow: p99/p99.9 per policy (issue 12)
            return BalanceBench.run(rest, out, err);
        }
        if (command.equals("jmh"))
        {
            Main.main(rest);
            return 0;
        }
        final BenchOptions options = BenchOptions.parse(rest);
        if (options.help || command.equals("help"))
        {
            out.print(USAGE + CallBench.USAGE);
            return 0;
        }
        return switch (command)
        {
            case "run" -> options.call.active() ?
                CallBench.run(options, "reverb-bench " + String.join(" ", args), System.in, out, err) :
                runBenchmarks(options, "reverb-bench " + String.join(" ", args), out, err);
            case "server" -> runServer(options, out, err);
            case "report" -> report(options, "reverb-bench " + String.join(" ", args), out, err);
            case "idle-cpu" -> idleCpu(options, out);
            case "load-matrix" -> loadMatrix(options, out, err);
            case "software" -> SoftwareCost.run(options.payloads.isEmpty() ? 64 : options.payloads.get(0),
                options.warmupNanos, options.durationNanos > 0 ? options.durationNanos : TimeUnit.SECONDS.toNanos(8),
                options.rounds, out);
            default -> throw new IllegalArgumentException("unknown command " + command + " (see --help)");
        };
    }

    /**
     * @return the default targets: Reverb over shm:// when that transport is available (else
     * inproc://) and grpc-java over Netty on loopback.
     */
    public static List<String> defaultUris()
    {
        final String reverb = Targets.reverbTransportAvailable("shm") ?
            "shm://reverb-bench-" + ProcessHandle.current().pid() : "inproc://reverb-bench";
        return List.of(reverb, DEFAULT_GRPC_URI);
    }

    private static int runBenchmarks(final BenchOptions o, final String command, final PrintStream out, final PrintStream err)
        throws Exception
    {
        final boolean defaults = o.uris.isEmpty();
        final List<String> uris = defaults ? defaultUris() : o.uris;
        if (defaults && !Targets.reverbTransportAvailable("shm"))
        {
            err.println("note: Reverb's shm:// transport is not available in this build; comparing over inproc:// instead");
        }
        final List<Integer> payloads = o.payloads.isEmpty() ? List.of(64) : o.payloads;
        final long duration = o.totalCalls == 0 && o.durationNanos == 0 ? TimeUnit.SECONDS.toNanos(10) : o.durationNanos;

        final List<RunResult> runs = new ArrayList<>();
        for (final String path : o.inputs)
        {
            runs.addAll(JsonReport.read(Files.readString(Path.of(path))));
        }
        int totalRuns = 0;
        for (final String text : uris)
        {
            totalRuns += isPolling(URI.create(text)) && !o.pollingModes.isEmpty() ? o.pollingModes.size() : 1;
        }
        totalRuns *= payloads.size() * o.rounds;
        int runIndex = 0;
        for (int round = 1; round <= o.rounds; round++)
        {
            for (final int payload : payloads)
            {
                final LoadSpec spec = new LoadSpec(o.kind, payload, o.streamMessages, o.concurrency, o.totalCalls, duration,
                    o.rps, o.progress);
                for (final String text : uris)
                {
                    final URI uri = URI.create(text);
                    final List<String> modes = isPolling(uri) && !o.pollingModes.isEmpty() ?
                        o.pollingModes : Collections.singletonList(null);
                    for (final String mode : modes)
                    {
                        final URI unique = uniqueName(uri, o, runIndex++);
                        // A BUSY run gets a fresh client JVM when other runs share this one: its engine spins a core
                        // until its channel closes, and a run after it should not start in its wake (the transport reads
                        // ?polling= from the address, an engine per mode, so any other mode runs here).
                        final boolean busyAmongOthers = "BUSY".equals(mode) && totalRuns > 1;
                        final List<RunResult> done = mode != null && isShmNamed(uri) && busyAmongOthers ?
                            runInClientProcess(unique, payload, mode, o, err) : List.of(runOne(unique, spec, mode, o, err));
                        for (final RunResult r : done)
                        {
                            r.markRound(round, o.rounds);
                            runs.add(r);
                        }
                    }
                }
            }
        }
        emit(runs, o, out, err);
        final String html = o.html != null ? o.html : defaults ? DEFAULT_HTML : null;
        if (html != null)
        {
            Files.writeString(Path.of(html), HtmlReport.write(runs, "reverb-bench: Reverb and grpc-java", command));
            err.println("HTML report: " + Path.of(html).toAbsolutePath());
        }
        for (final RunResult r : runs)
        {
            if (r.ok == 0)
            {
                return 1;
            }
        }
        return 0;
    }

    /** shm:// and the floors: servers named in shared memory, engines or drivers that spin in BUSY. */
    private static boolean isShmNamed(final URI uri)
    {
        return "shm".equals(uri.getScheme()) || FloorTargets.isFloor(uri);
    }

    private static boolean isPolling(final URI uri)
    {
        return ((Targets.forUri(uri).framework().equals("reverb") || GrpcTarget.isOverReverb(uri)) &&
            !Targets.isInProcessOnly(uri)) ||
            FloorTargets.isFloor(uri) || TcpFloorTarget.SCHEME.equals(uri.getScheme());
    }

    private static List<RunResult> runInClientProcess(
        final URI uri, final int payload, final String polling, final BenchOptions o, final PrintStream err)
        throws IOException, InterruptedException
    {
        final Path json = Files.createTempFile("reverb-bench-", ".json");
        try
        {
            final List<String> command = new ArrayList<>();
            command.add(System.getProperty("java.home") + "/bin/java");
            command.add(ServerProcess.ADD_EXPORTS);
            command.add(ServerProcess.ADD_EXPORTS_DISNI);
            command.addAll(ServerProcess.inheritedJvmArgs());
            command.addAll(List.of("-cp", System.getProperty("java.class.path"), ReverbBench.class.getName(),
                "--uri", uri.toString(), "--polling", polling, "-c", Integer.toString(o.concurrency),
                "--payload", Integer.toString(payload), "--kind", o.kind.cliName(),
                "--stream-messages", Integer.toString(o.streamMessages), "--warmup", (o.warmupNanos / 1e6) + "ms",
                "--server", o.server.cliName(), "--format", "json", "-o", json.toString(),
                "--server-start-timeout", (o.serverStartTimeoutNanos / 1_000_000) + "ms"));
            if (o.totalCalls > 0)
            {
                command.addAll(List.of("-n", Long.toString(o.totalCalls)));
            }
            else
            {
                final long nanos = o.durationNanos == 0 ? TimeUnit.SECONDS.toNanos(10) : o.durationNanos;
                command.addAll(List.of("-z", (nanos / 1e6) + "ms"));
            }
            if (o.rps > 0)
            {
                command.addAll(List.of("--rps", Double.toString(o.rps)));
            }
            for (final String arg : o.serverJvmArgs)
            {
                command.addAll(List.of("--server-jvm-arg", arg));
            }
            if (!o.progress)
            {
                command.add("-q");
            }
            final Process process = new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            final int status = process.waitFor();
            if (status != 0 && Files.size(json) == 0)
            {
                throw new IOException("client process for " + uri + " polling " + polling + " exited with " + status);
            }
            return JsonReport.read(Files.readString(json));
        }
        finally
        {
            Files.deleteIfExists(json);
        }
    }

    /**
     * A shm:// server started by the tool gets a fresh name per run, so that runs never meet the
     * files of the previous run's server.
     */
    private static URI uniqueName(final URI uri, final BenchOptions o, final int runIndex)
    {
        if (runIndex == 0 || o.server == ServerPlacement.NONE || !isShmNamed(uri) ||
            uri.getHost() == null)
        {
            return uri;
        }
        final String text = uri.toString();
        final int at = text.indexOf(uri.getHost()) + uri.getHost().length();
        return URI.create(text.substring(0, at) + "-" + runIndex + text.substring(at));
    }

    private static RunResult runOne(
        final URI uri, final LoadSpec spec, final String polling, final BenchOptions o, final PrintStream err)
        throws Exception
    {
        final TargetSettings settings = new TargetSettings(polling);
        final Target target = Targets.forUri(uri);
        final ServerPlacement placement = Targets.isInProcessOnly(uri) && o.server != ServerPlacement.NONE ?
            ServerPlacement.SAME_PROCESS : o.server;
        final String label = Targets.label(uri) + (polling != null ? " " + polling.toLowerCase(Locale.ROOT) : "");
        err.printf(Locale.ROOT, "-- %s: %s, %s, server %s%n", label, uri, describeLength(spec, o), placement.cliName());

        ServerProcess process = null;
        BenchServer server = null;
        final String address;
        switch (placement)
        {
            case SEPARATE_PROCESS ->
            {
                process = ServerProcess.start(uri.toString(), polling, o.serverJvmArgs,
                    Duration.ofNanos(o.serverStartTimeoutNanos));
                address = process.uri();
            }
            case SAME_PROCESS ->
            {
                server = target.startServer(uri, settings);
                address = server.uri();
            }
            default -> address = uri.toString();
        }
        try (EchoClient client = target.connect(URI.create(address), settings))
        {
            if (o.warmupNanos > 0)
            {
                new LoadGenerator(client, spec.withLength(0, o.warmupNanos, false), err, label).run();
            }
            final RunResult result = new LoadGenerator(client, spec, err, label).run();
            // the fabric the calls took: for reverb:// the one it settled on ("reverb reverb on shm")
            final String fabric = client.fabric();
            if (fabric != null)
            {
                err.printf(Locale.ROOT, "   fabric: %s%n", fabric);
            }
            result.label = fabric != null && !fabric.equals(uri.getScheme()) ? label + " on " + fabric : label;
            result.framework = target.framework();
            result.uri = address;
            result.server = placement.cliName();
            result.polling = polling == null ? "" : polling;
            return result;
        }
        finally
        {
            if (server != null)
            {
                server.close();
            }
            if (process != null)
            {
                process.close();
            }
        }
    }

    private static String describeLength(final LoadSpec spec, final BenchOptions o)
    {
        final String length = spec.totalCalls() > 0 ? String.format(Locale.ROOT, "%,d calls", spec.totalCalls()) :
            String.format(Locale.ROOT, "%.1f s", spec.durationNanos() / 1e9);
        return String.format(Locale.ROOT, "%s %d B, c=%d, %s after %.1f s warm-up", spec.kind().cliName(),
            spec.payloadSize(), spec.concurrency(), length, o.warmupNanos / 1e9);
    }

    static void emit(final List<RunResult> runs, final BenchOptions o, final PrintStream out, final PrintStream err)
        throws IOException
    {
        final String text = switch (o.format)
        {
            case "json" -> JsonReport.write(runs);
            case "csv" -> CsvReport.write(runs);
            default -> TextReport.write(runs);
        };
        if (o.output != null)
        {
            Files.writeString(Path.of(o.output), text);
            err.println("results: " + Path.of(o.output).toAbsolutePath());
        }
        else
        {
            out.print(text);
            out.flush();
        }
    }

    private static int report(final BenchOptions o, final String command, final PrintStream out, final PrintStream err)
        throws IOException
    {
        if (o.inputs.isEmpty())
        {
            throw new IllegalArgumentException("report needs JSON result files (written with --format json)");
        }
        final List<RunResult> runs = new ArrayList<>();
        for (final String path : o.inputs)
        {
            runs.addAll(JsonReport.read(Files.readString(Path.of(path))));
        }
        emit(runs, o, out, err);
        if (o.html != null)
        {
            Files.writeString(Path.of(o.html), HtmlReport.write(runs, "reverb-bench: Reverb and grpc-java", command));
            err.println("HTML report: " + Path.of(o.html).toAbsolutePath());
        }
        return 0;
    }

    private static int runServer(final BenchOptions o, final PrintStream out, final PrintStream err) throws Exception
    {
        if (o.uris.isEmpty())
        {
            throw new IllegalArgumentException("server needs an --uri (repeatable: several servers in one process)");
        }
        final CountDownLatch stop = new CountDownLatch(1);
        // several --uri: one process serves them all (a slow host, e.g. a VM under emulation, starts one JVM, not N)
        final List<BenchServer> servers = new ArrayList<>();
        try
        {
            for (final String text : o.uris)
            {
                final URI uri = URI.create(text);
                final Target target = Targets.forUri(uri);
                final BenchServer server = target.startServer(uri, new TargetSettings(o.polling));
                servers.add(server);
                out.println(ServerProcess.READY + server.uri());
                out.flush();
                if (!o.exitOnStdinEof)
                {
                    err.println("serving " + server.uri() + " (" + target.framework() + "); Ctrl-C to stop");
                }
            }
            Runtime.getRuntime().addShutdownHook(new Thread(stop::countDown));
            if (o.exitOnStdinEof)
            {
                final Thread watcher = new Thread(() ->
                {
                    try
                    {
                        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                        String line;
                        while ((line = in.readLine()) != null)
                        {
                            // End of file is the stop signal; "usage" asks for the transport's resource usage.
                            if (ServerProcess.USAGE_REQUEST.equals(line.trim()))
                            {
                                for (final BenchServer server : servers)
                                {
                                    out.println(ServerProcess.USAGE + server.resourceUsage());
                                }
                                out.flush();
                            }
                        }
                    }
                    catch (final IOException ignore)
                    {
                        // Treated as end of file.
                    }
                    stop.countDown();
                }, "reverb-bench-stdin-watcher");
                watcher.setDaemon(true);
                watcher.start();
            }
            stop.await();
        }
        finally
        {
            for (final BenchServer server : servers)
            {
                server.close();
            }
        }
        return 0;
    }

    private static int loadMatrix(final BenchOptions o, final PrintStream out, final PrintStream err) throws Exception
    {
        final LoadMatrix.Size size = new LoadMatrix.Size(o.cellDurationNanos > 0 ? 0 : o.cellCalls,
            o.cellDurationNanos > 0 ? Duration.ofNanos(o.cellDurationNanos) : null, Duration.ofNanos(o.deadlineNanos),
            o.polling);
        out.println(LoadMatrix.TABLE_HEADER);
        final List<LoadMatrix.Cell> cells = LoadMatrix.run(LoadMatrix.TRANSPORTS,
            List.of(CallKind.UNARY, CallKind.SERVER_STREAMING), LoadMatrix.CONCURRENCY, size, out);
        final List<String> failed = LoadMatrix.failures(cells);
        out.println(failed.isEmpty() ? "all " + cells.size() + " cells passed" :
            failed.size() + " of " + cells.size() + " cells FAILED");
        return failed.isEmpty() ? 0 : 1;
    }

    private static int idleCpu(final BenchOptions o, final PrintStream out) throws Exception
    {
        final List<String> uris = o.uris.isEmpty() ? List.of(defaultUris().get(0)) : o.uris;
        final List<String> modes = o.pollingModes.isEmpty() ? Collections.singletonList(null) : o.pollingModes;
        final List<String[]> runs = new ArrayList<>();
        for (final String text : uris)
        {
            for (final String mode : modes)
            {
                runs.add(new String[]{text, mode});
            }
        }
        for (int runIndex = 0; runIndex < runs.size(); runIndex++)
        {
            final String mode = runs.get(runIndex)[1];
            final URI uri = uniqueName(URI.create(runs.get(runIndex)[0]), o, runIndex);
            if (Targets.isInProcessOnly(uri))
            {
                throw new IllegalArgumentException("idle-cpu needs a server in its own process, not " + uri);
            }
            final Target target = Targets.forUri(uri);
            try (ServerProcess server = ServerProcess.start(uri.toString(), mode, o.serverJvmArgs,
                Duration.ofNanos(o.serverStartTimeoutNanos));
                // The client keeps the transport's default mode: only the server's idle CPU is measured.
                EchoClient client = target.connect(URI.create(server.uri()), TargetSettings.DEFAULTS))
            {
                final BytesValue request = EchoService.payload(64);
                for (int i = 0; i < 10_000; i++)
                {
                    client.blockingEcho(request);
                }
                // Let an adaptive poller notice the silence and go to sleep before measuring.
                Thread.sleep(2000);
                final OperatingSystemMXBean os = (OperatingSystemMXBean)ManagementFactory.getOperatingSystemMXBean();
                final Path proc = Path.of("/proc");
                final Map<String, ThreadCpu.Sample> threads0 = ThreadCpu.snapshot(proc, server.pid());
                final long serverCpu0 = server.cpuNanos();
                final long clientCpu0 = os.getProcessCpuTime();
                final long t0 = System.nanoTime();
                Thread.sleep(TimeUnit.NANOSECONDS.toMillis(o.idleNanos));
                final long serverCpu = server.cpuNanos() - serverCpu0;
                final long clientCpu = os.getProcessCpuTime() - clientCpu0;
                final long wall = System.nanoTime() - t0;
                final Map<String, ThreadCpu.Sample> threads = ThreadCpu.snapshot(proc, server.pid());
                String line = String.format(Locale.ROOT,
                    "%s  polling %s: idle server process used %.2f%% of one core over %.1f s " +
                    "(%.1f ms CPU); the idle client process %.2f%%",
                    server.uri(), mode == null ? "default" : mode, 100.0 * serverCpu / wall, wall / 1e9,
                    serverCpu / 1e6, 100.0 * clientCpu / wall);
                if (!threads.isEmpty())
                {
                    // The process figure counts in clock ticks (10 ms here); the threads' in nanoseconds.
                    line += System.lineSeparator() + "  the server's threads: " +
                        ThreadCpu.summary(ThreadCpu.between(threads0, threads), wall, 3);
                }
                // The result, once, on stdout, as soon as it is measured (progress and result at once).
                out.println(line);
                out.flush();
            }
        }
        return 0;
    }
}
