package io.reverb.rpc.internal;

import java.util.concurrent.TimeUnit;

/**
 * The server's defence against clients that PING too often (gRPC's keep-alive enforcement): a PING earlier than
 * {@code minTime} after the previous one, or any PING while the connection has no call when
 * {@code permitWithoutCalls} is false, is a strike; after {@link #MAX_PING_STRIKES} strikes the server closes the
 * connection with GOAWAY (RESOURCE_EXHAUSTED, "too many pings"). Sending data resets the strikes, as a client
 * pinging during a long response is legitimate. One connection's state, used from its one event thread; the clock
 * is passed in, so it is tested without sleeping.
 */
public final class KeepAliveEnforcer
{
    /** Strikes tolerated before the connection is closed. */
    public static final int MAX_PING_STRIKES = 2;
    /** The GOAWAY description a client gets. */
    public static final String TOO_MANY_PINGS = "too many pings";

    private final long minTimeNanos;
    private final boolean permitWithoutCalls;
    private long lastValidPingNanos;
    private boolean hasPinged;
    private int strikes;

    /**
     * @param minTime            the shortest allowed gap between two PINGs.
     * @param unit               its unit.
     * @param permitWithoutCalls true to accept PINGs on a connection without calls.
     * @param nowNanos           the clock now (the connection's start).
     */
    public KeepAliveEnforcer(final long minTime, final TimeUnit unit, final boolean permitWithoutCalls, final long nowNanos)
    {
        if (minTime < 0)
        {
            throw new IllegalArgumentException("minTime must not be negative: " + minTime);
        }
        this.minTimeNanos = unit.toNanos(minTime);
        this.permitWithoutCalls = permitWithoutCalls;
        this.lastValidPingNanos = nowNanos;
    }

    /**
     * A PING arrived.
     *
     * @param nowNanos       the clock now.
     * @param hasActiveCalls true if the connection has calls running.
     * @return true to answer it; false when the client has struck out: close the connection with GOAWAY.
     */
    public boolean onPing(final long nowNanos, final boolean hasActiveCalls)
    {
        final boolean tooSoon = hasPinged && nowNanos - lastValidPingNanos < minTimeNanos;
        final boolean idle = !hasActiveCalls && !permitWithoutCalls;
        hasPinged = true;
        if (tooSoon || idle)
        {
            return ++strikes <= MAX_PING_STRIKES;
        }
        lastValidPingNanos = nowNanos;
        return true;
    }

    /**
     * The server sent data (headers or messages): the client's PINGs are legitimate again.
     */
    public void onDataSent()
    {
        strikes = 0;
        hasPinged = false;
    }

    /**
     * @return strikes so far.
     */
    public int strikes()
    {
        return strikes;
    }
}
