package io.reverb.grpc;

import io.reverb.common.LogLimiter;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Runs a stream's listener callbacks one at a time and in order, on whichever thread submits while none runs
 * (the transport's thread, or a grpc-java thread asking for more), never blocking a submitter: a task submitted
 * while another runs is queued and run by that thread before it leaves. The same contract as grpc-java's
 * {@code SerializingExecutor} over a direct executor, without allocating a queue for streams that never contend.
 * The streams extend it, so that it costs no object of its own per call. A task submitted while another runs waits in
 * one slot while no queue exists (a task that ends the stream from within another one, on either side of a unary
 * call, every call), and in the queue once one had to be made: first in, first out for each submitting thread.
 */
class CallbackSerializer
{
    private static final AtomicIntegerFieldUpdater<CallbackSerializer> WIP =
        AtomicIntegerFieldUpdater.newUpdater(CallbackSerializer.class, "wip");

    private static final AtomicReferenceFieldUpdater<CallbackSerializer, Runnable> SLOT =
        AtomicReferenceFieldUpdater.newUpdater(CallbackSerializer.class, Runnable.class, "slot");

    private volatile int wip;
    /** A waiting task, used only while {@link #queue} does not exist; taken before the queue's. */
    private volatile Runnable slot;
    private volatile ConcurrentLinkedQueue<Runnable> queue;

    /**
     * @param task runs now if nothing else of this stream runs, else after what runs.
     */
    final void execute(final Runnable task)
    {
        if (WIP.compareAndSet(this, 0, 1))
        {
            run(task);
            if (WIP.decrementAndGet(this) == 0)
            {
                return;
            }
        }
        else
        {
            if (queue != null || !SLOT.compareAndSet(this, null, task))
            {
                queue().offer(task);
            }
            if (WIP.getAndIncrement(this) != 0)
            {
                return;
            }
        }
        drain();
    }

    private void drain()
    {
        int missed = WIP.get(this);
        do
        {
            // every increment not yet matched by a decrement stands for one queued task
            for (int i = 0; i < missed; i++)
            {
                Runnable next;
                while ((next = next()) == null)
                {
                    Thread.onSpinWait(); // its submitter incremented and is about to offer
                }
                run(next);
            }
            missed = WIP.addAndGet(this, -missed);
        }
        while (missed != 0);
    }

    /** @return the oldest waiting task, or null. */
    private Runnable next()
    {
        final Runnable inSlot = slot;
        if (inSlot != null && SLOT.compareAndSet(this, inSlot, null))
        {
            return inSlot;
        }
        final ConcurrentLinkedQueue<Runnable> q = queue;
        return q == null ? null : q.poll();
    }

    private ConcurrentLinkedQueue<Runnable> queue()
    {
        ConcurrentLinkedQueue<Runnable> q = queue;
        if (q == null)
        {
            synchronized (this)
            {
                q = queue;
                if (q == null)
                {
                    queue = q = new ConcurrentLinkedQueue<>();
                }
            }
        }
        return q;
    }

    private static void run(final Runnable task)
    {
        try
        {
            task.run();
        }
        catch (final RuntimeException | Error e)
        {
            FAILURES.log("callback", "exception in a grpc stream callback", e);
        }
    }

    /** A listener failing on every callback logs a burst, then a line per interval with the count left out. */
    static final LogLimiter FAILURES = new LogLimiter(
        (line, e) -> Logger.getLogger(CallbackSerializer.class.getName()).log(Level.SEVERE, line, e));
}
