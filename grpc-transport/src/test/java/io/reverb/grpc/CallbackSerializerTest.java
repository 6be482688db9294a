package io.reverb.grpc;

import io.reverb.common.LogLimiter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

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

    @Test
    void aCallbackFailingEveryTimeShouldLogABurstThenNothingWithinTheInterval()
    {
        final Logger logger = Logger.getLogger(CallbackSerializer.class.getName());
        final AtomicInteger logged = new AtomicInteger();
        final Handler counting = new Handler()
        {
            @Override
            public void publish(final LogRecord record)
            {
                logged.incrementAndGet();
            }

            @Override
            public void flush()
            {
            }

            @Override
            public void close()
            {
            }
        };
        logger.addHandler(counting);
        final boolean parents = logger.getUseParentHandlers();
        logger.setUseParentHandlers(false);
        try
        {
            final CallbackSerializer serializer = new CallbackSerializer();
            final long offeredBefore = CallbackSerializer.FAILURES.offered();
            final AtomicInteger ran = new AtomicInteger();
            for (int i = 0; i < 50; i++)
            {
                serializer.execute(() ->
                {
                    ran.incrementAndGet();
                    throw new IllegalStateException("listener bug");
                });
            }
            assertThat(ran).hasValue(50); // a failing callback does not stop the next ones
            assertThat(CallbackSerializer.FAILURES.offered() - offeredBefore).isEqualTo(50);
            // the burst, and at most one more line should the interval have turned meanwhile
            assertThat(logged.get()).isBetween(0, LogLimiter.BURST + 1);
        }
        finally
        {
            logger.removeHandler(counting);
            logger.setUseParentHandlers(parents);
        }
    }
}
