package io.reverb.rpc.internal;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.Status;
import java.util.HashMap;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Micrometer metrics: {@code reverb.<side>.calls} timers (percentiles 0.5/0.9/0.99/0.999) tagged by method and
 * status, {@code reverb.<side>.calls.active} gauge, {@code reverb.<side>.message.size} summaries tagged by method
 * and direction. Loaded only when a registry is configured. At most {@link #MAX_METHODS} method names get meters of
 * their own; calls of further names are recorded under {@link RpcServer.Builder#OTHER_METHOD} (a server whose
 * fallback registry serves any name a client makes up would otherwise add series without end).
 */
final class MicrometerCallMetrics implements CallMetrics
{
    /**
     * Per registry and side, the count behind the {@code calls.active} gauge of the channels (and servers without
     * counters) that count here: one gauge sums them all, as the call timers are shared by every channel on a
     * registry. A gauge per channel would be dropped from the second on (a meter's name and tags make its identity).
     */
    private static final Map<MeterRegistry, Map<String, AtomicLong>> ACTIVE = new WeakHashMap<>();

    /** Method names with meters of their own, per metrics object (a server's, or a channel's). */
    static final int MAX_METHODS = 1024;

    private final MeterRegistry registry;
    private final String side;
    /** Calls started and not ended, counted here unless the process's counters count them (activeSource). */
    private final AtomicLong active;
    private final boolean countActive;
    private final ConcurrentHashMap<String, Timer[]> timers = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, DistributionSummary[]> sizes = new ConcurrentHashMap<>();

    private MicrometerCallMetrics(final MeterRegistry registry, final String side, final LongSupplier activeSource)
    {
        this.registry = registry;
        this.side = side;
        this.countActive = activeSource == null;
        if (countActive)
        {
            active = sharedActive(registry, side);
            // registered again by every channel: returns the gauge already there, or brings back a removed one
            Gauge.builder("reverb." + side + ".calls.active", active, AtomicLong::get).strongReference(true)
                .register(registry);
        }
        else
        {
            // The server's methods' counters (the file reverb-stat reads) already count calls in flight: one number.
            // A strong reference: nothing else holds the supplier, and a gauge's default weak one would read NaN
            // after the next GC.
            active = null;
            Gauge.builder("reverb." + side + ".calls.active", activeSource, LongSupplier::getAsLong)
                .strongReference(true).register(registry);
        }
    }

    private static AtomicLong sharedActive(final MeterRegistry registry, final String side)
    {
        synchronized (ACTIVE)
        {
            return ACTIVE.computeIfAbsent(registry, r -> new HashMap<>()).computeIfAbsent(side, k -> new AtomicLong());
        }
    }

    static CallMetrics create(final Object registry, final String side, final LongSupplier activeSource)
    {
        if (!(registry instanceof MeterRegistry))
        {
            throw new IllegalArgumentException("meterRegistry must be an io.micrometer.core.instrument.MeterRegistry, got " +
                registry.getClass().getName());
        }
        return new MicrometerCallMetrics((MeterRegistry)registry, side, activeSource);
    }

    @Override
    public long callStarted()
    {
        if (countActive)
        {
            active.incrementAndGet();
        }
        return System.nanoTime();
    }

    @Override
    public void callEnded(final MethodDescriptor<?, ?> method, final Status status, final long startNanos)
    {
        if (countActive)
        {
            active.decrementAndGet();
        }
        final String name = bounded(timers, method.fullMethodName());
        final Timer[] byCode = timers.computeIfAbsent(name, k -> new Timer[17]);
        final int code = status.code().value();
        Timer timer = byCode[code];
        if (timer == null)
        {
            timer = Timer.builder("reverb." + side + ".calls")
                .description("RPC call duration")
                .tag("method", name)
                .tag("status", status.code().name())
                .publishPercentiles(0.5, 0.9, 0.99, 0.999)
                .register(registry);
            byCode[code] = timer;
        }
        timer.record(System.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void messageSent(final MethodDescriptor<?, ?> method, final int bytes)
    {
        summaries(method)[0].record(bytes);
    }

    @Override
    public void messageReceived(final MethodDescriptor<?, ?> method, final int bytes)
    {
        summaries(method)[1].record(bytes);
    }

    private DistributionSummary[] summaries(final MethodDescriptor<?, ?> method)
    {
        return sizes.computeIfAbsent(bounded(sizes, method.fullMethodName()), name -> new DistributionSummary[]{
            DistributionSummary.builder("reverb." + side + ".message.size").baseUnit("bytes")
                .tag("method", name).tag("direction", "sent").register(registry),
            DistributionSummary.builder("reverb." + side + ".message.size").baseUnit("bytes")
                .tag("method", name).tag("direction", "received").register(registry)});
    }

    /** @return the name, or {@link RpcServer.Builder#OTHER_METHOD} if it is new and {@link #MAX_METHODS} are known */
    private static String bounded(final Map<String, ?> known, final String name)
    {
        return known.size() < MAX_METHODS || known.containsKey(name) ? name : RpcServer.Builder.OTHER_METHOD;
    }
}
