package io.reverb.bench.stat;

import io.reverb.common.counters.CounterValue;
import io.reverb.common.counters.CountersDirectory;
import io.reverb.common.counters.CountersLayout;
import io.reverb.common.counters.LiveProcess;
import io.reverb.common.counters.ProcessCounters;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * reverb-stat: lists the Reverb processes of this user on this host and prints their live counters (engines,
 * connections, pollers, server methods), read from the memory-mapped counters file each process keeps. Exit codes:
 * 0 printed the counters of at least one process; 1 no live Reverb process (or none matched the filters); 2 usage;
 * 3 the counters directory cannot be read, or is not this user's own real directory (a symbolic link, or a
 * directory another user created under the expected name).
 *
 * <p>A counters file is written by another process and read as untrusted: its lengths are bounded (see
 * {@link LiveProcess#counters()}), every name printed has its control characters escaped ({@link #printable}), and a
 * file that cannot be read (another user's, corrupt, truncated) is reported on stderr and skipped: it never hides the
 * other files, and it changes the exit code only when no file at all could be printed (then 1).
 */
@Command(name = "reverb-stat", mixinStandardHelpOptions = true, version = "reverb-stat 0.1",
    description = {"Prints the live counters of this user's Reverb processes on this host (engines, connections, " +
        "pollers, server methods), read from the counters file each process keeps in a per-user directory: no " +
        "registry, agent or port needed. Stale files of dead processes are skipped (--clean deletes them).",
        "Exit codes: 0 counters printed; 1 no live Reverb process (or none matched the filters); 2 usage error; " +
            "3 the counters directory cannot be read, or is a symbolic link or another user's directory. A file " +
            "that cannot be read is reported and skipped; control characters in names are printed escaped."})
public final class ReverbStat implements Callable<Integer>
{
    /** Exit code: counters printed. */
    public static final int OK = 0;
    /** Exit code: no live process, or none matched. */
    public static final int NOTHING = 1;
    /** Exit code: usage error. */
    public static final int USAGE = 2;
    /** Exit code: the directory cannot be read. */
    public static final int UNREADABLE = 3;

    @Option(names = "--dir", paramLabel = "DIR",
        description = "The counters directory (default: reverb.counters.dir, else $REVERB_COUNTERS_DIR, else " +
            "/dev/shm/reverb-stat-<user> or <tmpdir>/reverb-stat-<user>; printed by --list).")
    private Path dir;

    @Option(names = {"-w", "--watch"}, description = "Print again every --interval, with per-second rates.")
    private boolean watch;

    @Option(names = "--interval", paramLabel = "MS", defaultValue = "1000",
        description = "Milliseconds between prints with --watch (default ${DEFAULT-VALUE}).")
    private long intervalMillis;

    @Option(names = "--count", paramLabel = "N", defaultValue = "0",
        description = "With --watch, stop after N prints (default: until interrupted).")
    private int count;

    @Option(names = {"-p", "--pid"}, paramLabel = "PID", description = "Only this process.")
    private Long pid;

    @Option(names = {"-c", "--connection"}, paramLabel = "TEXT",
        description = "Only connections whose label (engine, number, peer URI) contains TEXT.")
    private String connection;

    @Option(names = {"-m", "--method"}, paramLabel = "TEXT",
        description = "Only server methods whose label (server URI, full method name) contains TEXT.")
    private String method;

    @Option(names = {"-l", "--list"}, description = "List the processes only (pid, start, command), no counters.")
    private boolean list;

    @Option(names = {"-z", "--non-zero"}, description = "Leave out counters at 0.")
    private boolean nonZero;

    @Option(names = "--clean", description = "Delete the stale counters files of dead processes (and those of " +
        "writers killed while creating them); in this user's own directory only, else nothing is deleted (exit 3).")
    private boolean clean;

    private final PrintWriter out;
    private final PrintWriter err;
    /** With --watch: each counter's value at the last print, for rates; only the counters that print showed. */
    private Map<String, Long> previous = new HashMap<>();
    private long previousAtNanos;

    ReverbStat(final PrintWriter out, final PrintWriter err)
    {
        this.out = out;
        this.err = err;
    }

    /**
     * @param args command line.
     */
    public static void main(final String[] args)
    {
        final PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
        final PrintWriter err = new PrintWriter(new OutputStreamWriter(System.err, StandardCharsets.UTF_8), true);
        System.exit(run(args, out, err));
    }

    /**
     * Runs the tool as {@code bin/reverb-stat} does (for tests and embedding).
     *
     * @param args command line.
     * @param out  where counters go.
     * @param err  where problems go.
     * @return the exit code.
     */
    public static int run(final String[] args, final PrintWriter out, final PrintWriter err)
    {
        final CommandLine commandLine = new CommandLine(new ReverbStat(out, err));
        commandLine.setOut(out);
        commandLine.setErr(err);
        commandLine.setParameterExceptionHandler((ex, a) ->
        {
            err.println("reverb-stat: " + ex.getMessage());
            err.println("Usage: reverb-stat --help");
            return USAGE;
        });
        final int code = commandLine.execute(args);
        out.flush();
        err.flush();
        return code;
    }

    @Override
    public Integer call() throws InterruptedException
    {
        if (intervalMillis < 10 || count < 0)
        {
            err.println("reverb-stat: --interval must be at least 10 ms and --count not negative");
            return USAGE;
        }
        final Path directory = dir != null ? dir : ProcessCounters.directory();
        if (clean)
        {
            final int deleted;
            try
            {
                deleted = CountersDirectory.deleteStale(directory);
            }
            catch (final IOException ex)
            {
                // a link or another user's directory: nothing deleted there, and nothing read either
                err.println("reverb-stat: --clean: " + printable(String.valueOf(ex.getMessage())));
                return UNREADABLE;
            }
            err.println("reverb-stat: deleted " + deleted + " stale counters file(s) in " +
                printable(directory.toString()));
        }
        int printed = 0;
        int result;
        while (true)
        {
            result = printOnce(directory, printed == 0);
            printed++;
            if (!watch || result == UNREADABLE || (count > 0 && printed >= count))
            {
                return result;
            }
            Thread.sleep(intervalMillis);
        }
    }

    /**
     * One print of every live process's counters (of those the filters keep).
     *
     * @param directory the counters directory.
     * @param first     whether this is the first print (skipped files are reported on the first only).
     * @return the exit code of this print.
     */
    int printOnce(final Path directory, final boolean first)
    {
        final List<CountersDirectory.Entry> entries;
        try
        {
            entries = CountersDirectory.scan(directory);
        }
        catch (final IOException ex)
        {
            err.println("reverb-stat: cannot read " + printable(String.valueOf(directory)) + ": " +
                printable(String.valueOf(ex.getMessage())));
            return UNREADABLE;
        }
        final long now = System.nanoTime();
        final double seconds = previousAtNanos == 0 ? 0 : (now - previousAtNanos) / 1e9;
        previousAtNanos = now;
        if (watch)
        {
            out.println("--- " + Instant.now());
        }
        // a new map each print, so counters of connections and processes gone since are forgotten
        final Map<String, Long> current = watch ? new HashMap<>() : null;
        int shown = 0;
        for (final CountersDirectory.Entry entry : entries)
        {
            final LiveProcess process = entry.process();
            if (process == null)
            {
                if (first)
                {
                    err.println("reverb-stat: skipped " + printable(entry.file().toString()) + ": " +
                        printable(entry.problem()));
                }
                continue;
            }
            try
            {
                if (pid != null && process.pid() != pid)
                {
                    continue;
                }
                if (print(process, seconds, current))
                {
                    shown++;
                }
            }
            catch (final RuntimeException | InternalError bad)
            {
                // InternalError: the file was truncated under its mapping (SIGBUS). One bad file hides no other.
                out.flush();
                err.println("reverb-stat: skipped " + printable(entry.file().toString()) + ": unreadable: " +
                    printable(String.valueOf(bad)));
            }
        }
        out.flush();
        if (current != null)
        {
            previous = current;
        }
        if (shown == 0)
        {
            err.println("reverb-stat: no live Reverb process" + (pid != null || connection != null || method != null ?
                " matching the filters" : "") + " in " + printable(directory.toString()));
            err.flush();
            return NOTHING;
        }
        return OK;
    }

    /**
     * @return with --watch, each counter's value at the last print (key: pid/counter/group/name); empty without.
     */
    Map<String, Long> previousValues()
    {
        return Collections.unmodifiableMap(previous);
    }

    /**
     * @param current where this print's values go (read as {@link #previous} by the next), or null without --watch.
     */
    private boolean print(final LiveProcess process, final double seconds, final Map<String, Long> current)
    {
        final long heartbeatAge = System.currentTimeMillis() - process.heartbeatMillis();
        final String header = "pid " + process.pid() + "  started " + Instant.ofEpochMilli(process.startTimeMillis()) +
            "  heartbeat " + heartbeatAge + " ms ago  " + printable(process.command());
        if (list)
        {
            out.println(header);
            return true;
        }
        final Map<Long, List<CounterValue>> groups = new LinkedHashMap<>();
        for (final CounterValue value : process.counters())
        {
            if (matches(value) && !(nonZero && value.value() == 0))
            {
                groups.computeIfAbsent(value.groupId(), g -> new ArrayList<>()).add(value);
            }
        }
        if (groups.isEmpty() && (connection != null || method != null))
        {
            return false;
        }
        // Built whole before printed: a file that fails half-way prints nothing of itself.
        final StringBuilder text = new StringBuilder(header).append(System.lineSeparator());
        for (final List<CounterValue> group : groups.values())
        {
            final CounterValue first = group.get(0);
            text.append("  ").append(first.kindName()).append(' ').append(printable(first.group()))
                .append(System.lineSeparator());
            for (final CounterValue value : group)
            {
                String rate = "";
                if (current != null)
                {
                    final String key = process.pid() + "/" + value.id() + "/" + value.groupId() + "/" + value.name();
                    current.put(key, value.value());
                    final Long before = previous.get(key);
                    rate = before != null && seconds > 0 ?
                        String.format(Locale.ROOT, "  %,.0f/s", (value.value() - before) / seconds) : "";
                }
                text.append(String.format(Locale.ROOT, "    %-52s %,20d%s", printable(value.name()), value.value(), rate))
                    .append(System.lineSeparator());
            }
        }
        out.print(text);
        return true;
    }

    /**
     * Escapes what a terminal would act on: C0 and C1 control characters (escape sequences), DEL, Unicode bidi
     * overrides and isolates; and the backslash, so that the escaped text reads back unambiguously.
     *
     * @param text a name from a counters file (written by another process).
     * @return the text, safe to print.
     */
    static String printable(final String text)
    {
        StringBuilder escaped = null;
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            final boolean control = c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == '\\' ||
                (c >= '\u202a' && c <= '\u202e') || (c >= '\u2066' && c <= '\u2069');
            if (control && escaped == null)
            {
                escaped = new StringBuilder(text.length() + 16).append(text, 0, i);
            }
            if (escaped != null)
            {
                if (c == '\\')
                {
                    escaped.append("\\\\");
                }
                else if (control)
                {
                    escaped.append(c < 0x100 ? String.format(Locale.ROOT, "\\x%02x", (int)c) :
                        String.format(Locale.ROOT, "\\u%04x", (int)c));
                }
                else
                {
                    escaped.append(c);
                }
            }
        }
        return escaped == null ? text : escaped.toString();
    }

    private boolean matches(final CounterValue value)
    {
        if (connection == null && method == null)
        {
            return true;
        }
        if (connection != null && value.kind() == CountersLayout.KIND_CONNECTION && value.group().contains(connection))
        {
            return true;
        }
        return method != null && value.kind() == CountersLayout.KIND_SERVER_METHOD && value.group().contains(method);
    }
}
