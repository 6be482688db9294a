package io.reverb.rpc.internal;

/**
 * When a server connection is old enough to be drained (gRPC's {@code maxConnectionAge}): each connection gets its
 * own age, jittered by +-10% so that connections made together are not drained together, then a GOAWAY (clients
 * rebalance: their next calls go through a new connection, possibly to another replica) and a grace period for the
 * calls in flight, after which the connection is closed.
 */
public final class MaxConnectionAge
{
    /** Jitter applied to the age, as a fraction. */
    public static final double JITTER = 0.1;

    private MaxConnectionAge()
    {
    }

    /**
     * @param maxAgeNanos the configured age, or {@code Long.MAX_VALUE} for none.
     * @param random01    a uniform random number in [0, 1).
     * @return this connection's age before GOAWAY, in nanoseconds ({@code Long.MAX_VALUE} for never).
     */
    public static long jitteredAgeNanos(final long maxAgeNanos, final double random01)
    {
        if (maxAgeNanos == Long.MAX_VALUE)
        {
            return Long.MAX_VALUE;
        }
        final double factor = 1.0 - JITTER + 2 * JITTER * random01;
        return Math.max(1, (long)(maxAgeNanos * factor));
    }
}
