package io.reverb.rdma.engine;

import io.reverb.common.LogLimiter;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's default error handler: logs what cannot be returned to a caller, and never without bound.
 * Errors are grouped by kind (exception class, and the refusal reason of a handshake); of each kind the first
 * {@value #BURST} are logged at once, then at most one per {@link #INTERVAL_NANOS}, saying how many were left
 * out (rpc-core's {@link LogLimiter}). A refused handshake is one line without a stack trace (it is the peer's doing, not a bug here);
 * anything else carries its stack trace.
 */
final class ErrorLog implements Consumer<Throwable>
{
    static final int BURST = LogLimiter.BURST;
    static final long INTERVAL_NANOS = LogLimiter.INTERVAL_NANOS;
    private static final Logger LOG = LoggerFactory.getLogger(RdmaEngine.class);

    private final LogLimiter limiter;
    private final BiConsumer<String, Throwable> sink;

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
        this.limiter = new LogLimiter(clock);
    }

    @Override
    public void accept(final Throwable t)
    {
        final long leftOut = limiter.admit(key(t));
        if (leftOut == LogLimiter.SUPPRESS)
        {
            return;
        }
        final String more = LogLimiter.leftOutSuffix(leftOut);
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
