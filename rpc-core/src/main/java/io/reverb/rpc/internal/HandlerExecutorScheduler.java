package io.reverb.rpc.internal;

import io.reverb.common.LogLimiter;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import reactor.core.Disposable;
import reactor.core.Exceptions;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Runs a server's handlers on the executor given to {@code RpcServer.Builder.executor}: each call gets a worker
 * whose tasks run one at a time, in order, batched into as few executor tasks as the executor lets them (Reactor's
 * trampolining {@code Schedulers.fromExecutor(executor, true)}, without two of its habits that a server cannot have).
 * <ul>
 *   <li>A task the executor rejects (a bounded queue full, an executor shut down) is taken back and the rejection
 *   thrown to the caller, which ends its call UNAVAILABLE; the worker stays usable. Reactor's worker kept counting
 *   the rejected drain as running, so every later task of that call queued for ever (the call never ended).</li>
 *   <li>A rejection is not reported to the thread's uncaught-exception handler: Reactor printed a stack trace on
 *   the transport's thread for every call while an executor rejected.</li>
 * </ul>
 * A task that throws is logged (rate-limited) and the worker goes on.
 */
final class HandlerExecutorScheduler implements Scheduler
{
    private static final LogLimiter TASK_FAILURES = new LogLimiter((line, t) -> WireConnection.LOG.warn(line, t));

    private final Executor executor;

    /**
     * @param executor runs the workers' tasks.
     */
    HandlerExecutorScheduler(final Executor executor)
    {
        this.executor = Objects.requireNonNull(executor, "executor");
    }

    @Override
    public Disposable schedule(final Runnable task)
    {
        final SerialWorker worker = new SerialWorker(executor);
        return worker.schedule(() ->
        {
            try
            {
                task.run();
            }
            finally
            {
                worker.dispose();
            }
        });
    }

    @Override
    public Worker createWorker()
    {
        return new SerialWorker(executor);
    }

    @Override
    public String toString()
    {
        return "HandlerExecutorScheduler(" + executor + ")";
    }

    /** A call's tasks, one at a time, in order. */
    private static final class SerialWorker implements Worker, Runnable
    {
        private final Executor executor;
        // guarded by this
        private final ArrayDeque<Task> tasks = new ArrayDeque<>();
        /** A drain is submitted to the executor or running (guarded by this). */
        private boolean draining;
        private boolean disposed;

        SerialWorker(final Executor executor)
        {
            this.executor = executor;
        }

        @Override
        public Disposable schedule(final Runnable runnable)
        {
            // Reactor's schedule hooks (MDC, tracing, context decorators) apply as with Reactor's own workers
            final Task task = new Task(Schedulers.onSchedule(Objects.requireNonNull(runnable, "task")));
            synchronized (this)
            {
                if (disposed)
                {
                    throw Exceptions.failWithRejected();
                }
                tasks.addLast(task);
                if (draining)
                {
                    return task; // the running drain takes it
                }
                draining = true;
            }
            try
            {
                executor.execute(this);
            }
            catch (final RuntimeException rejected)
            {
                final boolean others;
                synchronized (this)
                {
                    // this task is taken back; another thread may have queued its own meanwhile (it saw draining)
                    tasks.removeFirstOccurrence(task);
                    others = !tasks.isEmpty();
                    draining = others;
                }
                if (others)
                {
                    resubmit();
                }
                throw rejected instanceof RejectedExecutionException ? (RejectedExecutionException)rejected :
                    Exceptions.failWithRejected(rejected);
            }
            return task;
        }

        /** Tasks others queued behind a rejected one: submitted again, or left for the next schedule to submit. */
        private void resubmit()
        {
            try
            {
                executor.execute(this);
            }
            catch (final RuntimeException again)
            {
                synchronized (this)
                {
                    draining = false;
                }
            }
        }

        @Override
        public void run()
        {
            while (true)
            {
                final Task task;
                synchronized (this)
                {
                    task = tasks.pollFirst();
                    if (task == null)
                    {
                        draining = false;
                        return;
                    }
                }
                try
                {
                    task.runUnlessDisposed();
                }
                catch (final RuntimeException | Error e)
                {
                    Exceptions.throwIfJvmFatal(e);
                    TASK_FAILURES.log("handler task", "a handler task failed", e);
                }
            }
        }

        @Override
        public void dispose()
        {
            synchronized (this)
            {
                disposed = true;
                tasks.clear();
            }
        }

        @Override
        public synchronized boolean isDisposed()
        {
            return disposed;
        }
    }

    /** A scheduled task; disposing it before it runs skips it. */
    private static final class Task implements Disposable
    {
        private final Runnable runnable;
        private volatile boolean disposed;

        Task(final Runnable runnable)
        {
            this.runnable = runnable;
        }

        void runUnlessDisposed()
        {
            if (!disposed)
            {
                runnable.run();
            }
        }

        @Override
        public void dispose()
        {
            disposed = true;
        }

        @Override
        public boolean isDisposed()
        {
            return disposed;
        }
    }
}
