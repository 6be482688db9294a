package io.reverb.rdma.verbs;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
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
 * logged, then at most one per {@link #INTERVAL_NANOS}, saying how many were left out. Every refusal is
 * counted ({@link #refused()}), logged or not. Thread-safe.
 */
public final class RefusalLog
{
    /** Refusals of one kind logged at once before rate limiting starts. */
    public static final int BURST = 5;
    /** At most one line per kind per interval after the burst. */
    public static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final Logger LOG = LoggerFactory.getLogger(RefusalLog.class);

    private final String where;
    private final BiConsumer<String, String> sink;
    private final LongSupplier clock;
    private final ConcurrentHashMap<String, Kind> kinds = new ConcurrentHashMap<>();
    private final AtomicLong refused = new AtomicLong();

    private static final class Kind
    {
        int logged;
        long windowStart;
        long suppressed;
    }

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
        this.clock = clock;
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
        final Kind k = kinds.computeIfAbsent(kind, x -> new Kind());
        final long suppressed;
        synchronized (k)
        {
            final long now = clock.getAsLong();
            if (k.logged < BURST)
            {
                k.logged++;
                k.windowStart = now;
                suppressed = 0;
            }
            else if (now - k.windowStart >= INTERVAL_NANOS)
            {
                k.windowStart = now;
                suppressed = k.suppressed;
                k.suppressed = 0;
            }
            else
            {
                k.suppressed++;
                return;
            }
        }
        final String more = suppressed > 0 ? " (" + suppressed + " more like this in the last " +
            TimeUnit.NANOSECONDS.toSeconds(INTERVAL_NANOS) + " s were not logged)" : "";
        sink.accept(kind, where + " refused a connection" + (peer == null ? "" : " from " + peer) + ": " + reason + more);
    }

    /** @return connection attempts refused so far. */
    public long refused()
    {
        return refused.get();
    }
}
