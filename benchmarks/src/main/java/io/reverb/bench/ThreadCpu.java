package io.reverb.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * CPU time and wake-ups of each thread of a process, from Linux's {@code /proc/PID/task/TID/schedstat} (nanoseconds on
 * a CPU, then time waiting to run, then how many times it was scheduled) and {@code comm} (the name, cut to 15
 * characters). {@code idle-cpu} takes two of these and says which threads an idle server's CPU went to: Reverb's own
 * ({@code reverb-*}), the benchmark harness's ({@code reverb-bench-*}, the server's main thread) or the JVM's (GC,
 * compilers, the VM thread and its periodic tasks). Elsewhere than Linux a snapshot is empty and nothing is split.
 */
final class ThreadCpu
{
    /** Who a thread belongs to. */
    enum Owner
    {
        /** A thread Reverb started: its name begins with {@code reverb-}. */
        REVERB,
        /** The benchmark's own: {@code reverb-bench-*}, and the server's main thread (the JVM names it {@code java}). */
        HARNESS,
        /** Every other thread: GC, JIT compilers, the VM thread and its periodic task thread, ... */
        JVM
    }

    /** One thread's counters at the time of the snapshot. */
    record Sample(String name, long cpuNanos, long timesScheduled)
    {
        Owner owner()
        {
            if (name.startsWith("reverb-bench"))
            {
                return Owner.HARNESS;
            }
            if (name.startsWith("reverb-"))
            {
                return Owner.REVERB;
            }
            return "java".equals(name) ? Owner.HARNESS : Owner.JVM;
        }
    }

    /** A thread's CPU and wake-ups between two snapshots. */
    record Delta(String name, Owner owner, long cpuNanos, long timesScheduled)
    {
    }

    private ThreadCpu()
    {
    }

    /**
     * @param proc the proc file system ({@code /proc}; tests pass a directory laid out the same way).
     * @param pid  the process.
     * @return its threads by thread id; empty if the process or the file system has none to read.
     */
    static Map<String, Sample> snapshot(final Path proc, final long pid)
    {
        final Map<String, Sample> threads = new HashMap<>();
        final Path tasks = proc.resolve(Long.toString(pid)).resolve("task");
        if (!Files.isDirectory(tasks))
        {
            return threads;
        }
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(tasks))
        {
            for (final Path task : dirs)
            {
                final Sample thread = read(task);
                if (thread != null)
                {
                    threads.put(task.getFileName().toString(), thread);
                }
            }
        }
        catch (final IOException ex)
        {
            // The process ended meanwhile: what was read stands.
        }
        return threads;
    }

    /** @return the sample of one task directory, or null if it ended or its files read as something else. */
    private static Sample read(final Path task)
    {
        try
        {
            final String name = Files.readString(task.resolve("comm"), StandardCharsets.UTF_8).strip();
            final String[] fields = Files.readString(task.resolve("schedstat"), StandardCharsets.UTF_8).strip()
                .split("\\s+");
            if (fields.length < 3)
            {
                return null;
            }
            return new Sample(name, Long.parseLong(fields[0]), Long.parseLong(fields[2]));
        }
        catch (final IOException | NumberFormatException ex)
        {
            return null;
        }
    }

    /**
     * @return each thread's CPU and wake-ups from {@code before} to {@code after}, most CPU first; a thread started
     *     in between counts from zero, one that ended is left out.
     */
    static List<Delta> between(final Map<String, Sample> before, final Map<String, Sample> after)
    {
        final List<Delta> deltas = new ArrayList<>();
        for (final Map.Entry<String, Sample> entry : after.entrySet())
        {
            final Sample now = entry.getValue();
            final Sample then = before.get(entry.getKey());
            final long cpu = now.cpuNanos() - (then != null ? then.cpuNanos() : 0);
            final long scheduled = now.timesScheduled() - (then != null ? then.timesScheduled() : 0);
            deltas.add(new Delta(now.name(), now.owner(), Math.max(0, cpu), Math.max(0, scheduled)));
        }
        deltas.sort(Comparator.comparingLong(Delta::cpuNanos).reversed().thenComparing(Delta::name));
        return deltas;
    }

    /**
     * @param deltas    from {@link #between}.
     * @param wallNanos the time between the snapshots.
     * @param top       how many threads of each owner to name.
     * @return e.g. {@code Reverb 0.04% (reverb-counters 0.04%; 1.0 wake-ups/s), JVM 1.21% (VM Periodic Tas 0.80%, ...)}.
     */
    static String summary(final List<Delta> deltas, final long wallNanos, final int top)
    {
        final StringBuilder out = new StringBuilder();
        for (final Owner owner : Owner.values())
        {
            long cpu = 0;
            long scheduled = 0;
            final List<String> named = new ArrayList<>();
            for (final Delta delta : deltas)
            {
                if (delta.owner() != owner)
                {
                    continue;
                }
                cpu += delta.cpuNanos();
                scheduled += delta.timesScheduled();
                if (named.size() < top && delta.cpuNanos() > 0)
                {
                    named.add(delta.name() + " " + percent(delta.cpuNanos(), wallNanos));
                }
            }
            if (out.length() > 0)
            {
                out.append(", ");
            }
            out.append(owner == Owner.REVERB ? "Reverb" : owner == Owner.HARNESS ? "harness" : "JVM").append(' ')
                .append(percent(cpu, wallNanos)).append(" (");
            if (!named.isEmpty())
            {
                out.append(String.join(", ", named)).append("; ");
            }
            out.append(String.format(Locale.ROOT, "%.1f wake-ups/s)", scheduled * 1e9 / wallNanos));
        }
        return out.toString();
    }

    private static String percent(final long cpuNanos, final long wallNanos)
    {
        return String.format(Locale.ROOT, "%.2f%%", 100.0 * cpuNanos / wallNanos);
    }
}
