package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/**
 * The deadline wheel: tasks run once, never before their delay; cancelled ones never run and leave the wheel.
 */
class DeadlineTimerTest
{
    private final DeadlineTimer timer = new DeadlineTimer("test-deadline-timer");

    @Test
    void shouldRunEachTaskOnceNeverEarly() throws InterruptedException
    {
        final int n = 200;
        final CountDownLatch done = new CountDownLatch(n);
        final AtomicInteger early = new AtomicInteger();
        final AtomicInteger runs = new AtomicInteger();
        for (int i = 0; i < n; i++)
        {
            final long delay = TimeUnit.MICROSECONDS.toNanos(100L * (i % 50)); // 0 to 4.9 ms, several per tick
            final long due = System.nanoTime() + delay;
            timer.schedule(() ->
            {
                if (System.nanoTime() - due < 0)
                {
                    early.incrementAndGet();
                }
                runs.incrementAndGet();
                done.countDown();
            }, delay);
        }
        assertThat(done.await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(early.get()).isZero();
        assertThat(runs.get()).isEqualTo(n);
    }

    @Test
    void shouldNeverRunACancelledTaskAndDropItFromTheWheel() throws InterruptedException
    {
        // A task that runs after its dispose() returned is the bug. One that ran before it was disposed is not (a
        // 2-core machine under load can deschedule this thread for longer than the shortest delay), so each task
        // checks a flag set only once its own dispose() has returned.
        final AtomicInteger cancelledRan = new AtomicInteger();
        final List<Disposable> handles = new ArrayList<>();
        final List<AtomicBoolean> disposed = new ArrayList<>();
        for (int i = 0; i < 1000; i++)
        {
            final AtomicBoolean flag = new AtomicBoolean();
            disposed.add(flag);
            handles.add(timer.schedule(() ->
            {
                if (flag.get())
                {
                    cancelledRan.incrementAndGet();
                }
            }, TimeUnit.MILLISECONDS.toNanos(30 + i % 700)));
        }
        for (int i = 0; i < handles.size(); i++)
        {
            handles.get(i).dispose();
            disposed.get(i).set(true);
        }
        assertThat(handles).allMatch(Disposable::isDisposed);
        // a task scheduled after the cancelled ones, due after all of them, runs: by then none of them did
        final CountDownLatch after = new CountDownLatch(1);
        timer.schedule(after::countDown, TimeUnit.MILLISECONDS.toNanos(800));
        assertThat(after.await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(cancelledRan.get()).isZero();
        final long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (timer.bucketed() != 0 && System.nanoTime() - end < 0)
        {
            Thread.sleep(1);
        }
        assertThat(timer.bucketed()).as("cancelled entries left the wheel").isZero();
    }

    @Test
    void shouldRunTasksBeyondOneTurnOfTheWheelAfterTheirDelay() throws InterruptedException
    {
        final CountDownLatch done = new CountDownLatch(1);
        final long due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(600); // more than 512 ticks
        final AtomicLong lateness = new AtomicLong(-1);
        timer.schedule(() ->
        {
            lateness.set(System.nanoTime() - due);
            done.countDown();
        }, TimeUnit.MILLISECONDS.toNanos(600));
        assertThat(done.await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(lateness.get()).isNotNegative();
    }

    @Test
    void shouldDisposeAfterRunningWithoutEffect() throws InterruptedException
    {
        final CountDownLatch ran = new CountDownLatch(1);
        final Disposable handle = timer.schedule(ran::countDown, 0);
        assertThat(ran.await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(handle.isDisposed()).as("an expired task reads as disposed").isTrue();
        handle.dispose();
    }
}
