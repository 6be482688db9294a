package io.reverb.rdma.provider.disni;

import java.util.concurrent.TimeUnit;

/**
 * What {@link io.reverb.rdma.verbs.VerbsConfig#rnrRetryNanos()} becomes on real RDMA through rdma_cm.
 *
 * <p>rdma_cm exposes only the RNR retry <em>count</em> ({@code rdma_conn_param.rnr_retry_count}, 3 bits:
 * 0..6, 7 = forever). That count travels in the CM REQ (connector) or REP (acceptor) and is applied to the
 * <em>peer's</em> QP: it bounds how often the peer's sends are retried while this side has no receive
 * posted. The wait between retries is the responder's {@code min_rnr_timer}, which the kernel's rdma_cm
 * leaves at its encoding 0, i.e. 655.36 ms (the longest). So the time before RNR_RETRY_EXC_ERR on real
 * hardware is {@code count x 655.36 ms} (plus transport time), chosen by the receiver:
 * <ul>
 *   <li>{@code rnrRetryNanos == 0}: count 0, the first RNR NAK fails the send at once;</li>
 *   <li>otherwise: the smallest count whose wait covers {@code rnrRetryNanos}, at most 6 (3.9 s); so any
 *       setting up to 655 ms waits 655 ms, and settings above 3.9 s wait 3.9 s.</li>
 * </ul>
 * A correct engine never meets RNR (credits): this only bounds how long a bug takes to surface.
 */
final class RnrRetry
{
    /** Nanoseconds the kernel's rdma_cm makes each RNR retry wait (IB min_rnr_timer encoding 0). */
    static final long RETRY_WAIT_NANOS = 655_360_000L;
    /** Largest finite count (7 means retry forever). */
    static final int MAX_FINITE_COUNT = 6;

    private RnrRetry()
    {
    }

    /**
     * @param rnrRetryNanos the configured bound.
     * @return the rdma_cm {@code rnr_retry_count} to send the peer.
     */
    static int count(final long rnrRetryNanos)
    {
        if (rnrRetryNanos <= 0)
        {
            return 0;
        }
        final long count = rnrRetryNanos / RETRY_WAIT_NANOS + (rnrRetryNanos % RETRY_WAIT_NANOS == 0 ? 0 : 1);
        return (int)Math.min(MAX_FINITE_COUNT, count);
    }

    /**
     * @param rnrRetryNanos the configured bound.
     * @return how long the peer's send actually retries before RNR_RETRY_EXC_ERR, in nanoseconds.
     */
    static long effectiveWaitNanos(final long rnrRetryNanos)
    {
        return count(rnrRetryNanos) * RETRY_WAIT_NANOS;
    }

    /**
     * @param rnrRetryNanos the configured bound.
     * @return e.g. "rnr_retry_count 1 (peer's sends retry 655 ms)".
     */
    static String describe(final long rnrRetryNanos)
    {
        return "rnr_retry_count " + count(rnrRetryNanos) + " (the peer's sends retry " +
            TimeUnit.NANOSECONDS.toMillis(effectiveWaitNanos(rnrRetryNanos)) + " ms while no receive is posted here)";
    }
}
