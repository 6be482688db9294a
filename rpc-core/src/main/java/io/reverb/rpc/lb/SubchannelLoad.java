package io.reverb.rpc.lb;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * Live load figures of one {@link Subchannel}: calls outstanding, and a peak-sensitive, time-decayed moving
 * average of call latency (Finagle's "peak EWMA"). The channel calls {@link #callStarted()} when it starts a call
 * on the subchannel and {@link #callFinished(long)} (or {@link #callAbandoned()}) when it ends; load balancers read
 * {@link #outstanding()} and {@link #cost(long)} on every pick, so reads neither allocate nor lock.
 *
 * <p>The average rises at once to any sample above it (a replica that turns slow is avoided from its first slow
 * answer) and decays with time constant {@code decayNanos}, both on new samples and, when read, with the time since
 * the last one: a replica that was slow and is no longer picked looks cheaper as time passes, gets a probe call,
 * and is used again if it recovered. Two threads finishing calls at the same instant may lose one of the two
 * samples; the average is a heuristic and that is cheaper than a lock or CAS loop.
 */
public final class SubchannelLoad
{
    /** Cost of a subchannel with calls outstanding and no latency sample yet: one probe call at a time. */
    static final double UNKNOWN_BUSY_COST = 1.0e15;

    private final AtomicInteger outstanding = new AtomicInteger();
    private final LongSupplier nanoClock;
    private final double decayNanos;
    private volatile double ewmaNanos;
    private volatile long stampNanos;

    /**
     * @param nanoClock  monotonic nanoseconds, e.g. {@code System::nanoTime}.
     * @param decayNanos time constant of the average's decay, positive.
     */
    public SubchannelLoad(final LongSupplier nanoClock, final long decayNanos)
    {
        if (decayNanos <= 0)
        {
            throw new IllegalArgumentException("decayNanos must be positive: " + decayNanos);
        }
        this.nanoClock = nanoClock;
        this.decayNanos = decayNanos;
        this.stampNanos = nanoClock.getAsLong();
    }

    /**
     * @return a load on {@link System#nanoTime()} with a 200 ms decay.
     */
    public static SubchannelLoad withDefaults()
    {
        return new SubchannelLoad(System::nanoTime, 200_000_000L);
    }

    /**
     * A call was started on the subchannel.
     */
    public void callStarted()
    {
        outstanding.incrementAndGet();
    }

    /**
     * A call started with {@link #callStarted()} ended after the given time (any status: a fast error is still a
     * fast answer; a call that never reached the server should use {@link #callAbandoned()}).
     *
     * @param latencyNanos from start to end.
     */
    public void callFinished(final long latencyNanos)
    {
        outstanding.decrementAndGet();
        observe(latencyNanos);
    }

    /**
     * A call started with {@link #callStarted()} ended without a latency worth recording (never sent, cancelled).
     */
    public void callAbandoned()
    {
        outstanding.decrementAndGet();
    }

    /**
     * @return calls started and not yet ended.
     */
    public int outstanding()
    {
        return outstanding.get();
    }

    /**
     * @param nowNanos the clock's time now.
     * @return the latency average decayed to now, in nanoseconds; 0 before the first sample.
     */
    public double latencyNanos(final long nowNanos)
    {
        final double ewma = ewmaNanos;
        if (ewma == 0.0)
        {
            return 0.0;
        }
        final long elapsed = nowNanos - stampNanos;
        return elapsed <= 0 ? ewma : ewma * Math.exp(-elapsed / decayNanos);
    }

    /**
     * The expected wait of a new call here: latency average times (outstanding + 1). A subchannel never measured
     * costs 0 while idle and {@link #UNKNOWN_BUSY_COST} while its first call is out.
     *
     * @param nowNanos the clock's time now.
     * @return the cost; lower is better.
     */
    public double cost(final long nowNanos)
    {
        final int calls = outstanding.get();
        final double latency = latencyNanos(nowNanos);
        if (latency == 0.0)
        {
            return calls == 0 ? 0.0 : UNKNOWN_BUSY_COST + calls;
        }
        return latency * (calls + 1);
    }

    /**
     * @return the clock this load reads.
     */
    public LongSupplier clock()
    {
        return nanoClock;
    }

    private void observe(final long latencyNanos)
    {
        final long now = nanoClock.getAsLong();
        final double sample = Math.max(1, latencyNanos);
        final double decayed = latencyNanos(now);
        // peak sensitive: jump up at once, come down smoothly
        final double next;
        if (sample >= decayed)
        {
            next = sample;
        }
        else
        {
            final long elapsed = Math.max(0, now - stampNanos);
            final double w = Math.exp(-elapsed / decayNanos);
            next = ewmaNanos * w + sample * (1 - w);
        }
        ewmaNanos = next;
        stampNanos = now;
    }

    @Override
    public String toString()
    {
        return "SubchannelLoad{outstanding=" + outstanding.get() + ", latencyNanos=" + (long)ewmaNanos + "}";
    }
}
