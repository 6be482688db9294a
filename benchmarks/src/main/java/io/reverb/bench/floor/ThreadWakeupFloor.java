package io.reverb.bench.floor;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;

/**
 * The thread wake-up floor of a machine: a park/unpark round trip between two threads of one JVM, which bounds
 * what any mode that sleeps between messages (the engine's EVENT mode, grpc-java's executor hand-offs) can do on
 * it. A benchmark tool, not a test.
 *
 * <p>Usage: {@code java -cp reverb-bench.jar io.reverb.bench.floor.ThreadWakeupFloor [ROUNDS]} (default 20,000)
 * prints p50 and p99 of the round trip.
 */
public final class ThreadWakeupFloor
{
    private static volatile int turn;
    private static volatile Thread first;
    private static volatile Thread second;

    private ThreadWakeupFloor()
    {
    }

    /**
     * @param args {@code [ROUNDS]}.
     * @throws InterruptedException if interrupted while joining the second thread.
     */
    public static void main(final String[] args) throws InterruptedException
    {
        final int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
        final long[] nanos = new long[rounds];
        first = Thread.currentThread();
        second = new Thread(() ->
        {
            for (int i = 0; i < rounds; i++)
            {
                while (turn != 1)
                {
                    LockSupport.park();
                }
                turn = 0;
                LockSupport.unpark(first);
            }
        }, "wakeup-floor-second");
        second.start();
        for (int i = 0; i < rounds; i++)
        {
            final long start = System.nanoTime();
            turn = 1;
            LockSupport.unpark(second);
            while (turn != 0)
            {
                LockSupport.park();
            }
            nanos[i] = System.nanoTime() - start;
        }
        second.join();
        Arrays.sort(nanos);
        System.out.printf(Locale.ROOT, "park/unpark round trip: p50 %.1f us p99 %.1f us%n",
            nanos[rounds / 2] / 1e3, nanos[rounds * 99 / 100] / 1e3);
    }
}
