package io.reverb.grpc;

import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

import java.io.InputStream;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;

/**
 * The messages one side of a grpc-java stream writes, as the Reactive Streams publisher rpc-core's call consumes:
 * rpc-core requests exactly as far as the peer's REQUEST_N allow, so {@link #isReady()} is grpc-java's
 * {@code isReady()} and a rise of demand is its {@code onReady()}. grpc-java lets an application write past
 * {@code isReady()}; those messages wait here (as they wait in Netty's buffers), bounded by the application.
 *
 * <p>One subscriber; offer/complete/fail from any thread (grpc-java serializes them per stream). A message offered
 * while the consumer's demand covers it and nothing waits goes to it at once; the queue exists only once a message
 * has had to wait (a unary response never does).
 */
final class OutboundMessages implements Publisher<InputStream>, Subscription
{
    /** What the stream learns from its consumer. */
    interface Events
    {
        /** Demand rose: grpc-java's {@code onReady()}. */
        void onDemand();

        /** The consumer cancelled (the call ended from the other side). */
        void onCancel();

        /** The terminal signal went out. */
        void onTerminated();
    }

    /** Messages waiting for demand: created by the first that has to wait. */
    private volatile Queue<InputStream> queue;
    private static final AtomicIntegerFieldUpdater<OutboundMessages> WIP =
        AtomicIntegerFieldUpdater.newUpdater(OutboundMessages.class, "wip");
    private static final AtomicLongFieldUpdater<OutboundMessages> REQUESTED =
        AtomicLongFieldUpdater.newUpdater(OutboundMessages.class, "requested");
    private static final AtomicIntegerFieldUpdater<OutboundMessages> QUEUED =
        AtomicIntegerFieldUpdater.newUpdater(OutboundMessages.class, "queued");

    private volatile int wip;
    private volatile long requested;
    private volatile int queued;
    private final Events events;
    private volatile Subscriber<? super InputStream> actual;
    private volatile boolean done;
    private volatile Throwable error;
    private volatile boolean cancelled;
    private boolean terminated;

    OutboundMessages(final Events events)
    {
        this.events = events;
    }

    @Override
    public void subscribe(final Subscriber<? super InputStream> subscriber)
    {
        if (actual != null)
        {
            subscriber.onSubscribe(this);
            subscriber.onError(new IllegalStateException("grpc stream messages can be subscribed once"));
            return;
        }
        actual = subscriber;
        subscriber.onSubscribe(this);
        drain();
    }

    /**
     * @param payload a message to send.
     */
    void offer(final InputStream payload)
    {
        if (done || cancelled)
        {
            return;
        }
        QUEUED.incrementAndGet(this);
        if (WIP.compareAndSet(this, 0, 1))
        {
            // nothing drains: the message goes to the consumer now if nothing waits before it and demand covers it
            final Subscriber<? super InputStream> s = actual;
            final Queue<InputStream> q = queue;
            if (s != null && !terminated && !cancelled && requested > 0 && (q == null || q.isEmpty()))
            {
                QUEUED.decrementAndGet(this);
                s.onNext(payload);
                if (requested != Long.MAX_VALUE)
                {
                    REQUESTED.decrementAndGet(this);
                }
            }
            else
            {
                queue().offer(payload);
            }
            drainLoop(WIP.decrementAndGet(this));
            return;
        }
        queue().offer(payload);
        drain();
    }

    private Queue<InputStream> queue()
    {
        Queue<InputStream> q = queue;
        if (q == null)
        {
            synchronized (this)
            {
                q = queue;
                if (q == null)
                {
                    queue = q = new ConcurrentLinkedQueue<>();
                }
            }
        }
        return q;
    }

    /** No more messages. */
    void complete()
    {
        done = true;
        drain();
    }

    /**
     * @param t ends the messages with this error (the call's status).
     */
    void fail(final Throwable t)
    {
        error = t;
        done = true;
        drain();
    }

    /**
     * @return true if the consumer asked for more than is queued.
     */
    boolean isReady()
    {
        return !cancelled && !done && requested > queued;
    }

    /**
     * @return true once the consumer cancelled.
     */
    boolean isCancelled()
    {
        return cancelled;
    }

    @Override
    public void request(final long n)
    {
        if (n <= 0)
        {
            return;
        }
        long current;
        long next;
        do
        {
            current = requested;
            next = current + n < 0 ? Long.MAX_VALUE : current + n;
        }
        while (!REQUESTED.compareAndSet(this, current, next));
        drain();
        if (!cancelled && !done)
        {
            events.onDemand();
        }
    }

    @Override
    public void cancel()
    {
        if (!cancelled)
        {
            cancelled = true;
            events.onCancel();
            drain();
        }
    }

    private void drain()
    {
        if (WIP.getAndIncrement(this) != 0)
        {
            return;
        }
        drainLoop(1);
    }

    /**
     * @param missed the drain passes owed (0: none, the caller leaves).
     */
    private void drainLoop(final int missed)
    {
        int owed = missed;
        while (owed != 0)
        {
            final Subscriber<? super InputStream> s = actual;
            final Queue<InputStream> queue = this.queue;
            if (s != null && !terminated)
            {
                if (cancelled)
                {
                    if (queue != null)
                    {
                        queue.clear();
                    }
                    terminated = true;
                }
                else
                {
                    long r = requested;
                    long emitted = 0;
                    while (emitted != r)
                    {
                        final boolean d = done;
                        final InputStream p = queue == null ? null : queue.poll();
                        if (p == null)
                        {
                            if (d)
                            {
                                terminate(s);
                            }
                            break;
                        }
                        QUEUED.decrementAndGet(this);
                        s.onNext(p);
                        emitted++;
                        if (cancelled)
                        {
                            break;
                        }
                    }
                    if (emitted == r && !terminated && done && (queue == null || queue.isEmpty()))
                    {
                        terminate(s);
                    }
                    if (emitted != 0 && r != Long.MAX_VALUE)
                    {
                        REQUESTED.addAndGet(this, -emitted);
                    }
                }
            }
            owed = WIP.addAndGet(this, -owed);
        }
    }

    private void terminate(final Subscriber<? super InputStream> s)
    {
        terminated = true;
        final Throwable t = error;
        if (t != null)
        {
            s.onError(t);
        }
        else
        {
            s.onComplete();
        }
        events.onTerminated();
    }
}
