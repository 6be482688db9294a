package io.reverb.rpc.lb;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RetryPolicy;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.internal.ClientCallStarter;
import io.reverb.rpc.internal.SubchannelConnector;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
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
        this.assembled = ClientCallStarter.assembledParent(options);
    }

    @Override
    public void subscribe(final CoreSubscriber<? super Resp> actual)
    {
        final RpcContext parent = ClientCallStarter.parentOf(options, actual.currentContext(), assembled);
        final Deadline deadline = ClientCallStarter.callDeadline(options, channel.defaultDeadline(), parent);
        final ChannelSubchannel picked = channel.pickNow();
        if (picked == null)
        {
            // nothing ready: the retry loop waits for a pick (or fails fast) as for any call
            channel.<Resp>newAttempts(deadline, options.isWaitForReady(), policy)
                .run(attempts(deadline, parent)).next().subscribe(actual);
            return;
        }
        new FirstAttempt<>(this, picked, actual, deadline, parent).start();
    }

    /** What the retry loop sends to each replica it picks: the call's attempt. */
    private Function<ChannelSubchannel, Flux<Resp>> attempts(final Deadline deadline, final RpcContext parent)
    {
        return sc -> sc.connector().attemptUnary(method, options, request, null, deadline, parent).flux();
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
        private static final VarHandle RESPONDED;

        static
        {
            try
            {
                RESPONDED = MethodHandles.lookup().findVarHandle(FirstAttempt.class, "responded", boolean.class);
            }
            catch (final ReflectiveOperationException e)
            {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final PickedUnaryCall<?, Resp> call;
        private final ChannelSubchannel sc;
        private final CoreSubscriber<? super Resp> actual;
        private final Deadline deadline;
        private final RpcContext parent;
        /** {@link SubchannelLoad#startCall()}'s start time (set before anything can end the attempt). */
        private long startNanos;
        /** The attempt or, after it failed, the retry loop; {@link #CANCELLED} once the caller cancelled. */
        private volatile Subscription upstream;
        /** The caller asked for the response (a Mono asks once). */
        private volatile boolean requested;
        /** Set when the first attempt failed and the retry loop took over: its operators account for the rest. */
        private volatile boolean handedOver;
        /** 1 once the first attempt's end was told to its replica's load (once, whichever side ends it). */
        private volatile int accounted;
        private volatile boolean responded;

        FirstAttempt(final PickedUnaryCall<?, Resp> call, final ChannelSubchannel sc,
            final CoreSubscriber<? super Resp> actual, final Deadline deadline, final RpcContext parent)
        {
            this.call = call;
            this.sc = sc;
            this.actual = actual;
            this.deadline = deadline;
            this.parent = parent;
        }

        void start()
        {
            startNanos = sc.load().startCall();
            actual.onSubscribe(this);
            startOn(call, sc.connector());
        }

        private <Req> void startOn(final PickedUnaryCall<Req, Resp> unary, final SubchannelConnector connector)
        {
            connector.startUnaryAttempt(unary.method, unary.options, unary.request, deadline, parent, this);
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
                // read after onNext by onError (same thread, or after it by the Reactive Streams rules) and by a
                // cancel, which only chooses how the load is told: an ordered store, no fence on every call
                RESPONDED.setRelease(this, true);
                call.channel.attemptAnswered();
                // the one response ends the call for its replica's load, before the caller hears of it: a caller
                // woken by the response (Mono.block returns at onNext) sees the load already settled
                ended(false);
            }
            actual.onNext(response);
        }

        @Override
        public void onError(final Throwable error)
        {
            if (handedOver || responded)
            {
                // after the response the load is settled and nothing is retried: the error is the call's end
                actual.onError(error);
                return;
            }
            if (!ACCOUNTED.compareAndSet(this, 0, 1))
            {
                return; // cancelled meanwhile: the caller wants nothing more
            }
            handedOver = true;
            final boolean[] ended = {false};
            final Flux<Resp> rest = call.channel.<Resp>newAttempts(deadline, call.options.isWaitForReady(), call.policy)
                .afterFirstFailure(sc, error, sc.load(), ended, call.attempts(deadline, parent), responded);
            if (!ended[0])
            {
                sc.load().endCall(startNanos);
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
                sc.load().endCall(startNanos);
            }
            sc.onCallEnded();
        }
    }
}
