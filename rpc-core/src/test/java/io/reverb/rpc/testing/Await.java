package io.reverb.rpc.testing;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * Waits in tests for what another thread makes true (a call reaching a server, a subchannel becoming ready), polling
 * every few milliseconds: the test then counts what happened instead of sleeping for a guessed time.
 */
public final class Await
{
    private static final long POLL_MILLIS = 2;

    private Await()
    {
    }

    /**
     * @param what      the awaited state, for the failure message.
     * @param timeout   how long to wait at most.
     * @param condition true once the state is reached.
     * @throws AssertionError "timed out waiting for: what" if the condition is still false after the timeout, or if
     *                        the thread is interrupted (its interrupt flag is set again).
     */
    public static void until(final String what, final Duration timeout, final BooleanSupplier condition)
    {
        final long end = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() - end > 0)
            {
                throw new AssertionError("timed out waiting for: " + what);
            }
            try
            {
                Thread.sleep(POLL_MILLIS);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }
}
