package io.reverb.rpc.internal;

import io.reverb.common.LogLimiter;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;

/**
 * A hashed timer wheel for per-call deadlines, driven by one daemon thread: scheduling and cancelling are a
 * lock-free queue offer and a CAS, where Reactor's parallel scheduler takes a {@code ScheduledThreadPoolExecutor}
 * lock (and sifts a heap) for both, which contends when hundreds of calls start and end at once. Deadlines fire
 * up to about two ticks late (a tick is 1 ms), never early; almost every deadline is cancelled because its call
 * ended first, and a cancelled entry is unlinked from its bucket on the next tick, so cancelled deadlines do not
 * pile up. The thread parks while nothing is scheduled.
 *
 * <p>Tasks run on the timer thread: they must be short and must not block (failing a call is).
 */
public final class DeadlineTimer
{
    private static final Logger LOG = LoggerFactory.getLogger(DeadlineTimer.class);
    /** A task failing on every call logs a burst, then a line per interval with the count left out. */
    private static final LogLimiter TASK_FAILURES = new LogLimiter((line, t) -> LOG.warn(line, t));
    /** Tick length. */
    static final long TICK_NANOS = 1_000_000L;
    private static final int WHEEL_SIZE = 512;
    private static final int MASK = WHEEL_SIZE - 1;
    /** At most this many new entries are moved into the wheel per tick (the rest wait one tick). */
    private static final int MAX_TRANSFERS_PER_TICK = 100_000;
    private static final DeadlineTimer SHARED = new DeadlineTimer("reverb-deadline-timer");

    private final Queue<Entry> pending = new ConcurrentLinkedQueue<>();
    private final Queue<Entry> cancelled = new ConcurrentLinkedQueue<>();
    private final Entry[] heads = new Entry[WHEEL_SIZE];
    private final Entry[] tails = new Entry[WHEEL_SIZE];
    private final String threadName;
    private final long startNanos = System.nanoTime();
    private volatile Thread thread;
    private volatile boolean sleeping;
    // timer thread only (bucketed is volatile only so that tests can read it)
    private long tick;
    private volatile long bucketed;

    DeadlineTimer(final String threadName)
    {
        this.threadName = threadName;
    }

    /**
     * @return the timer shared by every channel and server of this JVM that uses the default timer scheduler.
     */
    public static DeadlineTimer shared()
    {
        return SHARED;
    }

    /**
     * @param task       runs on the timer thread when the delay has passed, unless disposed before.
     * @param delayNanos from now.
     * @return disposing it cancels the task (cheap, from any thread).
     */
    public Disposable schedule(final Runnable task, final long delayNanos)
    {
        final Entry entry = new Entry(this, Objects.requireNonNull(task, "task"), System.nanoTime() + Math.max(0, delayNanos));
        pending.offer(entry);
        final Thread t = thread;
        if (t == null)
        {
            start();
        }
        else if (sleeping)
        {
            LockSupport.unpark(t);
        }
        return entry;
    }

    private synchronized void start()
    {
        if (thread == null)
        {
            final Thread t = new Thread(this::run, threadName);
            t.setDaemon(true);
            thread = t;
            t.start();
        }
    }

    private void run()
    {
        long nextTickNanos = startNanos + TICK_NANOS;
        while (true)
        {
            if (bucketed == 0 && pending.isEmpty())
            {
                sleeping = true;
                if (pending.isEmpty())
                {
                    LockSupport.parkNanos(this, 1_000_000_000L);
                }
                sleeping = false;
                // restart ticking from now: nothing was in the wheel while asleep
                final long now = System.nanoTime();
                tick = Math.max(tick, (now - startNanos) / TICK_NANOS);
                nextTickNanos = startNanos + (tick + 1) * TICK_NANOS;
                continue;
            }
            final long wait = nextTickNanos - System.nanoTime();
            if (wait > 0)
            {
                LockSupport.parkNanos(this, wait);
                continue;
            }
            try
            {
                unlinkCancelled();
                transferPending();
                expire(System.nanoTime());
            }
            catch (final Throwable t)
            {
                LOG.error("deadline timer tick failed", t);
            }
            tick++;
            nextTickNanos += TICK_NANOS;
        }
    }

    private void unlinkCancelled()
    {
        Entry entry;
        while ((entry = cancelled.poll()) != null)
        {
            if (entry.bucket >= 0)
            {
                unlink(entry);
            }
        }
    }

    private void transferPending()
    {
        for (int i = 0; i < MAX_TRANSFERS_PER_TICK; i++)
        {
            final Entry entry = pending.poll();
            if (entry == null)
            {
                return;
            }
            if (entry.state != Entry.PENDING)
            {
                continue; // cancelled before it reached the wheel
            }
            // the tick at or after the deadline, and never one already passed
            final long dueTick = Math.max(tick, (entry.deadlineNanos - startNanos + TICK_NANOS - 1) / TICK_NANOS);
            entry.rounds = (dueTick - tick) / WHEEL_SIZE;
            appendTo(entry, (int)(dueTick & MASK));
        }
    }

    private void expire(final long now)
    {
        final int bucket = (int)(tick & MASK);
        Entry entry = heads[bucket];
        while (entry != null)
        {
            final Entry next = entry.next;
            if (entry.rounds <= 0 && entry.deadlineNanos - now <= 0)
            {
                unlink(entry);
                if (entry.expire())
                {
                    try
                    {
                        entry.task.run();
                    }
                    catch (final Throwable t)
                    {
                        TASK_FAILURES.log("deadline task", "a deadline task threw", t);
                    }
                }
            }
            else if (entry.rounds > 0)
            {
                entry.rounds--;
            }
            else
            {
                // due this tick but the clock read just before it: move it to the next tick's bucket
                unlink(entry);
                appendTo(entry, (bucket + 1) & MASK);
            }
            entry = next;
        }
    }

    private void appendTo(final Entry entry, final int bucket)
    {
        entry.bucket = bucket;
        entry.next = null;
        entry.previous = tails[bucket];
        if (tails[bucket] == null)
        {
            heads[bucket] = entry;
        }
        else
        {
            tails[bucket].next = entry;
        }
        tails[bucket] = entry;
        bucketed++;
    }

    private void unlink(final Entry entry)
    {
        final int bucket = entry.bucket;
        if (entry.previous == null)
        {
            heads[bucket] = entry.next;
        }
        else
        {
            entry.previous.next = entry.next;
        }
        if (entry.next == null)
        {
            tails[bucket] = entry.previous;
        }
        else
        {
            entry.next.previous = entry.previous;
        }
        entry.previous = null;
        entry.next = null;
        entry.bucket = -1;
        bucketed--;
    }

    /**
     * @return entries in the wheel (for tests).
     */
    long bucketed()
    {
        return bucketed;
    }

    /** One scheduled task. */
    private static final class Entry implements Disposable
    {
        static final int PENDING = 0;
        static final int CANCELLED = 1;
        static final int EXPIRED = 2;
        private static final AtomicIntegerFieldUpdater<Entry> STATE =
            AtomicIntegerFieldUpdater.newUpdater(Entry.class, "state");

        final DeadlineTimer owner;
        final Runnable task;
        final long deadlineNanos;
        volatile int state;
        // timer thread only
        long rounds;
        int bucket = -1;
        Entry next;
        Entry previous;

        Entry(final DeadlineTimer owner, final Runnable task, final long deadlineNanos)
        {
            this.owner = owner;
            this.task = task;
            this.deadlineNanos = deadlineNanos;
        }

        boolean expire()
        {
            return STATE.compareAndSet(this, PENDING, EXPIRED);
        }

        @Override
        public void dispose()
        {
            if (STATE.compareAndSet(this, PENDING, CANCELLED))
            {
                owner.cancelled.offer(this);
            }
        }

        @Override
        public boolean isDisposed()
        {
            return state != PENDING;
        }
    }
}
