package io.reverb.rpc.lb;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RetryPolicy;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.internal.ClientCallHost;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Function;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * A unary call of a {@link BalancedChannel} without interceptors or hedging, the common case: each subscription
 * computes the call's parent and deadline once, picks, and when a replica is ready sends the first attempt to it with
 * no Reactor operator between the caller and the attempt (the request travels with the CALL frame, the response goes
 * straight through). Only a failed first attempt, or a pick that must wait, takes the channel's general retry loop
 * ({@link BalancedChannel.Attempts}), which then decides as for any call.
 */
final class PickedUnaryCall<Req, Resp> extends Mono<Resp>
{
    private final BalancedChannel channel;
    private final MethodDescriptor<Req, Resp> method;
    private final CallOptions options;
    private final Req request;
    private final RetryPolicy policy;
    private final RpcContext assembled;

    PickedUnaryCall(final BalancedChannel channel, final MethodDescriptor<Req, Resp> method, final CallOptions options,
        final Req request, final RetryPolicy policy)
    {
        this.channel = channel;
        this.method = method;
        this.options = options;
        this.request = request;
        this.policy = policy;
        this.assembled = ClientCallHost.assembledParent(options);
    }

    @Override
    public void subscribe(final CoreSubscriber<? super Resp> actual)
    {
        final RpcContext parent = ClientCallHost.parentOf(options, actual.currentContext(), assembled);
        final Deadline deadline = ClientCallHost.callDeadline(options, channel.defaultDeadline(), parent);
        final Function<ChannelSubchannel, Flux<Resp>> attempt =
            sc -> sc.channel().attemptUnary(method, options, request, null, deadline, parent).flux();
        final ChannelSubchannel picked = channel.pickNow();
        if (picked == null)
        {
            // nothing ready: the retry loop waits for a pick (or fails fast) as for any call
            channel.<Resp>newAttempts(deadline, options.isWaitForReady(), policy).run(attempt).next().subscribe(actual);
            return;
        }
        new FirstAttempt<>(channel, picked, attempt, actual, deadline, options.isWaitForReady(), policy).start(
            picked.channel().attemptUnary(method, options, request, null, deadline, parent));
    }

    /**
     * The caller's subscriber over the first attempt, and over the retry loop if that attempt fails: the caller holds
     * this subscription throughout, each upstream in turn.
     */
    private static final class FirstAttempt<Resp> implements CoreSubscriber<Resp>, Subscription
    {
        private static final Subscription CANCELLED = Operators.emptySubscription();
        @SuppressWarnings("rawtypes")
        private static final AtomicReferenceFieldUpdater<FirstAttempt, Subscription> UPSTREAM =
            AtomicReferenceFieldUpdater.newUpdater(FirstAttempt.class, Subscription.class, "upstream");
        @SuppressWarnings("rawtypes")
        private static final AtomicIntegerFieldUpdater<FirstAttempt> ACCOUNTED =
            AtomicIntegerFieldUpdater.newUpdater(FirstAttempt.class, "accounted");

        private final BalancedChannel channel;
        private final ChannelSubchannel sc;
        private final Function<ChannelSubchannel, Flux<Resp>> attempt;
        private final CoreSubscriber<? super Resp> actual;
        private final Deadline deadline;
        private final boolean waitForReady;
        private final RetryPolicy policy;
        private final long startNanos = System.nanoTime();
        /** The attempt or, after it failed, the retry loop; {@link #CANCELLED} once the caller cancelled. */
        private volatile Subscription upstream;
        /** The caller asked for the response (a Mono asks once). */
        private volatile boolean requested;
        /** Set when the first attempt failed and the retry loop took over: its operators account for the rest. */
        private volatile boolean handedOver;
        /** 1 once the first attempt's end was told to its replica's load (once, whichever side ends it). */
        private volatile int accounted;
        private volatile boolean responded;

        FirstAttempt(final BalancedChannel channel, final ChannelSubchannel sc,
            final Function<ChannelSubchannel, Flux<Resp>> attempt, final CoreSubscriber<? super Resp> actual,
            final Deadline deadline, final boolean waitForReady, final RetryPolicy policy)
        {
            this.channel = channel;
            this.sc = sc;
            this.attempt = attempt;
            this.actual = actual;
            this.deadline = deadline;
            this.waitForReady = waitForReady;
            this.policy = policy;
        }

        void start(final Mono<Resp> first)
        {
            sc.load().callStarted();
            actual.onSubscribe(this);
            first.subscribe(this);
        }

        @Override
        public Context currentContext()
        {
            return actual.currentContext();
        }

        @Override
        public void onSubscribe(final Subscription s)
        {
            final Subscription previous = upstream;
            if (previous == CANCELLED || !UPSTREAM.compareAndSet(this, previous, s))
            {
                s.cancel();
                return;
            }
            if (requested)
            {
                s.request(Long.MAX_VALUE);
            }
        }

        @Override
        public void request(final long n)
        {
            if (n <= 0 || requested)
            {
                return;
            }
            requested = true;
            final Subscription s = upstream;
            if (s != null && s != CANCELLED)
            {
                s.request(Long.MAX_VALUE); // one response
            }
        }

        @Override
        public void cancel()
        {
            final Subscription s = UPSTREAM.getAndSet(this, CANCELLED);
            if (s != null && s != CANCELLED)
            {
                s.cancel();
            }
            if (!handedOver)
            {
                ended(!responded);
            }
        }

        @Override
        public void onNext(final Resp response)
        {
            if (!handedOver && !responded)
            {
                responded = true;
                channel.attemptAnswered();
            }
            actual.onNext(response);
        }

        @Override
        public void onError(final Throwable error)
        {
            if (handedOver)
            {
                actual.onError(error);
                return;
            }
            if (!ACCOUNTED.compareAndSet(this, 0, 1))
            {
                return; // cancelled meanwhile: the caller wants nothing more
            }
            handedOver = true;
            final boolean[] ended = {false};
            final Flux<Resp> rest = channel.<Resp>newAttempts(deadline, waitForReady, policy)
                .afterFirstFailure(sc, error, sc.load(), ended, attempt, responded);
            if (!ended[0])
            {
                sc.load().callFinished(System.nanoTime() - startNanos);
            }
            sc.onCallEnded();
            rest.subscribe(this);
        }

        @Override
        public void onComplete()
        {
            if (!handedOver)
            {
                ended(false);
            }
            actual.onComplete();
        }

        /** The first attempt ended without failing: its replica's load and the subchannel hear of it once. */
        private void ended(final boolean abandoned)
        {
            if (!ACCOUNTED.compareAndSet(this, 0, 1))
            {
                return;
            }
            if (abandoned)
            {
                sc.load().callAbandoned();
            }
            else
            {
                sc.load().callFinished(System.nanoTime() - startNanos);
            }
            sc.onCallEnded();
        }
    }
}
