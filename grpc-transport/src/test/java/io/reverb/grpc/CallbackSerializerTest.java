package io.reverb.grpc;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A stream's callbacks run one at a time, in the order each thread submitted them: a task submitted from within a
 * running one waits in the serializer's slot (or, once the slot was taken, its queue) and runs after it, on the same
 * thread; tasks submitted from several threads never overlap and keep each thread's order.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CallbackSerializerTest
{
    @Test
    void tasksSubmittedFromATaskShouldRunAfterItInOrder()
    {
        final CallbackSerializer serializer = new CallbackSerializer();
        final List<String> ran = new ArrayList<>();
        serializer.execute(() ->
        {
            ran.add("first");
            // the first waits in the slot, the next ones in the queue made for them, the last after the queue exists
            serializer.execute(() ->
            {
                ran.add("second");
                serializer.execute(() -> ran.add("fifth"));
            });
            serializer.execute(() -> ran.add("third"));
            serializer.execute(() -> ran.add("fourth"));
            ran.add("first, end");
        });
        serializer.execute(() -> ran.add("sixth"));
        assertThat(ran).containsExactly("first", "first, end", "second", "third", "fourth", "fifth", "sixth");
    }

    @Test
    void aTaskThatThrowsShouldNotStopTheOnesAfterIt()
    {
        final CallbackSerializer serializer = new CallbackSerializer();
        final List<String> ran = new ArrayList<>();
        serializer.execute(() ->
        {
            serializer.execute(() ->
            {
                throw new IllegalStateException("a listener's bug (logged)");
            });
            serializer.execute(() -> ran.add("after"));
        });
        assertThat(ran).containsExactly("after");
    }

    @Test
    void tasksFromTwoThreadsShouldNeverOverlapAndKeepEachThreadsOrder() throws Exception
    {
        final int perThread = 20_000;
        final CallbackSerializer serializer = new CallbackSerializer();
        final AtomicInteger running = new AtomicInteger();
        final AtomicInteger overlaps = new AtomicInteger();
        final int[] last = {-1, -1};
        final AtomicInteger outOfOrder = new AtomicInteger();
        final CountDownLatch go = new CountDownLatch(1);
        final Thread[] threads = new Thread[2];
        for (int t = 0; t < threads.length; t++)
        {
            final int thread = t;
            threads[t] = new Thread(() ->
            {
                try
                {
                    go.await();
                }
                catch (final InterruptedException e)
                {
                    return;
                }
                for (int i = 0; i < perThread; i++)
                {
                    final int n = i;
                    serializer.execute(() ->
                    {
                        if (running.incrementAndGet() != 1)
                        {
                            overlaps.incrementAndGet();
                        }
                        // fields of the serializer's tasks need no lock: one runs at a time
                        if (last[thread] != n - 1)
                        {
                            outOfOrder.incrementAndGet();
                        }
                        last[thread] = n;
                        if (n % 3 == 0)
                        {
                            serializer.execute(() -> running.get()); // nested: queued behind this one
                        }
                        running.decrementAndGet();
                    });
                }
            });
            threads[t].start();
        }
        go.countDown();
        for (final Thread t : threads)
        {
            t.join();
        }
        final CountDownLatch drained = new CountDownLatch(1);
        serializer.execute(drained::countDown);
        assertThat(drained.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(overlaps.get()).isZero();
        assertThat(outOfOrder.get()).isZero();
        assertThat(last).containsExactly(perThread - 1, perThread - 1);
    }
}
