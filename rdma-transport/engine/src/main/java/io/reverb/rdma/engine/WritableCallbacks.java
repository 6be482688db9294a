package io.reverb.rdma.engine;

import java.util.ArrayList;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The writable callbacks of a connection's sender ({@link Connection#onWritable}): callers that found no room wait
 * here until the send side progresses (ring space or a rendezvous buffer came back, credits arrived, the state
 * changed). Progress is counted in epochs: a back-pressure remembers the epoch it saw, and the callbacks run (on the
 * poller thread) only once the epoch moved past it, or once the connection is no longer connected (a waiter then
 * finds it closed). Guarded by the connection's {@link SendLock}, handed over at construction, as
 * {@link CloseCallbacks}.
 */
final class WritableCallbacks
{
    private final SendLock lock;
    private final Consumer<Throwable> errorHandler;
    private final BooleanSupplier connected;
    private final ArrayList<Runnable> waiters = new ArrayList<>();
    private final ArrayList<Runnable> firing = new ArrayList<>();
    private long epoch;
    private long backPressureEpoch = -1;

    /**
     * @param lock         the connection's send lock.
     * @param errorHandler where a callback that throws is reported (the others still run).
     * @param connected    whether the connection is still connected (read under the lock by {@link #fire}).
     */
    WritableCallbacks(final SendLock lock, final Consumer<Throwable> errorHandler, final BooleanSupplier connected)
    {
        this.lock = lock;
        this.errorHandler = errorHandler;
        this.connected = connected;
    }

    /** Something progressed (send lock held): callbacks waiting since a back-pressure may run. */
    void progressed()
    {
        assert lock.isHeldByCurrentThread();
        epoch++;
    }

    /** A claim found no room (send lock held): the callbacks wait for progress from now on. */
    void backPressured()
    {
        assert lock.isHeldByCurrentThread();
        backPressureEpoch = epoch;
    }

    /** Adds a callback (send lock held); it runs at the next {@link #fire} after progress. */
    void add(final Runnable callback)
    {
        assert lock.isHeldByCurrentThread();
        waiters.add(callback);
    }

    /** @return whether callbacks wait (read without the lock: a hint for the poller, rechecked by {@link #fire}). */
    boolean hasWaiters()
    {
        return !waiters.isEmpty();
    }

    /**
     * Runs the waiting callbacks if anything progressed since the last back-pressure, or at once while the connection
     * is not connected (poller thread; takes the send lock to take them, runs them without it).
     */
    void fire()
    {
        synchronized (lock)
        {
            if (waiters.isEmpty() || (backPressureEpoch == epoch && connected.getAsBoolean()))
            {
                return;
            }
            firing.addAll(waiters);
            waiters.clear();
        }
        for (int i = 0; i < firing.size(); i++)
        {
            try
            {
                firing.get(i).run();
            }
            catch (final Throwable t)
            {
                errorHandler.accept(t);
            }
        }
        firing.clear();
    }
}
