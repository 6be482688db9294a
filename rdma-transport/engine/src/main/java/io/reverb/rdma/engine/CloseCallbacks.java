package io.reverb.rdma.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * The close callbacks of an {@link EngineConnection}, the cause its teardown recorded and the future that
 * {@code closeAsync()} returns.
 *
 * <p>Guarded by the connection's {@link SendLock} (handed over at construction): callbacks added before the teardown run once, on the poller thread, when it
 * ends; a callback added after it runs at once, on the adding thread. A callback that throws is reported to the
 * engine's error handler and does not stop the others.
 */
final class CloseCallbacks
{
    private final SendLock lock;
    private final Consumer<Throwable> errorHandler;
    private final List<Consumer<Throwable>> callbacks = new ArrayList<>();
    private final CompletableFuture<Void> future = new CompletableFuture<>();
    private boolean run;
    private Throwable cause;

    CloseCallbacks(final SendLock lock, final Consumer<Throwable> errorHandler)
    {
        this.lock = lock;
        this.errorHandler = errorHandler;
    }

    /** @return completed (exceptionally if the connection failed) once the callbacks ran. */
    CompletableFuture<Void> future()
    {
        return future;
    }

    /** @return whether the callbacks ran (send lock held). */
    boolean ran()
    {
        assert lock.isHeldByCurrentThread();
        return run;
    }

    /** Records why the connection ended, null if it closed gracefully (send lock held). */
    void cause(final Throwable cause)
    {
        assert lock.isHeldByCurrentThread();
        this.cause = cause;
    }

    /** @return what a send that the closed connection to {@code remoteAddress} did not deliver is failed with. */
    Throwable lostCause(final String remoteAddress)
    {
        return cause != null ? cause : new EngineException("connection to " + remoteAddress + " was closed");
    }

    /** Adds a callback, or runs it now if the callbacks already ran. */
    void add(final Consumer<Throwable> callback)
    {
        final boolean runNow;
        final Throwable recorded;
        synchronized (lock)
        {
            runNow = run;
            recorded = cause;
            if (!runNow)
            {
                callbacks.add(callback);
            }
        }
        if (runNow)
        {
            runOne(callback, recorded);
        }
    }

    /** Runs the callbacks added so far and completes the future (poller thread, once, lock not held). */
    void runAll(final Throwable cause)
    {
        final List<Consumer<Throwable>> toRun;
        synchronized (lock)
        {
            run = true;
            toRun = new ArrayList<>(callbacks);
            callbacks.clear();
        }
        for (final Consumer<Throwable> callback : toRun)
        {
            runOne(callback, cause);
        }
        if (cause == null)
        {
            future.complete(null);
        }
        else
        {
            future.completeExceptionally(cause);
        }
    }

    private void runOne(final Consumer<Throwable> callback, final Throwable cause)
    {
        try
        {
            callback.accept(cause);
        }
        catch (final Throwable t)
        {
            errorHandler.accept(t);
        }
    }
}
