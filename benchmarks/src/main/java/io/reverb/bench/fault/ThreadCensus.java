package io.reverb.bench.fault;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Counts a process's live threads by name, so that threads left behind after a channel or server closed can be
 * named: a thread counts as left behind if there are more threads of its name now than in a baseline taken before.
 *
 * <p>Not counted: the JVM's own threads that appear lazily (attach listener, signal handlers), the JVM-wide
 * timer pools that outlive every channel and server by design and are created once per process, not per channel
 * (Reactor's {@code parallel-N}, Reverb's {@code reverb-deadline-timer}), and the suite's own threads
 * ({@code fault-*}). The threads of a Reverb engine ({@code reverb-tcp-*}, {@code reverb-shm-*}: one engine per
 * scheme and settings, opened on first use and shared by every channel and server of the JVM, never closed by them)
 * are listed apart by {@link #engineThreads}.
 */
public final class ThreadCensus
{
    /** Threads that are not a channel's or a server's to end. */
    static final Pattern PROCESS_WIDE = Pattern.compile(
        "Attach Listener|Signal Dispatcher|SIGTERM handler|SIGINT handler|process reaper|Common-Cleaner|" +
        "Notification Thread|Reference Handler|Finalizer|DestroyJavaVM|main|parallel-\\d+|reverb-deadline-timer|" +
        "reverb-shm-cleanup|fault-.*");
    /** A Reverb engine's threads: process-wide, they stay after every channel and server closed (by design). */
    static final Pattern ENGINE = Pattern.compile("reverb-(tcp|shm|rdma)-.*");

    private final Map<String, Integer> byName;

    private ThreadCensus(final Map<String, Integer> byName)
    {
        this.byName = byName;
    }

    /**
     * @return the live threads of this process now.
     */
    public static ThreadCensus take()
    {
        final List<String> names = new ArrayList<>();
        for (final Thread thread : Thread.getAllStackTraces().keySet())
        {
            if (thread.isAlive())
            {
                names.add(thread.getName());
            }
        }
        return of(names);
    }

    /**
     * @param names thread names.
     * @return a census of them.
     */
    static ThreadCensus of(final List<String> names)
    {
        final Map<String, Integer> byName = new TreeMap<>();
        for (final String name : names)
        {
            byName.merge(name, 1, Integer::sum);
        }
        return new ThreadCensus(byName);
    }

    /**
     * @param baseline the census taken before.
     * @return the names of threads alive now and not in {@code baseline} (one entry per extra thread), except the
     *         process-wide ones.
     */
    public List<String> leftSince(final ThreadCensus baseline)
    {
        final List<String> left = new ArrayList<>();
        for (final Map.Entry<String, Integer> entry : byName.entrySet())
        {
            if (PROCESS_WIDE.matcher(entry.getKey()).matches() || ENGINE.matcher(entry.getKey()).matches())
            {
                continue;
            }
            final int extra = entry.getValue() - baseline.byName.getOrDefault(entry.getKey(), 0);
            for (int i = 0; i < extra; i++)
            {
                left.add(entry.getKey());
            }
        }
        return left;
    }

    /**
     * @param baseline the census taken before.
     * @return the Reverb engine threads alive now and not in {@code baseline}.
     */
    public List<String> engineThreads(final ThreadCensus baseline)
    {
        final List<String> engine = new ArrayList<>();
        for (final Map.Entry<String, Integer> entry : byName.entrySet())
        {
            if (ENGINE.matcher(entry.getKey()).matches())
            {
                for (int i = baseline.byName.getOrDefault(entry.getKey(), 0); i < entry.getValue(); i++)
                {
                    engine.add(entry.getKey());
                }
            }
        }
        return engine;
    }

    /**
     * Waits (bounded) for the threads left since {@code baseline} to end.
     *
     * @param baseline the census taken before.
     * @param waitMillis how long to wait at most.
     * @return the threads still left at the end.
     * @throws InterruptedException if interrupted.
     */
    public static List<String> awaitLeftSince(final ThreadCensus baseline, final long waitMillis)
        throws InterruptedException
    {
        final long end = System.nanoTime() + waitMillis * 1_000_000L;
        List<String> left = take().leftSince(baseline);
        while (!left.isEmpty() && System.nanoTime() < end)
        {
            Thread.sleep(100);
            left = take().leftSince(baseline);
        }
        return left;
    }
}
