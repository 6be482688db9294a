package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.Status;
import io.reverb.rpc.TestService;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;

/**
 * A unary call's end is delivered by whichever thread finds it deliverable under the call's monitor (no
 * work-in-progress counter): the subscriber's demand racing the server's STATUS, or a cancel racing the STATUS, from
 * two threads released together, thousands of times. Counted, not timed: every call gets its response and completion
 * exactly once (or, cancelled, nothing or both), never twice, never an error.
 */
class UnaryDeliveryRaceTest
{
    private static final int ROUNDS = 3_000;

    private final ClientTransportImpl channel = TestRuntimes.channel();
    private final ExecutorService threads = Executors.newFixedThreadPool(2);

    @AfterEach
    void stop() throws InterruptedException
    {
        threads.shutdownNow();
        assertThat(threads.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    }

    /** Counts signals; asks for nothing by itself (the test calls request). */
    private static final class Counting implements CoreSubscriber<StringValue>
    {
        final AtomicInteger values = new AtomicInteger();
        final AtomicInteger completions = new AtomicInteger();
        final AtomicInteger errors = new AtomicInteger();

        @Override
        public void onSubscribe(final Subscription s)
        {
        }

        @Override
        public void onNext(final StringValue value)
        {
            values.incrementAndGet();
        }

        @Override
        public void onError(final Throwable t)
        {
            errors.incrementAndGet();
        }

        @Override
        public void onComplete()
        {
            completions.incrementAndGet();
        }
    }

    private UnaryClientCall<StringValue, StringValue> call(final Counting subscriber)
    {
        final UnaryClientCall<StringValue, StringValue> call = new UnaryClientCall<>(channel, TestService.ECHO,
            StringValue.of("hi"), null, null, null, false);
        call.actual = subscriber;
        call.onResponse(StringValue.of("hi")); // the MESSAGE, before its STATUS (same transport message)
        return call;
    }

    private void race(final Runnable first, final Runnable second) throws Exception
    {
        final CountDownLatch go = new CountDownLatch(1);
        final Future<?> a = threads.submit(() ->
        {
            go.await();
            first.run();
            return null;
        });
        final Future<?> b = threads.submit(() ->
        {
            go.await();
            second.run();
            return null;
        });
        go.countDown();
        a.get(10, TimeUnit.SECONDS);
        b.get(10, TimeUnit.SECONDS);
    }

    @Test
    void shouldDeliverResponseAndCompletionOnceWhenDemandRacesTheStatus() throws Exception
    {
        for (int i = 0; i < ROUNDS; i++)
        {
            final Counting subscriber = new Counting();
            final UnaryClientCall<StringValue, StringValue> call = call(subscriber);
            race(() -> call.request(1), () -> call.onStatus(Status.OK, null));
            assertThat(subscriber.values.get()).as("round %d: onNext", i).isEqualTo(1);
            assertThat(subscriber.completions.get()).as("round %d: onComplete", i).isEqualTo(1);
            assertThat(subscriber.errors.get()).as("round %d: onError", i).isZero();
        }
    }

    @Test
    void shouldDeliverBothOrNothingWhenACancelRacesTheStatus() throws Exception
    {
        int delivered = 0;
        for (int i = 0; i < ROUNDS; i++)
        {
            final Counting subscriber = new Counting();
            final UnaryClientCall<StringValue, StringValue> call = call(subscriber);
            call.request(1);
            race(call::cancel, () -> call.onStatus(Status.OK, null));
            assertThat(subscriber.values.get()).as("round %d: onNext", i).isLessThanOrEqualTo(1)
                .isEqualTo(subscriber.completions.get());
            assertThat(subscriber.errors.get()).as("round %d: a cancelled call signals no error", i).isZero();
            delivered += subscriber.completions.get();
        }
        assertThat(delivered).isBetween(0, ROUNDS);
    }

    @Test
    void shouldDeliverOnceWhenTheStatusComesBeforeAnyDemandAndDemandComesTwice()
    {
        final Counting subscriber = new Counting();
        final UnaryClientCall<StringValue, StringValue> call = call(subscriber);
        call.onStatus(Status.OK, null);
        assertThat(subscriber.completions.get()).as("held until asked for").isZero();
        call.request(1);
        call.request(1);
        assertThat(subscriber.values.get()).isEqualTo(1);
        assertThat(subscriber.completions.get()).isEqualTo(1);
    }
}
