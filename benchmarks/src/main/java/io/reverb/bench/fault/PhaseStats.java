package io.reverb.bench.fault;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;

/**
 * What the callers saw during one scenario of the fault suite (the calls started while it was the current one),
 * and the verdict against the suite's rules. Counts, not times, decide: a call's status, how far past its deadline it
 * ended, and when the first call succeeded after the server was reachable again.
 *
 * <p>Thread-safe: callers' completions, the watchdog and the control loop update it at once.
 */
public final class PhaseStats
{
    /** gRPC's status code of OK. */
    public static final int OK = 0;
    /** gRPC's status code of DEADLINE_EXCEEDED. */
    public static final int DEADLINE_EXCEEDED = 4;
    /** gRPC's status code of UNAVAILABLE. */
    public static final int UNAVAILABLE = 14;

    /** Which rules apply to a scenario. */
    public enum Kind
    {
        /** Nothing goes wrong: every call succeeds. */
        STEADY,
        /** A fault, then the server reachable again: calls must succeed again soon after. */
        FAULT,
        /** A graceful shutdown with a replacement: as FAULT, and calls running at the shutdown finish OK. */
        GRACEFUL
    }

    /**
     * The limits a scenario is judged by.
     *
     * @param overrunMarginNanos how far past its deadline a call may end.
     * @param recoveryNanos      how soon after the server is reachable again a call must succeed.
     * @param graceNoFailures    GRACEFUL only: true if no call may fail at all (issue 25 item 5: calls refused during
     *                           the drain are retried on the replacement).
     */
    public record Rules(long overrunMarginNanos, long recoveryNanos, boolean graceNoFailures)
    {
    }

    private final String name;
    private final Kind kind;
    private final AtomicLong started = new AtomicLong();
    private final AtomicLong ok = new AtomicLong();
    private final AtomicLong deadlineExceeded = new AtomicLong();
    private final AtomicLong unavailable = new AtomicLong();
    private final Map<Integer, Long> others = new TreeMap<>();
    private final AtomicLong maxOverrunNanos = new AtomicLong(Long.MIN_VALUE);
    private final AtomicLong firstOkAfterRestore = new AtomicLong(Long.MAX_VALUE);
    /** When the calls started after the restore that failed had started (the rules decide which came too late). */
    private final List<Long> failedStartsAfterRestore = new ArrayList<>();
    private volatile long restoredAt = Long.MIN_VALUE;
    private volatile List<Long> inflightAtShutdown;
    /** Failed calls by status code and description, the first {@value #SAMPLE_KINDS} kinds (the rest as "other"). */
    private final Map<String, Long> failureSamples = new TreeMap<>();
    private static final int SAMPLE_KINDS = 8;

    /**
     * @param name the scenario's name.
     * @param kind which rules apply.
     */
    public PhaseStats(final String name, final Kind kind)
    {
        this.name = name;
        this.kind = kind;
    }

    /**
     * @return the scenario's name.
     */
    public String name()
    {
        return name;
    }

    /**
     * Counts a call started in this scenario.
     */
    public void callStarted()
    {
        started.incrementAndGet();
    }

    /**
     * @return calls started in this scenario so far.
     */
    public long started()
    {
        return started.get();
    }

    /**
     * @return whether a call started once the server was back has ended OK.
     */
    public boolean okAfterRestore()
    {
        return firstOkAfterRestore.get() != Long.MAX_VALUE;
    }

    /**
     * @param code         the call's status code.
     * @param startNanos   when it started ({@link System#nanoTime()}).
     * @param overrunNanos how long after its deadline it ended (negative: before).
     * @param endNanos     when it ended ({@link System#nanoTime()}).
     */
    public void callEnded(final int code, final long startNanos, final long overrunNanos, final long endNanos)
    {
        // only a call started once the server was back shows it is back: one that ran on the old, draining
        // server, or waited out a short cut on a connection that survived it, says nothing about new calls
        final boolean afterRestore = restoredAt != Long.MIN_VALUE && startNanos - restoredAt >= 0;
        if (afterRestore && code != OK)
        {
            synchronized (failedStartsAfterRestore)
            {
                failedStartsAfterRestore.add(startNanos);
            }
        }
        switch (code)
        {
            case OK ->
            {
                ok.incrementAndGet();
                if (afterRestore)
                {
                    firstOkAfterRestore.accumulateAndGet(endNanos, Math::min);
                }
            }
            case DEADLINE_EXCEEDED -> deadlineExceeded.incrementAndGet();
            case UNAVAILABLE -> unavailable.incrementAndGet();
            default ->
            {
                synchronized (others)
                {
                    others.merge(code, 1L, Long::sum);
                }
            }
        }
        overrun(overrunNanos);
    }

    /**
     * Keeps what failed calls said, bounded: the first kinds, each counted.
     *
     * @param code        the status code.
     * @param description its description, or null.
     */
    public void failureSeen(final int code, final String description)
    {
        String key = code + " " + (description == null ? "" : description.replaceAll("\\d+", "N"));
        if (key.length() > 160)
        {
            key = key.substring(0, 160);
        }
        synchronized (failureSamples)
        {
            if (!failureSamples.containsKey(key) && failureSamples.size() >= SAMPLE_KINDS)
            {
                key = "(other kinds)";
            }
            failureSamples.merge(key, 1L, Long::sum);
        }
    }

    /**
     * @return the failed calls by status code and description (digits as N), bounded.
     */
    public String failureSamples()
    {
        synchronized (failureSamples)
        {
            return failureSamples.toString();
        }
    }

    /**
     * @param overrunNanos how far past its deadline a call has run (ended or still running).
     */
    public void overrun(final long overrunNanos)
    {
        maxOverrunNanos.accumulateAndGet(overrunNanos, Math::max);
    }

    /**
     * @param nanos when the server became reachable again ({@link System#nanoTime()}).
     */
    public void restored(final long nanos)
    {
        restoredAt = nanos;
    }

    /**
     * @param ids the calls running on the server when its graceful shutdown began.
     */
    public void inflightAtShutdown(final Collection<Long> ids)
    {
        inflightAtShutdown = List.copyOf(ids);
    }

    /**
     * @param rules   the limits.
     * @param outcome a call's final status code by id, or null if it has not ended.
     * @return the scenario's verdict.
     */
    public Verdict verdict(final Rules rules, final LongFunction<Integer> outcome)
    {
        final List<String> broken = new ArrayList<>();
        final long failed = deadlineExceeded.get() + unavailable.get() + othersTotal();
        if (started.get() == 0)
        {
            broken.add("no call was made");
        }
        if (othersTotal() > 0)
        {
            broken.add("failures other than DEADLINE_EXCEEDED/UNAVAILABLE: " + othersDescription());
        }
        final long overrun = maxOverrunNanos.get();
        if (overrun > rules.overrunMarginNanos())
        {
            broken.add(String.format(Locale.ROOT, "a call outlived its deadline by %.0f ms", overrun / 1e6));
        }
        if (kind == Kind.STEADY && failed > 0)
        {
            broken.add(failed + " calls failed with nothing wrong");
        }
        long recoveryNanos = -1;
        if (kind != Kind.STEADY)
        {
            if (restoredAt == Long.MIN_VALUE)
            {
                broken.add("the server was never reported reachable again");
            }
            else if (firstOkAfterRestore.get() == Long.MAX_VALUE)
            {
                broken.add("no call succeeded after the server was reachable again");
            }
            else
            {
                recoveryNanos = firstOkAfterRestore.get() - restoredAt;
                if (recoveryNanos > rules.recoveryNanos())
                {
                    broken.add(String.format(Locale.ROOT, "first success %.0f ms after the server was back",
                        recoveryNanos / 1e6));
                }
            }
            if (restoredAt != Long.MIN_VALUE)
            {
                long late = 0;
                synchronized (failedStartsAfterRestore)
                {
                    for (final long start : failedStartsAfterRestore)
                    {
                        if (start - restoredAt > rules.recoveryNanos())
                        {
                            late++;
                        }
                    }
                }
                if (late > 0)
                {
                    broken.add(String.format(Locale.ROOT, "%d calls started more than %.0f ms after the server was back failed",
                        late, rules.recoveryNanos() / 1e6));
                }
            }
        }
        int inflight = -1;
        int inflightOk = -1;
        if (kind == Kind.GRACEFUL)
        {
            final List<Long> ids = inflightAtShutdown;
            if (ids == null)
            {
                broken.add("the server never reported its calls in flight at the shutdown");
            }
            else
            {
                inflight = ids.size();
                inflightOk = 0;
                for (final long id : ids)
                {
                    final Integer code = outcome.apply(id);
                    if (code != null && code == OK)
                    {
                        inflightOk++;
                    }
                }
                if (inflight == 0)
                {
                    broken.add("no call was in flight at the shutdown (the rule was not exercised)");
                }
                if (inflightOk < inflight)
                {
                    broken.add((inflight - inflightOk) + " of " + inflight + " calls in flight at the shutdown did not end OK");
                }
            }
            if (rules.graceNoFailures() && failed > 0)
            {
                broken.add(failed + " calls failed across the graceful shutdown (not retried on the replacement)");
            }
        }
        return new Verdict(name, started.get(), ok.get(), deadlineExceeded.get(), unavailable.get(), othersTotal(),
            overrun == Long.MIN_VALUE ? 0 : overrun, recoveryNanos, inflight, inflightOk, broken);
    }

    private long othersTotal()
    {
        synchronized (others)
        {
            return others.values().stream().mapToLong(Long::longValue).sum();
        }
    }

    private String othersDescription()
    {
        synchronized (others)
        {
            return others.toString();
        }
    }

    /**
     * One scenario's counts and verdict.
     *
     * @param name         the scenario.
     * @param calls        calls started in it.
     * @param ok           calls that ended OK.
     * @param deadline     calls that ended DEADLINE_EXCEEDED.
     * @param unavailable  calls that ended UNAVAILABLE.
     * @param other        calls that ended with any other status.
     * @param maxOverrunNanos the longest a call ran past its deadline (negative: all ended before).
     * @param recoveryNanos from the server reachable again to the first success; -1 if not measured.
     * @param inflight     calls running on the server at a graceful shutdown; -1 if not one.
     * @param inflightOk   of those, how many ended OK; -1 if not one.
     * @param broken       the rules broken; empty for a pass.
     */
    public record Verdict(String name, long calls, long ok, long deadline, long unavailable, long other,
        long maxOverrunNanos, long recoveryNanos, int inflight, int inflightOk, List<String> broken)
    {
        /**
         * @return true if no rule was broken.
         */
        public boolean passed()
        {
            return broken.isEmpty();
        }

        /**
         * @return the verdict as one line of the suite's table.
         */
        public String row()
        {
            return String.format(Locale.ROOT, "%-12s %6d %6d %6d %6d %5d %8s %9s %9s  %s%s", name, calls, ok, deadline,
                unavailable, other, String.format(Locale.ROOT, "%.0f", Math.max(0, maxOverrunNanos) / 1e6),
                recoveryNanos < 0 ? "-" : String.format(Locale.ROOT, "%.0f", recoveryNanos / 1e6),
                inflight < 0 ? "-" : inflightOk + "/" + inflight, passed() ? "PASS" : "FAIL",
                passed() ? "" : " (" + String.join("; ", broken) + ")");
        }

        /**
         * @return the header line matching {@link #row()}.
         */
        public static String header()
        {
            return String.format(Locale.ROOT, "%-12s %6s %6s %6s %6s %5s %8s %9s %9s  %s", "scenario", "calls", "ok",
                "dl-exc", "unavl", "other", "over-ms", "recov-ms", "inflt-ok", "verdict");
        }
    }
}
