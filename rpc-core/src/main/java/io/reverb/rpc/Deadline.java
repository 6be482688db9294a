package io.reverb.rpc;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * An absolute point in time on a monotonic clock, by which a call must complete. On the wire it travels as the
 * time remaining, so that the two hosts' clocks need not agree.
 */
public final class Deadline implements Comparable<Deadline>
{
    /** Source of monotonic nanoseconds; replaceable in tests. */
    @FunctionalInterface
    public interface Ticker
    {
        /** The system's {@link System#nanoTime()}. */
        Ticker SYSTEM = System::nanoTime;

        /**
         * @return monotonic time in nanoseconds.
         */
        long nanoTime();
    }

    private final Ticker ticker;
    private final long deadlineNanos;

    private Deadline(final Ticker ticker, final long deadlineNanos)
    {
        this.ticker = ticker;
        this.deadlineNanos = deadlineNanos;
    }

    /**
     * @param timeout time from now.
     * @return a deadline that far from now on the system ticker.
     */
    public static Deadline after(final Duration timeout)
    {
        // Duration.toNanos throws beyond about 292 years: such a timeout saturates as a long one does
        final long nanos = timeout.getSeconds() >= Long.MAX_VALUE / 1_000_000_000L ? Long.MAX_VALUE :
            timeout.getSeconds() < Long.MIN_VALUE / 1_000_000_000L + 1 ? Long.MIN_VALUE : timeout.toNanos();
        return after(nanos, TimeUnit.NANOSECONDS, Ticker.SYSTEM);
    }

    /**
     * @param amount time from now.
     * @param unit   unit of amount.
     * @param ticker the clock.
     * @return a deadline.
     */
    public static Deadline after(final long amount, final TimeUnit unit, final Ticker ticker)
    {
        final long now = ticker.nanoTime();
        final long nanos = unit.toNanos(amount);
        // saturate instead of overflowing, both ways: "practically never", and long past
        final long at = nanos > Long.MAX_VALUE / 2 ? now + Long.MAX_VALUE / 2 :
            nanos < -(Long.MAX_VALUE / 2) ? now - Long.MAX_VALUE / 2 : now + nanos;
        return new Deadline(ticker, at);
    }

    /**
     * @return nanoseconds left, negative or zero when expired.
     */
    public long timeRemainingNanos()
    {
        return deadlineNanos - ticker.nanoTime();
    }

    /**
     * @return time left, zero or negative when expired.
     */
    public Duration timeRemaining()
    {
        return Duration.ofNanos(timeRemainingNanos());
    }

    /**
     * @return true if the deadline has passed.
     */
    public boolean isExpired()
    {
        return timeRemainingNanos() <= 0;
    }

    /**
     * @param other another deadline, may be null.
     * @return the earlier of the two.
     */
    public Deadline minimum(final Deadline other)
    {
        return other == null || compareTo(other) <= 0 ? this : other;
    }

    @Override
    public int compareTo(final Deadline o)
    {
        return Long.compare(deadlineNanos - o.deadlineNanos, 0);
    }

    @Override
    public String toString()
    {
        return "Deadline{remaining=" + timeRemaining() + "}";
    }
}
