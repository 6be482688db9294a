package io.reverb.rdma.provider.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The wire lock under contention from several threads at once, all through {@link TcpWireLock#lock()} (which parks
 * one waiter at a time) and {@link TcpWireLock#lockYielding()}: mutual exclusion (a plain counter incremented under
 * the lock comes out exact) and no lost wake-up (every thread finishes; a parked waiter nobody unparks would hang).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpWireLockTest
{
    private static final int THREADS = 4;
    private static final int ROUNDS = 20_000;

    private long counter;

    @Test
    void shouldExcludeAndWakeEveryWaiterWhenSeveralThreadsLockAtOnce() throws Exception
    {
        final TcpWireLock lock = new TcpWireLock();
        final List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++)
        {
            final boolean yielding = t == THREADS - 1;
            threads.add(new Thread(() ->
            {
                for (int i = 0; i < ROUNDS; i++)
                {
                    if (yielding)
                    {
                        lock.lockYielding();
                    }
                    else
                    {
                        lock.lock();
                    }
                    try
                    {
                        // Reentrant: the holder may take it again.
                        assertThat(lock.tryLock()).isTrue();
                        counter++;
                        lock.unlock();
                    }
                    finally
                    {
                        lock.unlock();
                    }
                }
            }, "locker-" + t));
        }
        threads.forEach(Thread::start);
        for (final Thread thread : threads)
        {
            thread.join(TimeUnit.SECONDS.toMillis(100));
            assertThat(thread.isAlive()).as(thread.getName() + " finished").isFalse();
        }
        assertThat(counter).isEqualTo((long)THREADS * ROUNDS);
        assertThat(lock.tryLock()).as("free at the end").isTrue();
    }
}
