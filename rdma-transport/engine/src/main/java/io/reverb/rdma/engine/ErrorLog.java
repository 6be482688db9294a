package io.reverb.rdma.engine;

import io.reverb.common.LogLimiter;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's default error handler: logs what cannot be returned to a caller, and never without bound. It decides
 * only what is one kind of error (exception class and cause's class; the refusal reason of a handshake) and how a
 * line reads; the rate limit is reverb-common's {@link LogLimiter}, the project's one policy (of each kind the first
 * {@value LogLimiter#BURST} at once, then at most one per 10 s, saying how many were left out). A refused handshake
 * is one line without a stack trace (it is the peer's doing, not a bug here); anything else carries its stack trace.
 */
final class ErrorLog implements Consumer<Throwable>
{
    private static final Logger LOG = LoggerFactory.getLogger(RdmaEngine.class);

    private final LogLimiter limiter;

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
        this.limiter = new LogLimiter(sink, clock);
    }

    @Override
    public void accept(final Throwable t)
    {
        if (t instanceof HandshakeException)
        {
            limiter.log(key(t), t.getMessage(), null);
        }
        else
        {
            limiter.log(key(t), t.toString(), t);
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
