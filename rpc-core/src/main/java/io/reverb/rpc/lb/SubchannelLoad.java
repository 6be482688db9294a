package io.reverb.rpc.lb;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * Live load figures of one {@link Subchannel}: calls outstanding, and a peak-sensitive, time-decayed moving
 * average of call latency (Finagle's "peak EWMA"). The channel calls {@link #startCall()} when it starts a call
 * on the subchannel and {@link #endCall(long)} (or {@link #callAbandoned()}) when it ends; load balancers read
 * {@link #outstanding()} and {@link #cost(long)} on every pick, so reads neither allocate nor lock. Calls are timed
 * (two clock reads and the average's update each) only once a picker has read the latency: a channel whose policy
 * never does (pick_first, round_robin) only counts them.
 *
 * <p>The average rises fast towards a slower answer (at most doubling per answer, and per millisecond: a replica
 * that turns 10x slower is avoided after four answers, one hiccup of a fast replica, even one that delayed all of
 * its calls at once, does not make it look slow), comes down by a tenth of
 * the gap with each faster answer (a hiccup is forgotten after a few dozen calls), and, when read, decays with the
 * time since the last answer (time constant {@code decayNanos}): a replica that was slow and is no longer picked
 * looks cheaper as time passes, gets a probe call, and is used again if it recovered. Each probe that finds the
 * replica still slow doubles that time constant (up to {@link #MAX_DECAY_BACKOFF} times), so a replica that stays
 * slow is probed ever more rarely; a fast answer resets it. Two threads finishing calls at
 * the same instant may lose one of the two samples; the average is a heuristic and that is cheaper than a lock or
 * CAS loop. For the same reason the figures are published with ordered (release) stores, not volatile ones: every
 * call's end writes them, and a volatile store costs a full fence each; a reader sees them a moment later at most.
 */
public final class SubchannelLoad
{
    /** What {@link #startCall()} returns while no picker reads the latency: the call is counted, not timed. */
    public static final long UNTIMED = Long.MIN_VALUE;

    /** Cost of a subchannel with calls outstanding and no latency sample yet: one probe call at a time. */
    static final double UNKNOWN_BUSY_COST = 1.0e15;
    /** Most the average grows with one slower answer. */
    static final double PEAK_GROWTH = 2.0;
    /** The average compounds its growth at most once per this window: answers arriving together are one peak. */
    static final long GROWTH_WINDOW_NANOS = 1_000_000L;
    /** Share of the gap a faster answer closes. */
    static final double DOWN_WEIGHT = 0.1;
    /** Most the decay's time constant grows for a replica whose probes keep finding it slow (50 ms -> 1.6 s). */
    static final int MAX_DECAY_BACKOFF = 32;
    /** A probe "finds the replica slow" when its answer is this much slower than the decayed average predicted. */
    static final double PROBE_CONFIRMS = 1.5;

    /**
     * Below this many time constants since the last answer the decay is computed from its series (1 - x + x²/2,
     * relative error under 2e-10) instead of {@link Math#exp}: a replica in steady use answers microseconds apart.
     */
    static final double SHORT_GAP = 1.0e-3;
    private static final VarHandle EWMA;
    private static final VarHandle STAMP;
    private static final VarHandle DECAY_BACKOFF;
    private static final VarHandle GROWTH_CEILING;
    private static final VarHandle GROWTH_STAMP;

    static
    {
        try
        {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            EWMA = lookup.findVarHandle(SubchannelLoad.class, "ewmaNanos", double.class);
            STAMP = lookup.findVarHandle(SubchannelLoad.class, "stampNanos", long.class);
            DECAY_BACKOFF = lookup.findVarHandle(SubchannelLoad.class, "decayBackoff", int.class);
            GROWTH_CEILING = lookup.findVarHandle(SubchannelLoad.class, "growthCeiling", double.class);
            GROWTH_STAMP = lookup.findVarHandle(SubchannelLoad.class, "growthStampNanos", long.class);
        }
        catch (final ReflectiveOperationException e)
        {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final AtomicInteger outstanding = new AtomicInteger();
    /** A picker has read the latency ({@link #latencyNanos}, {@link #cost}): calls are timed from then on. */
    private volatile boolean latencyRead;
    private final LongSupplier nanoClock;
    private final double decayNanos;
    private volatile double ewmaNanos;
    private volatile long stampNanos;
    private volatile int decayBackoff = 1;
    // the most the average may reach until the next growth window (see observe)
    private volatile double growthCeiling;
    private volatile long growthStampNanos;

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
        this.growthStampNanos = stampNanos - GROWTH_WINDOW_NANOS;
    }

    /**
     * @return a load on {@link System#nanoTime()} with a 50 ms decay: a replica 2x costlier than the others is
     * probed about every 35 ms.
     */
    public static SubchannelLoad withDefaults()
    {
        return new SubchannelLoad(System::nanoTime, 50_000_000L);
    }

    /**
     * A call was started on the subchannel.
     */
    public void callStarted()
    {
        outstanding.incrementAndGet();
    }

    /**
     * A call was started on the subchannel: {@link #callStarted()}, and a start time for {@link #endCall} that reads
     * the clock only once a picker has read this load's latency ({@link #cost}, {@link #latencyNanos}). A channel
     * whose picker never does (pick_first, round_robin) pays no clock read and no average per call.
     *
     * @return the start time, or {@link #UNTIMED}.
     */
    public long startCall()
    {
        outstanding.incrementAndGet();
        return latencyRead ? nanoClock.getAsLong() : UNTIMED;
    }

    /**
     * A call started with {@link #startCall()} ended with an answer (any status): its latency joins the average if
     * it was timed.
     *
     * @param startNanos what {@link #startCall()} returned.
     */
    public void endCall(final long startNanos)
    {
        outstanding.decrementAndGet();
        if (startNanos != UNTIMED)
        {
            final long now = nanoClock.getAsLong();
            observe(now - startNanos, now);
        }
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
        observe(latencyNanos, nanoClock.getAsLong());
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
        if (!latencyRead)
        {
            latencyRead = true; // from now on calls are timed (startCall)
        }
        return decayedLatency(nowNanos);
    }

    private double decayedLatency(final long nowNanos)
    {
        final double ewma = ewmaNanos;
        if (ewma == 0.0)
        {
            return 0.0;
        }
        final long elapsed = nowNanos - stampNanos;
        if (elapsed <= 0)
        {
            return ewma;
        }
        final double x = elapsed / (decayNanos * decayBackoff);
        return x < SHORT_GAP ? ewma * (1.0 - x + 0.5 * x * x) : ewma * Math.exp(-x);
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

    private void observe(final long latencyNanos, final long now)
    {
        final double sample = Math.max(1, latencyNanos);
        final double base = decayedLatency(now);
        // up fast to a slower answer, but at most PEAK_GROWTH-fold per answer: a replica that turned 10x slower is
        // avoided after 4 answers, while one hiccup (a GC pause, a preempted poller) cannot make a fast replica look
        // slower than a truly slow one. Down by a fixed share of each faster answer: a replica back from a hiccup
        // looks fast again after a few dozen answers, whatever the call rate.
        final double previous = ewmaNanos;
        // Probe backoff, decided on probes only (answers of a replica whose average had decayed: it was avoided).
        // A probe much slower than the decay predicted says the replica is still slow: decay its average more
        // slowly, so that it is probed half as often (each probe of a 10x slower replica is a tail-latency sample).
        // A probe faster than predicted ends the backoff, so a replica that recovered is back after one probe.
        // Answers of a replica in steady use leave it alone: there the average hardly decays between answers.
        if (base != 0.0 && base < previous * 0.9)
        {
            if (sample > base * PROBE_CONFIRMS)
            {
                DECAY_BACKOFF.setRelease(this, Math.min(MAX_DECAY_BACKOFF, decayBackoff * 2));
            }
            else if (sample <= base)
            {
                DECAY_BACKOFF.setRelease(this, 1);
            }
        }
        final double next;
        if (base == 0.0)
        {
            next = sample;
        }
        else if (sample >= base)
        {
            // The cap is relative to the average before idle decay: after a pause an answer is believed again. It
            // compounds at most once per GROWTH_WINDOW_NANOS: a stall of the replica (its process preempted, a GC)
            // delays every call it has outstanding, and their answers arrive together; counted as one peak, not as
            // one per call (four calls out would make it look 16x slower), it does not send calls to a replica that
            // is slower all the time. A replica that really turned slower answers spread over time, and doubles again.
            if (now - growthStampNanos >= GROWTH_WINDOW_NANOS || growthCeiling < base)
            {
                GROWTH_CEILING.setRelease(this, Math.max(base, previous) * PEAK_GROWTH);
                GROWTH_STAMP.setRelease(this, now);
            }
            next = Math.min(sample, growthCeiling);
        }
        else
        {
            next = base + DOWN_WEIGHT * (sample - base);
        }
        EWMA.setRelease(this, next);
        STAMP.setRelease(this, now);
    }

    /**
     * @return how many times the base decay time constant the average decays with now (1 unless probes keep
     * finding the replica slow).
     */
    public int decayBackoff()
    {
        return decayBackoff;
    }

    @Override
    public String toString()
    {
        return "SubchannelLoad{outstanding=" + outstanding.get() + ", latencyNanos=" + (long)ewmaNanos +
            (decayBackoff > 1 ? ", decayBackoff=" + decayBackoff : "") + "}";
    }
}
