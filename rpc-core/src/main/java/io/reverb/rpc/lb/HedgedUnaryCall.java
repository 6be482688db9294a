package io.reverb.rpc.lb;

import io.reverb.rpc.Status;
import io.reverb.rpc.HedgingPolicy;
import io.reverb.rpc.retry.RetryThrottle;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.ContextView;

/**
 * One hedged unary call of a {@link BalancedChannel} (see {@link HedgingPolicy}): attempts sent one hedging delay
 * apart, or at once after a non-fatal failure, each a retry loop of its own (so an attempt the server never saw is
 * still retried transparently) that picks a replica no other attempt of this call uses when it can. The first answer
 * wins; the losers are cancelled, which sends CANCEL to their servers.
 */
final class HedgedUnaryCall<Resp>
{
    /** How many picks an attempt draws to find a replica the others do not use before it takes a used one. */
    private static final int PICKS_TO_AVOID = 8;

    private final HedgingPolicy policy;
    private final ContextView context;
    private final MonoSink<Resp> sink;
    private final Function<ChannelSubchannel, Flux<Resp>> call;
    private final Function<HedgedUnaryCall<Resp>, BalancedChannel.Attempts<Resp>> newAttempt;
    private final RetryThrottle throttle;
    private final Scheduler timer;
    // guarded by this
    private final BalancedChannel.Attempts<?>[] attempts;
    private final Disposable[] running;
    private final Subchannel[] used;
    private int usedCount;
    private int started;
    private int inFlight;
    private boolean done;
    private boolean won;
    private Disposable hedgeTimer;

    /**
     * @param policy                the method's hedging policy.
     * @param context               the Reactor context every attempt runs in.
     * @param sink                  where the call's answer or failure goes.
     * @param call                  sends one attempt to a replica.
     * @param newAttempt            a new attempt (retry loop) of this call.
     * @param throttle              the channel's retry budget, or null.
     * @param timer                 schedules the hedging delay.
     * @param maxTransparentRetries how many times one attempt may be retried transparently on another replica.
     */
    HedgedUnaryCall(final HedgingPolicy policy, final ContextView context, final MonoSink<Resp> sink,
        final Function<ChannelSubchannel, Flux<Resp>> call,
        final Function<HedgedUnaryCall<Resp>, BalancedChannel.Attempts<Resp>> newAttempt,
        final RetryThrottle throttle, final Scheduler timer, final int maxTransparentRetries)
    {
        this.policy = policy;
        this.context = context;
        this.sink = sink;
        this.call = call;
        this.newAttempt = newAttempt;
        this.throttle = throttle;
        this.timer = timer;
        final int max = policy.maxAttempts();
        this.attempts = new BalancedChannel.Attempts<?>[max];
        this.running = new Disposable[max];
        // an attempt may retry transparently on other replicas: room for those picks too
        this.used = new Subchannel[max * (maxTransparentRetries + 1)];
    }

    void start()
    {
        sink.onDispose(this::cancelAll);
        if (policy.hedgingDelayNanos() == 0)
        {
            for (int i = 0; i < policy.maxAttempts(); i++)
            {
                if (i > 0 && !hedgePermitted())
                {
                    break;
                }
                launch();
            }
        }
        else
        {
            launch();
        }
    }

    private boolean hedgePermitted()
    {
        return throttle == null || throttle.isRetryPermitted();
    }

    /** Sends the next attempt and, when more may follow, arms the timer for the one after it. */
    private void launch()
    {
        final BalancedChannel.Attempts<Resp> attempt = newAttempt.apply(this);
        final int index;
        synchronized (this)
        {
            if (done || started >= attempts.length)
            {
                return;
            }
            index = started++;
            inFlight++;
            attempts[index] = attempt;
            if (hedgeTimer != null)
            {
                hedgeTimer.dispose();
                hedgeTimer = null;
            }
            if (started < attempts.length && policy.hedgingDelayNanos() > 0)
            {
                hedgeTimer = timer.schedule(this::onHedgingDelay, policy.hedgingDelayNanos(), TimeUnit.NANOSECONDS);
            }
        }
        final Disposable subscription = attempt.run(call).next().contextWrite(context)
            .subscribe(this::onAnswer, this::onAttemptFailed, () -> onAttemptFailed(Status.INTERNAL
                .withDescription("a hedged unary call's attempt ended without a response").asException()));
        final boolean cancel;
        synchronized (this)
        {
            running[index] = subscription;
            cancel = done;
        }
        if (cancel)
        {
            subscription.dispose();
        }
    }

    private void onHedgingDelay()
    {
        synchronized (this)
        {
            hedgeTimer = null;
            if (done)
            {
                return;
            }
        }
        if (hedgePermitted())
        {
            launch();
        }
    }

    /** Picks a ready replica that no attempt of this call uses yet, if the picker offers one. */
    Subchannel pickAvoidingOthers(final Picker from)
    {
        Subchannel picked = null;
        for (int i = 0; i < PICKS_TO_AVOID; i++)
        {
            picked = from.pick();
            if (picked == null || !isUsed(picked))
            {
                break;
            }
        }
        if (picked != null)
        {
            synchronized (this)
            {
                if (usedCount < used.length)
                {
                    used[usedCount++] = picked;
                }
            }
        }
        return picked;
    }

    private synchronized boolean isUsed(final Subchannel subchannel)
    {
        for (int i = 0; i < usedCount; i++)
        {
            if (used[i] == subchannel)
            {
                return true;
            }
        }
        return false;
    }

    private void onAnswer(final Resp value)
    {
        synchronized (this)
        {
            if (done)
            {
                return;
            }
            done = true;
            won = true;
        }
        if (throttle != null)
        {
            throttle.onSuccess();
        }
        sink.success(value); // disposes the sink: cancelAll cancels the losers
    }

    private void onAttemptFailed(final Throwable error)
    {
        final Status status = Status.fromThrowable(error);
        final boolean nonFatal = policy.isNonFatal(status.code());
        if (nonFatal && throttle != null)
        {
            throttle.onFailure();
        }
        final boolean fail;
        final boolean next;
        synchronized (this)
        {
            if (done)
            {
                return;
            }
            inFlight--;
            next = nonFatal && started < attempts.length && hedgePermitted();
            // a fatal code ends the call; so does the last running attempt failing when no other may follow
            fail = !nonFatal || !next && inFlight == 0;
            if (fail)
            {
                done = true;
            }
        }
        if (fail)
        {
            sink.error(error);
        }
        else if (next)
        {
            launch(); // a non-fatal failure: the next hedge goes now, not after the delay
        }
    }

    private void cancelAll()
    {
        final Disposable[] toCancel;
        final Disposable timerToCancel;
        synchronized (this)
        {
            done = true;
            timerToCancel = hedgeTimer;
            hedgeTimer = null;
            toCancel = running.clone();
            for (final BalancedChannel.Attempts<?> attempt : attempts)
            {
                if (attempt != null && won)
                {
                    BalancedChannel.lostHedge(attempt); // slower than the winner: its time so far is worth recording
                }
            }
        }
        if (timerToCancel != null)
        {
            timerToCancel.dispose();
        }
        for (final Disposable d : toCancel)
        {
            if (d != null)
            {
                d.dispose();
            }
        }
    }
}
