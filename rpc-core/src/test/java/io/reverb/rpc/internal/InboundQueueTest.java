package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rpc.Metadata;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import java.util.ArrayList;
import java.util.List;
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
}
