package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rpc.Metadata;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The queue, demand and REQUEST_N credit shared by streaming calls on both sides. */
class InboundQueueTest
{
    private final List<String> signals = new ArrayList<>();
    private final InboundQueue.Sink<String> sink = new InboundQueue.Sink<>()
    {
        @Override
        public void onValue(final String value)
        {
            signals.add(value);
        }

        @Override
        public void onEnd(final Status status, final Metadata trailers, final boolean silent)
        {
            signals.add((silent ? "silent " : "end ") + status.code());
        }
    };

    @Test
    void shouldDeliverOnlyWithinDemandThenTheEndAfterTheQueuedValues()
    {
        final InboundQueue<String> queue = new InboundQueue<>(sink, null, 0, true);
        queue.offer("a");
        queue.offer("b");
        queue.end(Status.OK, null, false, false);
        assertThat(signals).isEmpty();
        queue.request(1);
        assertThat(signals).containsExactly("a");
        queue.request(5);
        assertThat(signals).containsExactly("a", "b", "end OK");
    }

    @Test
    void shouldDeliverAValueOfferedFromInsideTheSinkAfterTheOneBeingDeliveredAndWithinDemand()
    {
        final int[] depth = new int[1];
        final int[] maxDepth = new int[1];
        final InboundQueue<String>[] holder = new InboundQueue[1];
        final InboundQueue<String> queue = new InboundQueue<>(new InboundQueue.Sink<>()
        {
            @Override
            public void onValue(final String value)
            {
                depth[0]++;
                maxDepth[0] = Math.max(maxDepth[0], depth[0]);
                signals.add(value);
                if (value.equals("a"))
                {
                    holder[0].offer("b"); // e.g. a transport that delivers the next message re-entrantly
                    holder[0].offer("c");
                }
                depth[0]--;
            }

            @Override
            public void onEnd(final Status status, final Metadata trailers, final boolean silent)
            {
                signals.add("end " + status.code());
            }
        }, null, 0, true);
        holder[0] = queue;
        queue.request(2);
        queue.offer("a");
        assertThat(signals).as("within the demand of 2, in order").containsExactly("a", "b");
        assertThat(maxDepth[0]).as("never delivered inside another delivery").isEqualTo(1);
        queue.end(Status.OK, null, false, false);
        assertThat(queue.offer("d")).as("dropped after the end").isFalse();
        queue.request(1);
        assertThat(signals).containsExactly("a", "b", "c", "end OK");
    }

    @Test
    void shouldGrantTheInitialDemandOnceAndThenOnlyWhatIsAskedBeyondIt()
    {
        final InboundQueue<String> queue = new InboundQueue<>(sink, null, 0, true);
        queue.request(3);
        assertThat(queue.grantInitial()).isEqualTo(3);
        assertThat(queue.request(2)).as("grants not open yet").isZero();
        assertThat(queue.openGrants()).as("asked while the CALL was on its way").isEqualTo(2);
        assertThat(queue.request(4)).isEqualTo(4);
        queue.request(Long.MAX_VALUE);
        assertThat(queue.request(1)).isZero();
    }

    @Test
    void shouldLetTheFirstMessageThroughWithoutAskingAndStopGrantingOnceEnded()
    {
        final InboundQueue<String> queue = new InboundQueue<>(sink, null, 1, true);
        queue.openGrants();
        assertThat(queue.request(1)).as("the peer may send one before it is asked").isZero();
        assertThat(queue.request(1)).isEqualTo(1);
        queue.end(Status.OK, null, false, false);
        assertThat(queue.request(10)).isZero();
    }

    @Test
    void shouldDropQueuedValuesWhenAFailureOverridesANormalEndNotYetDelivered()
    {
        final InboundQueue<String> queue = new InboundQueue<>(sink, null, 0, true);
        queue.offer("a");
        queue.end(Status.OK, null, false, false);
        assertThat(queue.end(Status.CANCELLED, null, true, false)).isTrue();
        assertThat(signals).containsExactly("end " + StatusCode.CANCELLED);
        assertThat(queue.end(Status.INTERNAL, null, true, false)).as("delivered: the end is final").isFalse();
        assertThat(queue.offer("late")).isFalse();
    }

    @Test
    void shouldHoldEverythingUntilTheSubscriberIsReadyAndSignalNothingAfterStop()
    {
        final InboundQueue<String> queue = new InboundQueue<>(sink, null, 0, false);
        queue.request(10);
        queue.offer("a");
        assertThat(signals).isEmpty();
        queue.ready();
        assertThat(signals).containsExactly("a");
        queue.stop();
        queue.offer("b");
        queue.end(Status.OK, null, false, false);
        assertThat(signals).containsExactly("a");
    }

    @Test
    void shouldEndSilentlyAtOnceWhenTheSubscriberCancels()
    {
        final InboundQueue<String> queue = new InboundQueue<>(sink, null, 0, true);
        queue.offer("a");
        queue.end(Status.CANCELLED, null, true, true);
        assertThat(signals).containsExactly("silent " + StatusCode.CANCELLED);
    }

    /**
     * The offering thread delivers without the monitor while other threads ask for more, end the stream or stop it:
     * whatever the interleaving, values arrive in order, one delivery at a time, never beyond the demand asked, and
     * the end exactly once after them (nothing after it). Counted over many races, not timed.
     */
    @Test
    void shouldKeepOrderDemandAndOneEndWhenOtherThreadsAskEndOrStopWhileValuesArrive() throws Exception
    {
        final int races = 300;
        final ThreadLocalRandom random = ThreadLocalRandom.current(); // this thread's
        for (int race = 0; race < races; race++)
        {
            final int values = 200 + random.nextInt(300);
            final int ending = random.nextInt(3); // 0: normal end, 1: a failure dropping what waits, 2: stop
            final RaceSink raceSink = new RaceSink();
            final InboundQueue<Integer> queue = new InboundQueue<>(raceSink, null, 0, random.nextBoolean());
            raceSink.queue = queue;
            final CountDownLatch start = new CountDownLatch(1);
            final Thread offerer = new Thread(() ->
            {
                await(start);
                for (int i = 0; i < values; i++)
                {
                    queue.offer(i);
                }
                if (ending == 0)
                {
                    queue.end(Status.OK, null, false, false);
                }
            });
            final Thread asker = new Thread(() ->
            {
                await(start);
                queue.ready();
                long asked = 0;
                while (asked < values + 10)
                {
                    final long n = 1 + ThreadLocalRandom.current().nextInt(7);
                    raceSink.asked.addAndGet(n);
                    queue.request(n);
                    asked += n;
                    Thread.yield();
                }
            });
            final Thread ender = new Thread(() ->
            {
                await(start);
                for (int spin = ThreadLocalRandom.current().nextInt(5_000); spin > 0; spin--)
                {
                    Thread.onSpinWait();
                }
                if (ending == 1)
                {
                    queue.end(Status.CANCELLED, null, true, false);
                }
                else if (ending == 2)
                {
                    queue.stop();
                }
            });
            offerer.start();
            asker.start();
            ender.start();
            start.countDown();
            offerer.join(30_000);
            asker.join(30_000);
            ender.join(30_000);
            if (ending == 2)
            {
                queue.end(Status.OK, null, false, true); // after a stop nothing more is signalled, not even this
            }
            assertThat(raceSink.failure).as("race %d (ending %d)", race, ending).isNull();
            assertThat(raceSink.ends).as("ends, race %d (ending %d)", race, ending).isEqualTo(ending == 2 ? 0 : 1);
            if (ending == 0)
            {
                assertThat(raceSink.next).as("a normal end comes after every value, race %d", race).isEqualTo(values);
            }
        }
    }

    private static void await(final CountDownLatch latch)
    {
        try
        {
            latch.await();
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
    }

    /** Checks every signal as it arrives; the first violation is kept. */
    private static final class RaceSink implements InboundQueue.Sink<Integer>
    {
        final AtomicLong asked = new AtomicLong();
        final AtomicInteger inside = new AtomicInteger();
        volatile InboundQueue<Integer> queue;
        volatile String failure;
        volatile int next;
        volatile int ends;

        @Override
        public void onValue(final Integer value)
        {
            enter();
            if (ends != 0)
            {
                fail("value " + value + " after the end");
            }
            if (value != next)
            {
                fail("value " + value + " where " + next + " was due");
            }
            next = value + 1;
            if (next > asked.get())
            {
                fail("value " + value + " beyond the demand asked (" + asked.get() + ")");
            }
            inside.decrementAndGet();
        }

        @Override
        public void onEnd(final Status status, final Metadata trailers, final boolean silent)
        {
            enter();
            ends++;
            if (ends > 1)
            {
                fail("a second end: " + status);
            }
            inside.decrementAndGet();
        }

        private void enter()
        {
            if (inside.incrementAndGet() != 1)
            {
                fail("two deliveries at once");
            }
        }

        private void fail(final String what)
        {
            if (failure == null)
            {
                failure = what;
            }
        }
    }
}
