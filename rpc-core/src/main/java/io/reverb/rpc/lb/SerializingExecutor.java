package io.reverb.rpc.lb;

import io.reverb.common.LogLimiter;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs tasks one at a time, in submission order, on the thread that submits when nobody else is running them
 * (gRPC's SynchronizationContext). Load balancers and resolver results go through one, so that a policy never
 * runs concurrently with itself and needs no lock. A task that throws is logged and does not stop the others.
 */
final class SerializingExecutor implements Executor
{
    private static final Logger LOG = LoggerFactory.getLogger(SerializingExecutor.class);
    /** A task failing every time logs a burst, then a line per interval with the count left out. */
    private static final LogLimiter TASK_FAILURES = new LogLimiter((line, t) -> LOG.warn(line, t));

    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final AtomicInteger pending = new AtomicInteger();

    @Override
    public void execute(final Runnable task)
    {
        tasks.add(task);
        if (pending.getAndIncrement() != 0)
        {
            return; // the thread draining will run it
        }
        // an Error is caught too (a policy's AssertionError, a StackOverflowError): the drain must go on, or every
        // later task (resolver results, state changes, close) would wait for ever; a VM error is rethrown after it
        Error fatal = null;
        do
        {
            final Runnable next = tasks.poll();
            try
            {
                next.run();
            }
            catch (final RuntimeException | Error e)
            {
                TASK_FAILURES.log("load-balancing task", "load-balancing task failed", e);
                if (e instanceof VirtualMachineError && !(e instanceof StackOverflowError) && fatal == null)
                {
                    fatal = (Error)e;
                }
            }
        }
        while (pending.decrementAndGet() != 0);
        if (fatal != null)
        {
            throw fatal;
        }
    }
}
