package io.reverb.rdma.provider.disni.emu;

import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The emulated NIC's time: where its deferred work runs (executing posted requests, ACKs, RNR and transport retry
 * timers), in the order it falls due, one task at a time, each after the delay asked for multiplied by
 * {@value #TIME_SCALE_PROP} (default 1). A daemon thread ({@code emulated-rdma-nic}) runs what falls due; a thread
 * polling a CQ runs what is already due first ({@link #runDue()}), as a NIC keeps working while the host spins:
 * on a loaded 2-core machine busy-polling threads would otherwise starve the NIC thread for whole time slices.
 * {@link #manual()} switches to a virtual clock that only the test advances ({@link Manual#advance}), running what
 * falls due on the test's thread: tests of the timing then count instead of sleep, and a 655 ms RNR timer costs
 * nothing.
 */
final class NicClock
{
    /** System property: a factor on every NIC delay (e.g. 0.01 turns the 655 ms RNR timer into 6.55 ms). */
    static final String TIME_SCALE_PROP = "reverb.disni.emulated.timeScale";

    private static final long GRACE_NANOS = 0;

    private final double scale = Double.parseDouble(System.getProperty(TIME_SCALE_PROP, "1"));
    /** Real-time tasks: {due nanoTime, sequence} and the task, in due order (guarded by this). */
    private final PriorityQueue<Object[]> queue = new PriorityQueue<>((a, b) ->
    {
        final long[] x = (long[])a[0];
        final long[] y = (long[])b[0];
        return x[0] != y[0] ? Long.compare(x[0], y[0]) : Long.compare(x[1], y[1]);
    });
    /** Held while running tasks: they run one at a time, in due order, whichever thread runs them. */
    private final ReentrantLock runner = new ReentrantLock();
    private long sequence;
    private Thread thread;
    private Manual manual;

    /** Runs {@code task} after {@code delayNanos} of NIC time. */
    void schedule(final long delayNanos, final Runnable task)
    {
        synchronized (this)
        {
            if (manual != null)
            {
                manual.add(delayNanos, task);
                return;
            }
            enqueue(System.nanoTime() + (long)(Math.max(0, delayNanos) * scale), task);
        }
    }

    private void enqueue(final long due, final Runnable task)
    {
        final Object[] entry = {new long[] {due, sequence++}, task};
        queue.add(entry);
        if (thread == null)
        {
            thread = new Thread(this::loop, "emulated-rdma-nic");
            thread.setDaemon(true);
            thread.start();
        }
        if (queue.peek() == entry)
        {
            notifyAll();
        }
    }

    private void loop()
    {
        while (true)
        {
            synchronized (this)
            {
                final Object[] head = queue.peek();
                // The thread takes over what nobody polling ran within GRACE_NANOS (0: at once; a grace of 50 µs
                // cost every message a timed wait, ~2.5x rdma-emulated RdmaRpcTest's time on a loaded 2-core machine).
                final long wait = head == null ? Long.MAX_VALUE : ((long[])head[0])[0] + GRACE_NANOS - System.nanoTime();
                if (wait > 0)
                {
                    try
                    {
                        TimeUnit.NANOSECONDS.timedWait(this, Math.min(wait, TimeUnit.SECONDS.toNanos(1)));
                    }
                    catch (final InterruptedException ex)
                    {
                        return;
                    }
                    continue;
                }
            }
            runner.lock();
            try
            {
                runDueLocked();
            }
            finally
            {
                runner.unlock();
            }
        }
    }

    /** Runs the tasks already due, unless another thread is running them (then it does). Holds no lock. */
    void runDue()
    {
        if (runner.tryLock())
        {
            try
            {
                runDueLocked();
            }
            finally
            {
                runner.unlock();
            }
        }
    }

    private void runDueLocked()
    {
        while (true)
        {
            final Runnable task;
            synchronized (this)
            {
                final Object[] head = queue.peek();
                if (head == null || ((long[])head[0])[0] - System.nanoTime() > 0)
                {
                    return;
                }
                queue.poll();
                task = (Runnable)head[1];
            }
            task.run();
        }
    }

    /**
     * @return a virtual clock that takes over until closed; what is still due then goes back to the NIC thread.
     * @throws IllegalStateException when one is already active.
     */
    synchronized Manual manual()
    {
        if (manual != null)
        {
            throw new IllegalStateException("a manual NIC clock is already active");
        }
        manual = new Manual();
        return manual;
    }

    /** A virtual NIC clock (see {@link NicClock}). */
    final class Manual implements AutoCloseable
    {
        private final PriorityQueue<long[]> due = new PriorityQueue<>((a, b) ->
            a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
        private final List<Runnable> tasks = new ArrayList<>();
        private long now;

        private void add(final long delayNanos, final Runnable task)
        {
            // At least 1 ns: what a task schedules with no delay runs at the next step, not inside this one.
            due.add(new long[] {now + Math.max(1, delayNanos), tasks.size()});
            tasks.add(task);
        }

        /** @return the tasks waiting (due or not). */
        int pending()
        {
            synchronized (NicClock.this)
            {
                return due.size();
            }
        }

        /** Moves time on by {@code nanos}, running (on this thread, in time order) every task that falls due. */
        void advance(final long nanos)
        {
            final long until;
            synchronized (NicClock.this)
            {
                until = now + nanos;
            }
            while (true)
            {
                final Runnable task;
                synchronized (NicClock.this)
                {
                    final long[] next = due.peek();
                    if (next == null || next[0] > until)
                    {
                        now = until;
                        return;
                    }
                    due.poll();
                    now = next[0];
                    task = tasks.set((int)next[1], null);
                }
                task.run();
            }
        }

        /** Moves time on by {@code millis} ms. */
        void advanceMillis(final long millis)
        {
            advance(TimeUnit.MILLISECONDS.toNanos(millis));
        }

        @Override
        public void close()
        {
            synchronized (NicClock.this)
            {
                manual = null;
                long[] next;
                while ((next = due.poll()) != null)
                {
                    enqueue(System.nanoTime() + (long)((next[0] - now) * scale), tasks.get((int)next[1]));
                }
            }
        }
    }
}
