package io.reverb.common;

import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;

/**
 * Keeps a log line that a peer can cause (a handler failing on every call, a refused handshake, an engine error)
 * from repeating without bound. Lines are grouped by a key; of each key the first {@value #BURST} pass, then at
 * most one per {@link #INTERVAL_NANOS}, which carries the count of those left out in between. At most
 * {@value #MAX_KEYS} keys are tracked; lines of any further key share one budget, so that a peer cannot grow the
 * table by inventing keys. Thread-safe; the clock and the sink are injected for tests.
 *
 * <p>The one rate limit of the project's logs: rpc-core (a server handler's failures), the engine's default error
 * handler, the verbs providers' refusals of connection attempts and the DiSNi event dispatcher all use this class.
 * Most callers give it a sink and call {@link #log}, which also counts every line offered ({@link #offered()}, logged
 * or not); {@link #admit} is the bare decision for a caller that formats its own line.
 *
 * <pre>{@code
 * LogLimiter refusals = new LogLimiter((line, stack) -> LOG.warn(line, stack));
 * refusals.log("malformed", "tcp://0.0.0.0:7000 refused a connection from 10.0.0.1:4000: bad magic", null);
 * }</pre>
 */
public final class LogLimiter
{
    /** Lines of one key that pass at once before the rate limit starts. */
    public static final int BURST = 5;
    /** After the burst, at most one line per key per interval. */
    public static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** Returned by {@link #admit} for a line to leave out. */
    public static final long SUPPRESS = -1;
    /** Keys tracked apart; any further key shares the budget of {@link #OVERFLOW_KEY}. */
    public static final int MAX_KEYS = 1024;
    /** The key whose budget keys beyond {@link #MAX_KEYS} share. */
    public static final String OVERFLOW_KEY = "(other)";

    private final ConcurrentHashMap<String, State> keys = new ConcurrentHashMap<>();
    private final LongSupplier clock;
    private final BiConsumer<String, Throwable> sink;
    private final AtomicLong offered = new AtomicLong();

    private static final class State
    {
        int logged;
        long windowStart;
        long suppressed;
    }

    /** A limiter on {@link System#nanoTime()} without a sink: {@link #admit} only. */
    public LogLimiter()
    {
        this(null, System::nanoTime);
    }

    /** @param clock nanosecond clock; no sink: {@link #admit} only. */
    public LogLimiter(final LongSupplier clock)
    {
        this(null, clock);
    }

    /** @param sink receives each line {@link #log} lets through, with the throwable it carries (or null). */
    public LogLimiter(final BiConsumer<String, Throwable> sink)
    {
        this(sink, System::nanoTime);
    }

    /**
     * @param sink  receives each line {@link #log} lets through, with the throwable it carries (or null); null for a
     *              limiter used through {@link #admit} only.
     * @param clock nanosecond clock.
     */
    public LogLimiter(final BiConsumer<String, Throwable> sink, final LongSupplier clock)
    {
        this.sink = sink;
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /**
     * Counts a line and hands it to the sink unless its key is over the rate limit; a line that follows left-out ones
     * says how many ({@link #leftOutSuffix}).
     *
     * @param key   what kind of line (the unit of the rate limit).
     * @param line  the line, one sentence.
     * @param stack the throwable whose stack trace the line carries, or null for none (a peer's doing).
     * @return true if the line went to the sink.
     * @throws IllegalStateException if this limiter has no sink.
     */
    public boolean log(final String key, final String line, final Throwable stack)
    {
        if (sink == null)
        {
            throw new IllegalStateException("this LogLimiter has no sink: construct it with one to use log()");
        }
        offered.incrementAndGet();
        final long leftOut = admit(key);
        if (leftOut == SUPPRESS)
        {
            return false;
        }
        sink.accept(line + leftOutSuffix(leftOut), stack);
        return true;
    }

    /** @return lines offered to {@link #log} so far, logged or left out. */
    public long offered()
    {
        return offered.get();
    }

    /**
     * Decides whether a line of this key is logged.
     *
     * @param key what kind of line.
     * @return {@link #SUPPRESS} to leave the line out, else how many lines of this key were left out before it
     *         (0 within the burst).
     */
    public long admit(final String key)
    {
        State state = keys.get(key);
        if (state == null)
        {
            state = keys.size() < MAX_KEYS ? keys.computeIfAbsent(key, k -> new State()) :
                keys.computeIfAbsent(OVERFLOW_KEY, k -> new State());
        }
        synchronized (state)
        {
            final long now = clock.getAsLong();
            if (state.logged < BURST)
            {
                state.logged++;
                state.windowStart = now;
                return 0;
            }
            if (now - state.windowStart >= INTERVAL_NANOS)
            {
                state.windowStart = now;
                final long left = state.suppressed;
                state.suppressed = 0;
                return left;
            }
            state.suppressed++;
            return SUPPRESS;
        }
    }

    /**
     * @param leftOut what {@link #admit} returned for a line that is logged.
     * @return {@code " (N more like this in the last 10 s were not logged)"}, or "" when none were left out.
     */
    public static String leftOutSuffix(final long leftOut)
    {
        return leftOut > 0 ? " (" + leftOut + " more like this in the last " +
            TimeUnit.NANOSECONDS.toSeconds(INTERVAL_NANOS) + " s were not logged)" : "";
    }
}
