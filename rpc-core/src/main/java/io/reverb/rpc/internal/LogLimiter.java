package io.reverb.rpc.internal;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Keeps a log line that a peer can cause (a handler failing on every call of a method) from repeating without
 * bound: per key, the first {@value #BURST} pass, then one per {@link #INTERVAL_NANOS}, which carries the count
 * of those left out.
 */
final class LogLimiter
{
    static final int BURST = 5;
    static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** Returned by {@link #admit} for a line to leave out. */
    static final long SUPPRESS = -1;

    private final ConcurrentHashMap<String, long[]> keys = new ConcurrentHashMap<>();
    private final LongSupplier clock;

    LogLimiter()
    {
        this(System::nanoTime);
    }

    LogLimiter(final LongSupplier clock)
    {
        this.clock = clock;
    }

    /**
     * @param key what kind of line.
     * @return {@link #SUPPRESS} to leave the line out, else how many lines of this key were left out before it.
     */
    long admit(final String key)
    {
        // {logged, window start, suppressed}
        final long[] state = keys.computeIfAbsent(key, k -> new long[3]);
        synchronized (state)
        {
            final long now = clock.getAsLong();
            if (state[0] < BURST)
            {
                state[0]++;
                state[1] = now;
                return 0;
            }
            if (now - state[1] >= INTERVAL_NANOS)
            {
                state[1] = now;
                final long left = state[2];
                state[2] = 0;
                return left;
            }
            state[2]++;
            return SUPPRESS;
        }
    }
}
