package io.reverb.rdma.provider.handshake;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

/**
 * How long a listener stops accepting after {@code accept()} fails (e.g. EMFILE: the process is out of file
 * descriptors). The listening socket stays acceptable while the condition lasts, so trying again at once would spin a
 * thread for as long as it does; instead each consecutive failure pauses accepting for twice as long as the one
 * before, from {@link #MIN_NANOS} up to {@link #MAX_NANOS}, and an accepted socket starts the count over (as Netty
 * pauses its accepting on such an error). Not thread-safe: it belongs to the accepting thread.
 */
public final class AcceptPause
{
    /** The pause after a first failure. */
    public static final long MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /** The longest pause, however many failures came in a row. */
    public static final long MAX_NANOS = TimeUnit.SECONDS.toNanos(1);

    private int failures;

    /**
     * Counts one more consecutive failure.
     *
     * @return nanoseconds not to accept for now: {@link #MIN_NANOS}, doubled per earlier consecutive failure, at most
     *         {@link #MAX_NANOS}.
     */
    public long failed()
    {
        if (failures < Integer.MAX_VALUE)
        {
            failures++;
        }
        long pause = MIN_NANOS;
        for (int i = 1; i < failures && pause < MAX_NANOS; i++)
        {
            pause *= 2;
        }
        return Math.min(pause, MAX_NANOS);
    }

    /**
     * @param failure    what accept() threw.
     * @param pauseNanos the pause {@link #failed()} gave.
     * @return the reason every listener reports for it (kind {@code "accept-failed"}).
     */
    public static String reason(final IOException failure, final long pauseNanos)
    {
        return "accept() failed (" + failure + "); not accepting for " + TimeUnit.NANOSECONDS.toMillis(pauseNanos) +
            " ms";
    }

    /** An accept succeeded: the next failure pauses for {@link #MIN_NANOS} again. */
    public void succeeded()
    {
        failures = 0;
    }

    /** @return failures in a row so far (0 after a success). */
    public int failures()
    {
        return failures;
    }
}
