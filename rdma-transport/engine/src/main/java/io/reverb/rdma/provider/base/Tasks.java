package io.reverb.rdma.provider.base;

import java.util.Queue;
import java.util.function.Consumer;

/**
 * The task queue that each provider's own thread (shm event loop, tcp NIC, disni rdma_cm dispatcher) drains
 * once per duty cycle: other threads hand it work that must run there.
 */
public final class Tasks
{
    private Tasks()
    {
    }

    /**
     * Runs and removes every task in the queue, including tasks added meanwhile; a task that throws does not
     * stop the others.
     *
     * @param tasks     the queue (any thread adds, only the calling thread polls).
     * @param onFailure given what a task threw; it may rethrow (see {@link #rethrowError}).
     */
    public static void runAll(final Queue<Runnable> tasks, final Consumer<Throwable> onFailure)
    {
        Runnable task;
        while ((task = tasks.poll()) != null)
        {
            try
            {
                task.run();
            }
            catch (final Throwable ex)
            {
                onFailure.accept(ex);
            }
        }
    }

    /**
     * For a {@link #runAll} failure handler that survives exceptions but not {@link Error}s.
     *
     * @param failure what a task threw.
     * @return the failure, if it is not an {@link Error}.
     */
    public static Throwable rethrowError(final Throwable failure)
    {
        if (failure instanceof Error)
        {
            throw (Error)failure;
        }
        return failure;
    }
}
