package io.reverb.rdma.engine;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's default error handler: logs what cannot be returned to a caller, and never without bound.
 * Errors are grouped by kind (exception class, and the refusal reason of a handshake); of each kind the first
 * {@value #BURST} are logged at once, then at most one per {@link #INTERVAL_NANOS}, saying how many were left
 * out. A refused handshake is one line without a stack trace (it is the peer's doing, not a bug here);
 * anything else carries its stack trace.
 */
final class ErrorLog implements Consumer<Throwable>
{
    static final int BURST = 5;
    static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final Logger LOG = LoggerFactory.getLogger(RdmaEngine.class);

    private final ConcurrentHashMap<String, Kind> kinds = new ConcurrentHashMap<>();
    private final BiConsumer<String, Throwable> sink;
    private final LongSupplier clock;

    ErrorLog()
    {
        this((line, t) -> LOG.warn(line, t), System::nanoTime);
    }

    /**
     * @param sink  where a line goes, with the throwable whose stack trace it carries (or null).
     * @param clock nanosecond clock.
     */
    ErrorLog(final BiConsumer<String, Throwable> sink, final LongSupplier clock)
    {
        this.sink = sink;
        this.clock = clock;
    }

    private static final class Kind
    {
        int logged;
        long windowStart;
        long suppressed;
    }

    @Override
    public void accept(final Throwable t)
    {
        final String key = key(t);
        final Kind kind = kinds.computeIfAbsent(key, k -> new Kind());
        final long suppressed;
        synchronized (kind)
        {
            final long now = clock.getAsLong();
            if (kind.logged < BURST)
            {
                kind.logged++;
                kind.windowStart = now;
                suppressed = 0;
            }
            else if (now - kind.windowStart >= INTERVAL_NANOS)
            {
                kind.windowStart = now;
                suppressed = kind.suppressed;
                kind.suppressed = 0;
            }
            else
            {
                kind.suppressed++;
                return;
            }
        }
        final String more = suppressed > 0 ? " (" + suppressed + " more like this in the last " +
            TimeUnit.NANOSECONDS.toSeconds(INTERVAL_NANOS) + " s were not logged)" : "";
        if (t instanceof HandshakeException)
        {
            sink.accept(t.getMessage() + more, null);
        }
        else
        {
            sink.accept(t + more, t);
        }
    }

    private static String key(final Throwable t)
    {
        if (t instanceof HandshakeException)
        {
            return "handshake:" + ((HandshakeException)t).reason();
        }
        final Throwable cause = t.getCause();
        return t.getClass().getName() + (cause == null ? "" : "/" + cause.getClass().getName());
    }
}
