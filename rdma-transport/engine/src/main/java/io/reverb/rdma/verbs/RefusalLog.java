package io.reverb.rdma.verbs;

import io.reverb.common.LogLimiter;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a provider reports connection attempts it refused before the engine saw them (a foreign or
 * malformed handshake, a handshake that missed its deadline, too many handshakes at once, a peer of
 * another user). A refusal is the peer's doing, not a bug here, so it is one line with the reason and
 * the peer, never a stack trace, and never without bound: of each kind the first {@value #BURST} are
 * logged, then at most one per {@link #INTERVAL_NANOS}, saying how many were left out (rpc-core's
 * {@link LogLimiter}). Every refusal is counted ({@link #refused()}), logged or not. Thread-safe.
 */
public final class RefusalLog
{
    /** Refusals of one kind logged at once before rate limiting starts. */
    public static final int BURST = LogLimiter.BURST;
    /** At most one line per kind per interval after the burst. */
    public static final long INTERVAL_NANOS = LogLimiter.INTERVAL_NANOS;
    private static final Logger LOG = LoggerFactory.getLogger(RefusalLog.class);

    private final String where;
    private final BiConsumer<String, String> sink;
    private final LogLimiter limiter;
    private final AtomicLong refused = new AtomicLong();

    /** @param where the listener, named in every line (e.g. {@code "tcp://0.0.0.0:7000"}). */
    public RefusalLog(final String where)
    {
        this(where, (kind, line) -> LOG.warn(line), System::nanoTime);
    }

    /**
     * @param where the listener, named in every line.
     * @param sink  receives (kind, line) for each line logged.
     * @param clock nanosecond clock.
     */
    public RefusalLog(final String where, final BiConsumer<String, String> sink, final LongSupplier clock)
    {
        this.where = where;
        this.sink = sink;
        this.limiter = new LogLimiter(clock);
    }

    /**
     * Counts a refusal and logs it unless its kind is over the rate limit.
     *
     * @param kind   a short stable word grouping refusals for the rate limit ("malformed", "deadline", "busy", ...).
     * @param peer   the peer's address, or null if unknown.
     * @param reason why, one line.
     */
    public void refused(final String kind, final String peer, final String reason)
    {
        refused.incrementAndGet();
        final long leftOut = limiter.admit(kind);
        if (leftOut == LogLimiter.SUPPRESS)
        {
            return;
        }
        sink.accept(kind, where + " refused a connection" + (peer == null ? "" : " from " + peer) + ": " + reason +
            LogLimiter.leftOutSuffix(leftOut));
    }

    /** @return connection attempts refused so far. */
    public long refused()
    {
        return refused.get();
    }
}
