package io.reverb.rdma.provider.disni.emu;

import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The emulated NIC's time: where its deferred work runs (executing posted requests, ACKs, RNR and transport retry
 * timers). By default on one daemon thread ({@code emulated-rdma-nic}) after the delay asked for, multiplied by
 * {@value #TIME_SCALE_PROP} (default 1). {@link #manual()} switches to a virtual clock that only the test advances
 * ({@link Manual#advance}), running what falls due on the test's thread: tests of the timing then count instead of
 * sleep, and a 655 ms RNR timer costs nothing.
 */
final class NicClock
{
    /** System property: a factor on every NIC delay (e.g. 0.01 turns the 655 ms RNR timer into 6.55 ms). */
    static final String TIME_SCALE_PROP = "reverb.disni.emulated.timeScale";

    private final ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(r ->
    {
        final Thread thread = new Thread(r, "emulated-rdma-nic");
        thread.setDaemon(true);
        return thread;
    });
    private final double scale = Double.parseDouble(System.getProperty(TIME_SCALE_PROP, "1"));
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
        }
        executor.schedule(task, (long)(delayNanos * scale), TimeUnit.NANOSECONDS);
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
            due.add(new long[] {now + Math.max(0, delayNanos), tasks.size()});
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
                    executor.schedule(tasks.get((int)next[1]), (long)((next[0] - now) * scale), TimeUnit.NANOSECONDS);
                }
            }
        }
    }
}
