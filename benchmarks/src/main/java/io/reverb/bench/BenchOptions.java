package io.reverb.bench;

import io.reverb.bench.floor.FloorTargets;
import io.reverb.bench.load.CallKind;
import io.reverb.bench.load.Formats;
import picocli.CommandLine;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.TypeConversionException;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * Command-line options of {@code reverb-bench}, parsed by picocli. The subcommand (run, server, report,
 * idle-cpu, load-matrix) is the first argument and is taken off by {@link ReverbBench}; every subcommand
 * accepts the same options and ignores those it has no use for. The help text is
 * {@code ReverbBench}'s own (kept as written, grouped by purpose).
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
                if (p.cliName.equals(text) || p.name().equalsIgnoreCase(text) ||
                    ("separate".equals(text) && p == SEPARATE_PROCESS) || ("same".equals(text) && p == SAME_PROCESS))
                {
                    return p;
                }
            }
            throw new IllegalArgumentException("--server must be separate-process, same-process or none: " + text);
        }
    }

    /** reverb-bench against any service: {@code --call} and its options ({@link CallBench}). */
    @Mixin
    public final CallBenchOptions call = new CallBenchOptions();
    /** True if {@code --server} was given (not defaulted). */
    public boolean serverGiven;
    /** True if an option of the echo service's call shape was given: {@code --payload}, {@code --kind}, ... */
    public boolean echoShapeGiven;
    /** Target addresses, in report order; empty means the defaults. */
    public final List<String> uris = new ArrayList<>();
    /** Calls outstanding. */
    @Option(names = {"-c", "--concurrency"}, paramLabel = "N")
    public int concurrency = 1;
    /** Total calls, or 0 when running for a duration. */
    @Option(names = {"-n", "--total"}, converter = CountConverter.class, paramLabel = "N")
    public long totalCalls;
    /** Duration in ns when {@link #totalCalls} is 0. */
    @Option(names = {"-z", "--duration"}, converter = DurationConverter.class, paramLabel = "DURATION")
    public long durationNanos;
    /** Open-loop rate, 0 for closed loop. */
    @Option(names = "--rps", paramLabel = "R")
    public double rps;
    /** Payload sizes, one run per size and target. */
    @Option(names = {"--payload", "-p"}, split = ",", converter = SizeConverter.class, paramLabel = "SIZES")
    public List<Integer> payloads = new ArrayList<>();
    /** Call kind. */
    @Option(names = "--kind", converter = KindConverter.class, paramLabel = "KIND")
    public CallKind kind = CallKind.UNARY;
    /** Messages per streaming call. */
    @Option(names = "--stream-messages", paramLabel = "N")
    public int streamMessages = 100;
    /** How many times the whole target list runs, round by round (targets alternated); 1 for once. */
    @Option(names = "--rounds", paramLabel = "N")
    public int rounds = 1;
    /** Polling mode for Reverb transports (the first of {@link #pollingModes}), or null for their default. */
    public String polling;
    /** Polling modes to run each polling Reverb target in; empty for the transport's default. */
    @Option(names = "--polling", split = ",", converter = PollingConverter.class, paramLabel = "MODES")
    public List<String> pollingModes = new ArrayList<>();
    /** Warm-up duration in ns (0 for none). */
    @Option(names = "--warmup", converter = DurationConverter.class, paramLabel = "DURATION")
    public long warmupNanos = 3_000_000_000L;
    /** Where the server runs. */
    @Option(names = "--server", converter = PlacementConverter.class, paramLabel = "PLACE")
    public ServerPlacement server = ServerPlacement.SEPARATE_PROCESS;
    /** Output format on stdout. */
    @Option(names = "--format", converter = FormatConverter.class, paramLabel = "F")
    public String format = "text";
    /** File to write the formatted results to instead of stdout, or null. */
    @Option(names = {"--output", "-o"}, paramLabel = "FILE")
    public String output;
    /** HTML report path, or null. */
    @Option(names = "--html", paramLabel = "FILE")
    public String html;
    /** JSON result files to merge into the report (the {@code report} subcommand, or added to a run). */
    public final List<String> inputs = new ArrayList<>();
    /** How long a server process may take to come up (a slow host, e.g. a VM under emulation, needs more). */
    @Option(names = "--server-start-timeout", converter = DurationConverter.class, paramLabel = "DURATION")
    public long serverStartTimeoutNanos = 60_000_000_000L;
    /** Extra JVM arguments for a server process. */
    @Option(names = "--server-jvm-arg", paramLabel = "ARG")
    public List<String> serverJvmArgs = new ArrayList<>();
    /** Progress lines on stderr. */
    public boolean progress = true;
    @Option(names = {"--no-progress", "-q", "--quiet"})
    private boolean quiet;
    /** Server subcommand: exit when stdin closes (set by the parent process). */
    @Option(names = "--exit-on-stdin-eof")
    public boolean exitOnStdinEof;
    /** idle-cpu subcommand: how long to measure. */
    @Option(names = "--seconds", converter = DurationConverter.class, paramLabel = "DURATION")
    public long idleNanos = 10_000_000_000L;
    /** True if the user asked for help. */
    @Option(names = {"-h", "--help"}, usageHelp = true)
    public boolean help;
    /** load-matrix: run length of each cell (0: use {@link #cellCalls}). */
    @Option(names = "--cell-duration", converter = DurationConverter.class, paramLabel = "DURATION")
    public long cellDurationNanos;
    /** load-matrix: calls per cell when no cell duration is given. */
    @Option(names = "--cell-calls", converter = CountConverter.class, paramLabel = "N")
    public long cellCalls = 20_000;
    /** load-matrix and --call: deadline of every call. */
    @Option(names = "--deadline", converter = DurationConverter.class, paramLabel = "DURATION")
    public long deadlineNanos = 10_000_000_000L;

    /**
     * @param uri one target ({@code --uri}, {@code -u}; repeatable).
     */
    @Option(names = {"--uri", "-u"}, paramLabel = "URI")
    void uri(final String uri)
    {
        uris.add(FloorTargets.expand(uri));
    }

    /**
     * @param list comma-separated targets ({@code --compare}).
     */
    @Option(names = "--compare", paramLabel = "A,B,...")
    void compare(final String list)
    {
        for (final String uri : list.split(","))
        {
            if (!uri.isBlank())
            {
                uris.add(FloorTargets.expand(uri.trim()));
            }
        }
    }

    /**
     * @param path a JSON result file ({@code --input}, repeatable).
     */
    @Option(names = "--input", paramLabel = "FILE")
    void input(final String path)
    {
        inputs.add(path);
    }

    /** JSON result files given without an option (the {@code report} subcommand); added to {@link #inputs}. */
    @Parameters
    private List<String> positional = new ArrayList<>();

    /**
     * @param args command-line arguments after the subcommand.
     * @return the options.
     * @throws IllegalArgumentException with a message naming the bad option.
     */
    public static BenchOptions parse(final String[] args)
    {
        final BenchOptions o = new BenchOptions();
        final CommandLine commandLine = new CommandLine(o)
            .setOverwrittenOptionsAllowed(true)   // the last of a repeated option wins
            .setUnmatchedOptionsArePositionalParams(false)
            .setExpandAtFiles(false);             // -d @FILE is the request's JSON, not picocli's argument file
        try
        {
            final ParseResult parsed = commandLine.parseArgs(args);
            o.serverGiven = parsed.hasMatchedOption("--server");
            o.echoShapeGiven = parsed.hasMatchedOption("--payload") || parsed.hasMatchedOption("--kind") ||
                parsed.hasMatchedOption("--stream-messages");
        }
        catch (final CommandLine.ParameterException ex)
        {
            throw new IllegalArgumentException(ex.getMessage() + " (see --help)", ex);
        }
        o.inputs.addAll(o.positional);
        o.progress = !o.quiet;
        o.polling = o.pollingModes.isEmpty() ? null : o.pollingModes.get(0);
        if (o.totalCalls > 0 && o.durationNanos > 0)
        {
            throw new IllegalArgumentException("give -n (calls) or -z (duration), not both");
        }
        if (o.concurrency < 1)
        {
            throw new IllegalArgumentException("-c must be at least 1");
        }
        if (o.rounds < 1 || o.rounds > 1000)
        {
            throw new IllegalArgumentException("--rounds must be 1 to 1000: " + o.rounds);
        }
        o.call.check();
        return o;
    }

    /** Runs a conversion; its IllegalArgumentException becomes picocli's "Invalid value for option" error. */
    private static <T> T convertOrExplain(final Supplier<T> conversion)
    {
        try
        {
            return conversion.get();
        }
        catch (final IllegalArgumentException ex)
        {
            throw new TypeConversionException(ex.getMessage());
        }
    }

    /** A count, with {@code _} allowed between digits ({@code 1_000_000}). */
    static final class CountConverter implements ITypeConverter<Long>
    {
        @Override
        public Long convert(final String value)
        {
            return convertOrExplain(() -> Long.parseLong(value.replace("_", "")));
        }
    }

    /** A duration such as {@code 10s}, {@code 500ms}, {@code 1m}, in nanoseconds. */
    static final class DurationConverter implements ITypeConverter<Long>
    {
        @Override
        public Long convert(final String value)
        {
            return convertOrExplain(() -> Formats.parseDuration(value));
        }
    }

    /** A size such as {@code 64}, {@code 4k}, {@code 1MiB}, in bytes. */
    static final class SizeConverter implements ITypeConverter<Integer>
    {
        @Override
        public Integer convert(final String value)
        {
            return convertOrExplain(() -> Formats.parseSize(value));
        }
    }

    /** {@code unary} or {@code server-streaming}. */
    static final class KindConverter implements ITypeConverter<CallKind>
    {
        @Override
        public CallKind convert(final String value)
        {
            return convertOrExplain(() -> CallKind.parse(value));
        }
    }

    /** {@code separate-process}, {@code same-process} or {@code none}. */
    static final class PlacementConverter implements ITypeConverter<ServerPlacement>
    {
        @Override
        public ServerPlacement convert(final String value)
        {
            return convertOrExplain(() -> ServerPlacement.parse(value));
        }
    }

    /** One polling mode, upper-cased: BUSY, EVENT or ADAPTIVE. */
    static final class PollingConverter implements ITypeConverter<String>
    {
        @Override
        public String convert(final String value)
        {
            final String mode = value.trim().toUpperCase(Locale.ROOT);
            if (!List.of("BUSY", "EVENT", "ADAPTIVE").contains(mode))
            {
                throw new TypeConversionException("--polling must be BUSY, EVENT or ADAPTIVE: " + mode);
            }
            return mode;
        }
    }

    /** {@code text}, {@code json} or {@code csv}, lower-cased. */
    static final class FormatConverter implements ITypeConverter<String>
    {
        @Override
        public String convert(final String value)
        {
            final String format = value.toLowerCase(Locale.ROOT);
            if (!List.of("text", "json", "csv").contains(format))
            {
                throw new TypeConversionException("--format must be text, json or csv: " + format);
            }
            return format;
        }
    }
}
