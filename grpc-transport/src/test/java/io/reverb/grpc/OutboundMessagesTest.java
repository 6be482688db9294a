package io.reverb.grpc;

import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The messages one side of a grpc-java stream writes reach rpc-core's subscriber only as far as its demand goes, in
 * the order written, whether a message goes straight through (demand, nothing waiting) or waits for demand; the end
 * follows the last message; isReady and onReady follow the demand.
 */
class OutboundMessagesTest
{
    private final Events events = new Events();
    private final OutboundMessages messages = new OutboundMessages(events);
    private final Recorder consumer = new Recorder();

    @Test
    void aMessageWrittenWithinTheDemandShouldGoStraightToTheConsumer()
    {
        messages.subscribe(consumer);
        consumer.subscription.request(1);
        assertThat(messages.isReady()).isTrue();
        assertThat(events.demand).isEqualTo(1);
        messages.offer(payload(1));
        assertThat(consumer.received).containsExactly(1);
        assertThat(messages.isReady()).as("demand used up").isFalse();
        messages.complete();
        assertThat(consumer.completed).isTrue();
        assertThat(events.terminated).isEqualTo(1);
    }

    @Test
    void messagesWrittenPastTheDemandShouldWaitAndKeepTheirOrder()
    {
        messages.subscribe(consumer);
        consumer.subscription.request(1);
        for (int i = 1; i <= 5; i++)
        {
            messages.offer(payload(i));
        }
        messages.complete();
        assertThat(consumer.received).containsExactly(1);
        assertThat(consumer.completed).as("the end waits behind the messages").isFalse();
        consumer.subscription.request(2);
        assertThat(consumer.received).containsExactly(1, 2, 3);
        // a message written now (none can be: complete() was called) would be dropped; the rest go on demand
        consumer.subscription.request(10);
        assertThat(consumer.received).containsExactly(1, 2, 3, 4, 5);
        assertThat(consumer.completed).isTrue();
    }

    @Test
    void aMessageWrittenWhileOthersWaitShouldGoBehindThemEvenWithDemand()
    {
        messages.subscribe(consumer);
        messages.offer(payload(1)); // no demand yet: waits
        messages.offer(payload(2));
        assertThat(consumer.received).isEmpty();
        consumer.requestMoreOnEachMessage = true; // each message asks for one more from within onNext
        consumer.subscription.request(1);
        messages.offer(payload(3));
        assertThat(consumer.received).containsExactly(1, 2, 3);
    }

    @Test
    void messagesWrittenBeforeTheConsumerSubscribesShouldWaitForIt()
    {
        messages.offer(payload(1));
        messages.offer(payload(2));
        messages.fail(new IllegalStateException("the status"));
        messages.subscribe(consumer);
        consumer.subscription.request(Long.MAX_VALUE);
        assertThat(consumer.received).containsExactly(1, 2);
        assertThat(consumer.error).hasMessage("the status");
    }

    @Test
    void cancellingShouldDropWaitingMessagesAndTellTheStream()
    {
        messages.subscribe(consumer);
        messages.offer(payload(1));
        consumer.subscription.cancel();
        assertThat(events.cancelled).isEqualTo(1);
        assertThat(messages.isCancelled()).isTrue();
        consumer.subscription.request(5);
        messages.offer(payload(2));
        assertThat(consumer.received).isEmpty();
        assertThat(messages.isReady()).isFalse();
    }

    private static InputStream payload(final int n)
    {
        return Payload.outbound(new ByteArrayInputStream(new byte[] {(byte)n}));
    }

    private static final class Events implements OutboundMessages.Events
    {
        int demand;
        int cancelled;
        int terminated;

        @Override
        public void onDemand()
        {
            demand++;
        }

        @Override
        public void onCancel()
        {
            cancelled++;
        }

        @Override
        public void onTerminated()
        {
            terminated++;
        }
    }

    private static final class Recorder implements Subscriber<InputStream>
    {
        final List<Integer> received = new ArrayList<>();
        Subscription subscription;
        boolean completed;
        Throwable error;
        boolean requestMoreOnEachMessage;

        @Override
        public void onSubscribe(final Subscription s)
        {
            subscription = s;
        }

        @Override
        public void onNext(final InputStream payload)
        {
            try
            {
                received.add(payload.read());
            }
            catch (final IOException e)
            {
                throw new UncheckedIOException(e);
            }
            if (requestMoreOnEachMessage)
            {
                subscription.request(1);
            }
        }

        @Override
        public void onError(final Throwable t)
        {
            error = t;
        }

        @Override
        public void onComplete()
        {
            completed = true;
        }
    }
}
