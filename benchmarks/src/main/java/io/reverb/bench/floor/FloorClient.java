package io.reverb.bench.floor;

import com.google.protobuf.BytesValue;
import io.reverb.bench.target.CallObserver;
import io.reverb.bench.target.EchoClient;
import org.agrona.DirectBuffer;

import java.io.IOException;
import java.util.Arrays;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * What the floor clients share: calls run on numbered lanes (a message is the lane's number, 4 bytes, then the
 * payload; the server echoes it whole), a reply is routed to its lane by that number, blocking calls borrow a lane
 * and give its number back, and a failure ends every call in flight. The subclasses only send.
 */
abstract class FloorClient implements EchoClient
{
    /** gRPC's INTERNAL, the status of a call whose reply is not the echo of its request. */
    static final int INTERNAL = 13;
    private final String name;
    private final AtomicInteger lanes = new AtomicInteger();
    // numbers of blocking calls' lanes, taken again by later ones (a lane per blockingEcho would run out)
    private final Queue<Integer> freeNumbers = new ConcurrentLinkedQueue<>();
    private final AtomicReferenceArray<Lane> byNumber = new AtomicReferenceArray<>(FloorTargets.MAX_LANES);
    /**
     * Compare each reply's bytes with the request's (tests): a reply of the right length with other bytes then ends
     * its call with an error. Off in runs, where the floor must cost what the transport costs and no more.
     */
    volatile boolean checkBytes;
    /**
     * Copy each reply's payload into its lane's own array before the call completes ({@link FloorTargets#READ_REPLIES}),
     * as an RPC's client does with every response. Set once, before the first call.
     */
    volatile boolean readReplies;

    /** @param name the target's name in messages ("floor", "floor+aeron"). */
    FloorClient(final String name)
    {
        this.name = name;
    }

    /**
     * @param number   the lane's number.
     * @param observer who hears of its calls; null for a lane whose messages are not calls (a hello).
     * @return a new lane.
     */
    abstract Lane newLane(int number, CallObserver observer);

    @Override
    public final BytesValue blockingEcho(final BytesValue request)
    {
        final CountDownLatch done = new CountDownLatch(1);
        final Throwable[] error = new Throwable[1];
        final Lane lane = (Lane)newCaller(new Blocking(done, error));
        try
        {
            lane.echo(request);
            if (!done.await(30, TimeUnit.SECONDS))
            {
                throw new IllegalStateException("no echo from the " + name + " server within 30 s");
            }
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the " + name + " echo", ex);
        }
        finally
        {
            forget(lane);
            if (done.getCount() == 0)
            {
                freeNumbers.add(lane.number); // ended: no late reply can reach the next user of the number
            }
        }
        if (error[0] != null)
        {
            throw new IllegalStateException(name + " echo failed: " + error[0], error[0]);
        }
        return request;
    }

    @Override
    public final long blockingStream(final BytesValue request)
    {
        throw FloorTargets.unaryOnly();
    }

    @Override
    public final Caller newCaller(final CallObserver observer)
    {
        final Integer free = observer instanceof Blocking ? freeNumbers.poll() : null;
        final int number = free != null ? free : lanes.getAndIncrement();
        if (number >= FloorTargets.MAX_LANES)
        {
            throw new IllegalArgumentException("the floor serves at most " + FloorTargets.MAX_LANES + " lanes (-c)");
        }
        final Lane lane = newLane(number, observer);
        byNumber.set(number, lane);
        return lane;
    }

    /** @param lane a lane whose replies nobody waits for any more. */
    final void forget(final Lane lane)
    {
        byNumber.set(lane.number, null);
    }

    /**
     * A reply: ends the call of the lane it names, if it is the echo of that lane's message (anything else is not
     * an answer to a call of ours, whose call then fails with the connection).
     */
    final void onReply(final DirectBuffer buffer, final int offset, final int length)
    {
        if (length < EngineFloorTarget.HEADER)
        {
            return;
        }
        final int number = buffer.getInt(offset);
        final Lane lane = number >= 0 && number < FloorTargets.MAX_LANES ? byNumber.get(number) : null;
        if (lane != null && length == EngineFloorTarget.HEADER + lane.sent.length)
        {
            if (readReplies)
            {
                lane.keep(buffer, offset + EngineFloorTarget.HEADER, lane.sent.length);
            }
            if (checkBytes && !(readReplies ? Arrays.equals(lane.received, 0, lane.sent.length, lane.sent, 0,
                lane.sent.length) : sameBytes(buffer, offset + EngineFloorTarget.HEADER, lane.sent)))
            {
                lane.complete(INTERNAL, new IOException(name + ": a reply's bytes differ from its request's"));
                return;
            }
            lane.complete(0, null);
        }
    }

    private static boolean sameBytes(final DirectBuffer buffer, final int offset, final byte[] expected)
    {
        for (int i = 0; i < expected.length; i++)
        {
            if (buffer.getByte(offset + i) != expected[i])
            {
                return false;
            }
        }
        return true;
    }

    /** @param cause ends every call in flight UNAVAILABLE with it. */
    final void failLanes(final Throwable cause)
    {
        for (int i = 0; i < FloorTargets.MAX_LANES; i++)
        {
            final Lane lane = byNumber.get(i);
            if (lane != null)
            {
                lane.complete(FloorTargets.UNAVAILABLE, cause);
            }
        }
    }

    /** The observer of one blocking call. */
    private static final class Blocking implements CallObserver
    {
        private final CountDownLatch done;
        private final Throwable[] error;

        Blocking(final CountDownLatch done, final Throwable[] error)
        {
            this.done = done;
            this.error = error;
        }

        @Override
        public void onMessage()
        {
        }

        @Override
        public void onClose(final int statusCode, final Throwable cause)
        {
            error[0] = statusCode == 0 ? null : cause;
            done.countDown();
        }
    }

    /** One lane of sequential calls: one message in flight at most. */
    abstract static class Lane implements Caller
    {
        final int number;
        final CallObserver observer;
        // true from the send until the reply or the failure: set by the sender, cleared by the poller
        final AtomicBoolean outstanding = new AtomicBoolean();
        BytesValue request;
        byte[] sent = new byte[0];
        /** The payload of the last reply, when the client reads replies: reused, as a receive buffer would be. */
        byte[] received = new byte[0];

        Lane(final int number, final CallObserver observer)
        {
            this.number = number;
            this.observer = observer;
        }

        @Override
        public final void echo(final BytesValue message)
        {
            if (message != request)
            {
                // The load generator sends the same request object on a lane: its bytes are taken once. A payload
                // the target refuses (prepare throws) leaves no request behind, so it is refused again next time.
                request = null;
                sent = message.getValue().toByteArray();
                prepare();
                request = message;
            }
            outstanding.set(true);
            send();
        }

        @Override
        public final void stream(final BytesValue message)
        {
            throw FloorTargets.unaryOnly();
        }

        /**
         * A new payload is in {@link #sent}: whatever the lane builds from it once is built now.
         *
         * @throws IllegalArgumentException if the target cannot carry it (the call is then not made).
         */
        void prepare()
        {
        }

        /** Sends {@link #sent} behind the lane's number, or ends the call with why it cannot. */
        abstract void send();

        /** Copies a reply's payload into {@link #received}, growing it when a longer one comes. */
        final void keep(final DirectBuffer buffer, final int offset, final int length)
        {
            if (received.length < length)
            {
                received = new byte[length];
            }
            buffer.getBytes(offset, received, 0, length);
        }

        final void complete(final int status, final Throwable error)
        {
            if (observer != null && outstanding.compareAndSet(true, false))
            {
                if (status == 0)
                {
                    observer.onMessage();
                }
                observer.onClose(status, error);
            }
        }
    }
}
