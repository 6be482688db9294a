package io.reverb.rpc.internal;

import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.Status;
import java.util.function.LongSupplier;

/**
 * Call metrics hooks. {@link #NOOP} unless a Micrometer registry is configured; the Micrometer implementation is
 * only loaded then, so rpc-core runs without micrometer on the class path.
 */
public interface CallMetrics
{
    /** Records nothing. */
    CallMetrics NOOP = new CallMetrics()
    {
    };

    /**
     * @param registry an {@code io.micrometer.core.instrument.MeterRegistry}, or null.
     * @param side     "client" or "server".
     * @return metrics recording into it, or {@link #NOOP}.
     * @throws IllegalArgumentException if registry is not a MeterRegistry or micrometer is missing.
     */
    static CallMetrics create(final Object registry, final String side)
    {
        return create(registry, side, null);
    }

    /**
     * @param registry an {@code io.micrometer.core.instrument.MeterRegistry}, or null.
     * @param side     "client" or "server".
     * @param active   where the active-calls gauge reads (the process's counters), or null to count them here.
     * @return metrics recording into it, or {@link #NOOP}.
     * @throws IllegalArgumentException if registry is not a MeterRegistry or micrometer is missing.
     */
    static CallMetrics create(final Object registry, final String side, final LongSupplier active)
    {
        if (registry == null)
        {
            return NOOP;
        }
        try
        {
            Class.forName("io.micrometer.core.instrument.MeterRegistry", false, CallMetrics.class.getClassLoader());
        }
        catch (final ClassNotFoundException e)
        {
            throw new IllegalArgumentException("meterRegistry given but micrometer-core is not on the class path", e);
        }
        // only now is the class that links against micrometer loaded
        return MicrometerCallMetrics.create(registry, side, active);
    }

    /**
     * @return a start timestamp to pass to {@link #callEnded}.
     */
    default long callStarted()
    {
        return 0;
    }

    /**
     * @param method    the method.
     * @param status    how it ended.
     * @param startNanos from {@link #callStarted()}.
     */
    default void callEnded(final MethodDescriptor<?, ?> method, final Status status, final long startNanos)
    {
    }

    /**
     * @param method the method.
     * @param bytes  payload size.
     */
    default void messageSent(final MethodDescriptor<?, ?> method, final int bytes)
    {
    }

    /**
     * @param method the method.
     * @param bytes  payload size.
     */
    default void messageReceived(final MethodDescriptor<?, ?> method, final int bytes)
    {
    }
}
