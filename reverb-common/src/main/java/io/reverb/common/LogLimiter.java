package io.reverb.common;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Keeps a log line that a peer can cause (a handler failing on every call, a refused handshake, an engine error)
 * from repeating without bound. Lines are grouped by a key; of each key the first {@value #BURST} pass, then at
 * most one per {@link #INTERVAL_NANOS}, which carries the count of those left out in between. At most
 * {@value #MAX_KEYS} keys are tracked; lines of any further key share one budget, so that a peer cannot grow the
 * table by inventing keys. Thread-safe; the clock is injected for tests.
 *
 * <p>rpc-core (a server handler's failures), the engine's default error handler and the verbs providers' refusal
 * log all use this one class.
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

    private static final class State
    {
        int logged;
        long windowStart;
        long suppressed;
    }

    /** A limiter on {@link System#nanoTime()}. */
    public LogLimiter()
    {
        this(System::nanoTime);
    }

    /** @param clock nanosecond clock. */
    public LogLimiter(final LongSupplier clock)
    {
        this.clock = clock;
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
