package io.reverb.bench;

import io.reverb.bench.load.CallKind;
import io.reverb.bench.load.Formats;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Command-line options of {@code reverb-bench}, parsed by hand (the tool carries no CLI library).
 */
public final class BenchOptions
{
    /** Where the server runs relative to the load generator. */
    public enum ServerPlacement
    {
        /** A child JVM started by the tool (the default, like a real deployment). */
        SEPARATE_PROCESS("separate-process"),
        /** In the tool's own JVM. */
        SAME_PROCESS("same-process"),
        /** Already running elsewhere: the tool only connects. */
        NONE("none");

        private final String cliName;

        ServerPlacement(final String cliName)
        {
            this.cliName = cliName;
        }

        /**
         * @return the name used on the command line and in reports.
         */
        public String cliName()
        {
            return cliName;
        }

        static ServerPlacement parse(final String text)
        {
            for (final ServerPlacement p : values())
            {
                if (p.cliName.equals(text) || p.name().equalsIgnoreCase(text) || ("separate".equals(text) && p == SEPARATE_PROCESS) ||
                    ("same".equals(text) && p == SAME_PROCESS))
                {
                    return p;
                }
            }
            throw new IllegalArgumentException("--server must be separate-process, same-process or none: " + text);
        }
    }

    /** Target addresses, in report order; empty means the defaults. */
    public final List<String> uris = new ArrayList<>();
    /** Calls outstanding. */
    public int concurrency = 1;
    /** Total calls, or 0 when running for a duration. */
    public long totalCalls;
    /** Duration in ns when {@link #totalCalls} is 0. */
    public long durationNanos;
    /** Open-loop rate, 0 for closed loop. */
    public double rps;
    /** Payload sizes, one run per size and target. */
    public final List<Integer> payloads = new ArrayList<>();
    /** Call kind. */
    public CallKind kind = CallKind.UNARY;
    /** Messages per streaming call. */
    public int streamMessages = 100;
    /** Polling mode for Reverb transports (the first of {@link #pollingModes}), or null for their default. */
    public String polling;
    /** Polling modes to run each polling Reverb target in; empty for the transport's default. */
    public final List<String> pollingModes = new ArrayList<>();
    /** Warm-up duration in ns (0 for none). */
    public long warmupNanos = 3_000_000_000L;
    /** Where the server runs. */
    public ServerPlacement server = ServerPlacement.SEPARATE_PROCESS;
    /** Output format on stdout. */
    public String format = "text";
    /** File to write the formatted results to instead of stdout, or null. */
    public String output;
    /** HTML report path, or null. */
    public String html;
    /** JSON result files to merge into the report (the {@code report} subcommand, or added to a run). */
    public final List<String> inputs = new ArrayList<>();
    /** Extra JVM arguments for a server process. */
    public final List<String> serverJvmArgs = new ArrayList<>();
    /** Progress lines on stderr. */
    public boolean progress = true;
    /** Server subcommand: exit when stdin closes (set by the parent process). */
    public boolean exitOnStdinEof;
    /** idle-cpu subcommand: how long to measure. */
    public long idleNanos = 10_000_000_000L;
    /** True if the user asked for help. */
    public boolean help;
    /** load-matrix: run length of each cell (0: use {@link #cellCalls}). */
    public long cellDurationNanos;
    /** load-matrix: calls per cell when no cell duration is given. */
    public long cellCalls = 20_000;
    /** load-matrix: deadline of every call. */
    public long deadlineNanos = 10_000_000_000L;

    /**
     * @param args command-line arguments after the subcommand.
     * @return the options.
     * @throws IllegalArgumentException with a message naming the bad option.
     */
    public static BenchOptions parse(final String[] args)
    {
        final BenchOptions o = new BenchOptions();
        final ArgCursor in = new ArgCursor(args);
        while (in.hasNext())
        {
            final String arg = in.next();
            String name = arg;
            String inline = null;
            final int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0)
            {
                name = arg.substring(0, eq);
                inline = arg.substring(eq + 1);
            }
            switch (name)
            {
                case "-h", "--help" -> o.help = true;
                case "--uri", "-u" -> o.uris.add(in.take(name, inline));
                case "--compare" ->
                {
                    for (final String uri : in.take(name, inline).split(","))
                    {
                        if (!uri.isBlank())
                        {
                            o.uris.add(uri.trim());
                        }
                    }
                }
                case "-c", "--concurrency" -> o.concurrency = Integer.parseInt(in.take(name, inline));
                case "-n", "--total" -> o.totalCalls = Long.parseLong(in.take(name, inline).replace("_", ""));
                case "-z", "--duration" -> o.durationNanos = Formats.parseDuration(in.take(name, inline));
                case "--rps" -> o.rps = Double.parseDouble(in.take(name, inline));
                case "--payload", "-p" ->
                {
                    for (final String size : in.take(name, inline).split(","))
                    {
                        o.payloads.add(Formats.parseSize(size));
                    }
                }
                case "--kind" -> o.kind = CallKind.parse(in.take(name, inline));
                case "--stream-messages" -> o.streamMessages = Integer.parseInt(in.take(name, inline));
                case "--polling" ->
                {
                    for (final String mode : in.take(name, inline).toUpperCase(Locale.ROOT).split(","))
                    {
                        if (!List.of("BUSY", "EVENT", "ADAPTIVE").contains(mode.trim()))
                        {
                            throw new IllegalArgumentException("--polling must be BUSY, EVENT or ADAPTIVE: " + mode);
                        }
                        o.pollingModes.add(mode.trim());
                    }
                    o.polling = o.pollingModes.get(0);
                }
                case "--warmup" -> o.warmupNanos = Formats.parseDuration(in.take(name, inline));
                case "--server" -> o.server = ServerPlacement.parse(in.take(name, inline));
                case "--format" ->
                {
                    o.format = in.take(name, inline).toLowerCase(Locale.ROOT);
                    if (!List.of("text", "json", "csv").contains(o.format))
                    {
                        throw new IllegalArgumentException("--format must be text, json or csv: " + o.format);
                    }
                }
                case "--output", "-o" -> o.output = in.take(name, inline);
                case "--html" -> o.html = in.take(name, inline);
                case "--input" -> o.inputs.add(in.take(name, inline));
                case "--server-jvm-arg" -> o.serverJvmArgs.add(in.take(name, inline));
                case "--no-progress", "-q", "--quiet" -> o.progress = false;
                case "--exit-on-stdin-eof" -> o.exitOnStdinEof = true;
                case "--seconds" -> o.idleNanos = Formats.parseDuration(in.take(name, inline));
                case "--cell-duration" -> o.cellDurationNanos = Formats.parseDuration(in.take(name, inline));
                case "--cell-calls" -> o.cellCalls = Long.parseLong(in.take(name, inline).replace("_", ""));
                case "--deadline" -> o.deadlineNanos = Formats.parseDuration(in.take(name, inline));
                default ->
                {
                    if (arg.startsWith("-"))
                    {
                        throw new IllegalArgumentException("unknown option " + arg + " (see --help)");
                    }
                    o.inputs.add(arg);
                }
            }
        }
        if (o.totalCalls > 0 && o.durationNanos > 0)
        {
            throw new IllegalArgumentException("give -n (calls) or -z (duration), not both");
        }
        if (o.concurrency < 1)
        {
            throw new IllegalArgumentException("-c must be at least 1");
        }
        return o;
    }

    private static final class ArgCursor
    {
        private final String[] args;
        private int next;

        ArgCursor(final String[] args)
        {
            this.args = args;
        }

        boolean hasNext()
        {
            return next < args.length;
        }

        String next()
        {
            return args[next++];
        }

        String take(final String name, final String inline)
        {
            if (inline != null)
            {
                return inline;
            }
            if (next >= args.length)
            {
                throw new IllegalArgumentException(name + " needs a value");
            }
            return args[next++];
        }
    }
}
