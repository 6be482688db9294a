package io.reverb.rpc.lb;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.Status;
import io.reverb.rpc.internal.ServerCallScope;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.resolver.NameResolver;
import io.reverb.rpc.resolver.NameResolvers;
import io.reverb.rpc.retry.AttemptFailure;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.retry.HedgingPolicy;
import io.reverb.rpc.retry.RetryDecision;
import io.reverb.rpc.retry.RetryPolicy;
import io.reverb.rpc.retry.RetryState;
import io.reverb.rpc.retry.RetryThrottle;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.SignalType;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.Context;
import reactor.util.context.ContextView;

/**
 * A channel to several replicas: a {@link NameResolver} gives their addresses, a {@link LoadBalancer} policy keeps
 * one {@link RpcChannel} per address (a subchannel) and picks one per call, optionally only among replicas whose
 * health service says SERVING. Calls the server never saw (it could not be reached, or refused the call with
 * GOAWAY) are retried at once on another pick; calls of methods given a {@link RetryPolicy} (idempotent ones)
 * are retried per the policy within the channel's {@link RetryThrottle}.
 *
 * <p>Unary and server-streaming calls are retried; client-streaming and bidi calls are picked and balanced but
 * never retried (their requests cannot be replayed). A streaming call is never retried once a response reached
 * the caller.
 *
 * <p>A call made inside a handler inherits the handled call's remaining deadline (see
 * {@link CallOptions#propagatedFrom}) and is cancelled when the handled call ends early, also when it is subscribed
 * on its own rather than composed into the handler's publisher (see {@link RpcContext}); a call still waiting for a
 * ready replica then ends at its deadline. Hedged unary calls: see {@link HedgingPolicy}.
 *
 * <p>Calls wait while the channel is still connecting (or with {@link CallOptions#withWaitForReady()}, also while
 * every replica is failing), bounded by their deadline; otherwise they fail fast with UNAVAILABLE naming the last
 * error.
 */
public final class BalancedChannel implements AutoCloseable
{
    private final String target;
    private final NameResolver resolver;
    private final LoadBalancer balancer;
    private final SerializingExecutor serializer = new SerializingExecutor();
    private final Scheduler timer;
    private final Map<String, RetryPolicy> retryPolicies;
    private final Map<String, HedgingPolicy> hedgingPolicies;
    private final RetryThrottle throttle;
    private final int maxTransparentRetries;
    private final List<Runnable> waiters = new ArrayList<>();
    private final List<ChannelSubchannel> all = new ArrayList<>();
    private volatile Picker picker = Pickers.none(Status.UNAVAILABLE.withDescription("not connected yet"));
    private volatile ConnectivityState state = ConnectivityState.CONNECTING;
    private volatile boolean closed;

    private BalancedChannel(final Builder builder)
    {
        this.target = builder.target;
        this.timer = builder.timer;
        this.retryPolicies = Map.copyOf(builder.retryPolicies);
        this.hedgingPolicies = Map.copyOf(builder.hedgingPolicies);
        this.throttle = builder.throttle;
        this.maxTransparentRetries = builder.maxTransparentRetries;
        final Function<URI, RpcChannel> factory = builder.channelFactory;
        final String healthService = builder.healthService;
        final LoadBalancer.Helper helper = new LoadBalancer.Helper()
        {
            @Override
            public Subchannel createSubchannel(final URI address, final SubchannelStateListener listener)
            {
                final ChannelSubchannel subchannel = new ChannelSubchannel(address, listener, factory, serializer, timer,
                    healthService);
                synchronized (all)
                {
                    all.add(subchannel);
                }
                return subchannel;
            }

            @Override
            public void updateBalancingState(final ConnectivityState newState, final Picker newPicker)
            {
                picker = newPicker;
                state = newState;
                runWaiters();
            }

            @Override
            public void refreshNameResolution()
            {
                resolver.refresh();
            }
        };
        this.balancer = LoadBalancerRegistry.provider(builder.policy).newLoadBalancer(helper);
        this.resolver = builder.resolver != null ? builder.resolver :
            NameResolvers.newNameResolver(builder.target, builder.resolverArgs);
        resolver.start(new NameResolver.Listener()
        {
            @Override
            public void onAddresses(final List<URI> addresses)
            {
                serializer.execute(() -> balancer.handleResolvedAddresses(addresses));
            }

            @Override
            public void onError(final Status error)
            {
                serializer.execute(() -> balancer.handleNameResolutionError(error));
            }
        });
    }

    /**
     * @param target a resolver target ({@code dns:///host:port}, {@code static:a,b}) or a transport address.
     * @return a builder.
     */
    public static Builder builder(final String target)
    {
        return new Builder(Objects.requireNonNull(target, "target"), null);
    }

    /**
     * @param addresses transport addresses, any mix of schemes.
     * @return a builder.
     */
    public static Builder builder(final List<String> addresses)
    {
        return new Builder(String.join(",", addresses), NameResolvers.forAddresses(addresses));
    }

    /**
     * @return the aggregate state published by the load balancer.
     */
    public ConnectivityState state()
    {
        return state;
    }

    /**
     * @return the subchannels created so far that are not shut down (for diagnostics and tests).
     */
    public List<Subchannel> subchannels()
    {
        synchronized (all)
        {
            final List<Subchannel> live = new ArrayList<>();
            for (final ChannelSubchannel subchannel : all)
            {
                if (subchannel.state() != ConnectivityState.SHUTDOWN)
                {
                    live.add(subchannel);
                }
            }
            return live;
        }
    }

    /**
     * A unary call, picked, and retried as the class comment says. Lazy: nothing happens before subscription.
     *
     * @param method  the method.
     * @param options call options.
     * @param request the request.
     * @param <Req>   request type.
     * @param <Resp>  response type.
     * @return the response.
     */
    public <Req, Resp> Mono<Resp> newUnaryCall(
        final MethodDescriptor<Req, Resp> method, final CallOptions options, final Req request)
    {
        final HedgingPolicy hedging = policyFor(hedgingPolicies, method);
        final RpcContext assembled = options.isDetached() ? null : ServerCallScope.current();
        if (hedging != null)
        {
            return Mono.deferContextual(context ->
            {
                final RpcContext parent = ServerCallScope.parent(options.isDetached(), RpcContext.from(context), assembled);
                final CallOptions effective = options.propagatedFrom(parent);
                final ContextView attemptContext = withParent(context, parent);
                return Mono.<Resp>create(sink -> new Hedge<>(hedging, effective, attemptContext, sink,
                    sc -> sc.channel().newUnaryCall(method, effective, request).flux()).start());
            });
        }
        final RetryPolicy policy = policyFor(retryPolicies, method);
        return Mono.deferContextual(context ->
        {
            final RpcContext parent = ServerCallScope.parent(options.isDetached(), RpcContext.from(context), assembled);
            final CallOptions effective = options.propagatedFrom(parent);
            final Mono<Resp> call = new Attempts<Resp>(effective, policy, true, true)
                .run(sc -> sc.channel().newUnaryCall(method, effective, request).flux()).next();
            return parent == null || RpcContext.from(context) == parent ? call :
                call.contextWrite(c -> c.put(RpcContext.CONTEXT_KEY, parent));
        });
    }

    /**
     * A call of any kind, picked; retried only for unary and server-streaming methods. Lazy.
     *
     * @param method   the method.
     * @param options  call options.
     * @param requests the requests.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the responses.
     */
    public <Req, Resp> Flux<Resp> newCall(final MethodDescriptor<Req, Resp> method, final CallOptions options,
        final Publisher<Req> requests)
    {
        final MethodDescriptor.MethodType type = method.type();
        final boolean replayable =
            type == MethodDescriptor.MethodType.UNARY || type == MethodDescriptor.MethodType.SERVER_STREAMING;
        final RetryPolicy policy = replayable ? policyFor(retryPolicies, method) : null;
        final RpcContext assembled = options.isDetached() ? null : ServerCallScope.current();
        return Flux.deferContextual(context ->
        {
            final RpcContext parent = ServerCallScope.parent(options.isDetached(), RpcContext.from(context), assembled);
            final CallOptions effective = options.propagatedFrom(parent);
            final Flux<Resp> call = new Attempts<Resp>(effective, policy, replayable, false)
                .run(sc -> sc.channel().newCall(method, effective, requests));
            return parent == null || RpcContext.from(context) == parent ? call :
                call.contextWrite(c -> c.put(RpcContext.CONTEXT_KEY, parent));
        });
    }

    /**
     * The attempts of a call made while handling {@code parent} carry it in their Reactor context, so that each
     * attempt's single-address call is cancelled with the handled call even when the caller subscribed on its own.
     */
    private static ContextView withParent(final ContextView context, final RpcContext parent)
    {
        return parent == null || RpcContext.from(context) == parent ? context :
            Context.of(context).put(RpcContext.CONTEXT_KEY, parent);
    }

    private static <P> P policyFor(final Map<String, P> policies, final MethodDescriptor<?, ?> method)
    {
        if (policies.isEmpty())
        {
            return null;
        }
        final P exact = policies.get(method.fullMethodName());
        return exact != null ? exact : policies.get(method.serviceName());
    }

    /**
     * The retry loop of one call.
     */
    private final class Attempts<Resp>
    {
        private final CallOptions options;
        private final RetryPolicy policy;
        private final boolean replayable;
        private final boolean unary;
        private RetryState retry;
        private volatile boolean responded;
        /** Set when this is one attempt of a hedged call: picks avoid the replicas its other attempts use. */
        private Hedge<Resp> hedge;
        /** Set by the hedge before it cancels this attempt because another one won. */
        private volatile boolean lostHedge;

        Attempts(final CallOptions options, final RetryPolicy policy, final boolean replayable, final boolean unary)
        {
            this.options = options;
            this.policy = policy;
            this.replayable = replayable;
            this.unary = unary;
        }

        Flux<Resp> run(final Function<ChannelSubchannel, Flux<Resp>> call)
        {
            return pick().flatMapMany(sc -> attempt(sc, call));
        }

        private Flux<Resp> attempt(final ChannelSubchannel sc, final Function<ChannelSubchannel, Flux<Resp>> call)
        {
            final SubchannelLoad load = sc.load();
            final long start = System.nanoTime();
            final boolean[] ended = {false};
            load.callStarted();
            return call.apply(sc)
                .doOnNext(r ->
                {
                    final boolean first = !responded;
                    responded = true;
                    // a unary call succeeded with its response (next() cancels before the completion would come)
                    if (first && unary)
                    {
                        onSuccess();
                    }
                })
                .doFinally(signal ->
                {
                    if (!ended[0])
                    {
                        ended[0] = true;
                        // a unary call's response is followed by a cancel from next(): that is an answer, not an
                        // abandon; a hedge that lost took at least this long here: worth recording for peak_ewma
                        if (signal == SignalType.CANCEL && !responded && !lostHedge)
                        {
                            load.callAbandoned();
                        }
                        else
                        {
                            load.callFinished(System.nanoTime() - start);
                        }
                    }
                    sc.onCallEnded();
                })
                .doOnComplete(() ->
                {
                    if (!unary)
                    {
                        onSuccess();
                    }
                })
                .onErrorResume(error -> onFailure(sc, error, load, ended, call));
        }

        private void onSuccess()
        {
            if (hedge != null)
            {
                return; // the hedge accounts for the call as a whole
            }
            if (retry != null)
            {
                retry.onSuccess();
            }
            else if (throttle != null)
            {
                throttle.onSuccess();
            }
        }

        private Flux<Resp> onFailure(final ChannelSubchannel sc, final Throwable error, final SubchannelLoad load,
            final boolean[] ended, final Function<ChannelSubchannel, Flux<Resp>> call)
        {
            final Status status = Status.fromThrowable(error);
            final AttemptFailure failure = classify(status);
            if (failure != AttemptFailure.PROCESSED && !ended[0])
            {
                // a replica that refuses fast must not look fast to peak_ewma
                ended[0] = true;
                load.callAbandoned();
            }
            if (failure == AttemptFailure.NOT_SENT || isConnectionLoss(status))
            {
                sc.onUnreachable();
            }
            else if (isGoAway(status))
            {
                sc.onGoAway();
            }
            if (closed || !replayable)
            {
                return Flux.error(error);
            }
            if (retry == null)
            {
                retry = new RetryState(policy, throttle, maxTransparentRetries);
            }
            final RetryDecision decision = retry.onFailure(failure, status.code(), responded);
            if (decision == RetryDecision.RETRY_NOW)
            {
                return run(call);
            }
            if (decision == RetryDecision.RETRY_AFTER_BACKOFF)
            {
                final long backoff = retry.backoffNanos(ThreadLocalRandom.current().nextDouble());
                if (RetryState.fitsDeadline(backoff, options.deadline()))
                {
                    return Mono.delay(Duration.ofNanos(backoff), timer).flatMapMany(x -> run(call));
                }
            }
            return Flux.error(error);
        }

        private Mono<ChannelSubchannel> pick()
        {
            final Subchannel picked = hedge == null ? picker.pick() : hedge.pickAvoidingOthers(picker);
            if (picked != null)
            {
                return Mono.just((ChannelSubchannel)picked);
            }
            if (closed)
            {
                return Mono.error(Status.UNAVAILABLE.withDescription("channel closed").asException());
            }
            final ConnectivityState now = state;
            if (now == ConnectivityState.TRANSIENT_FAILURE && !options.isWaitForReady())
            {
                return Mono.error(picker.noneReadyStatus().asException());
            }
            // still connecting, or asked to wait: pick again at the next picker, bounded by the deadline
            Mono<ChannelSubchannel> wait = Mono.<ChannelSubchannel>create(sink ->
            {
                final Runnable waiter = () ->
                {
                    final Subchannel again = hedge == null ? picker.pick() : hedge.pickAvoidingOthers(picker);
                    if (again != null)
                    {
                        sink.success((ChannelSubchannel)again);
                    }
                    else if (closed)
                    {
                        sink.error(Status.UNAVAILABLE.withDescription("channel closed").asException());
                    }
                    else if (state == ConnectivityState.TRANSIENT_FAILURE && !options.isWaitForReady())
                    {
                        sink.error(picker.noneReadyStatus().asException());
                    }
                    else
                    {
                        sink.error(new RetryPickSignal());
                    }
                };
                addWaiter(waiter);
                sink.onDispose(() -> removeWaiter(waiter));
            }).onErrorResume(RetryPickSignal.class, e -> pick());
            final Deadline deadline = options.deadline();
            if (deadline != null)
            {
                wait = wait.timeout(Duration.ofNanos(Math.max(0, deadline.timeRemainingNanos())), timer)
                    .onErrorMap(TimeoutException.class, e -> Status.DEADLINE_EXCEEDED
                        .withDescription("deadline exceeded while waiting for a ready replica of " + target + ": " +
                            picker.noneReadyStatus().description()).asException());
            }
            return wait;
        }
    }

    /**
     * One hedged unary call (see {@link HedgingPolicy}): attempts sent one hedging delay apart, or at once after a
     * non-fatal failure, each an {@link Attempts} of its own (so an attempt the server never saw is still retried
     * transparently) that picks a replica no other attempt of this call uses when it can. The first answer wins;
     * the losers are cancelled, which sends CANCEL to their servers.
     */
    private final class Hedge<Resp>
    {
        /** How many picks an attempt draws to find a replica the others do not use before it takes a used one. */
        private static final int PICKS_TO_AVOID = 8;

        private final HedgingPolicy policy;
        private final CallOptions options;
        private final ContextView context;
        private final MonoSink<Resp> sink;
        private final Function<ChannelSubchannel, Flux<Resp>> call;
        // guarded by this
        private final Attempts<?>[] attempts;
        private final Disposable[] running;
        private final Subchannel[] used;
        private int usedCount;
        private int started;
        private int inFlight;
        private boolean done;
        private boolean won;
        private Disposable hedgeTimer;

        Hedge(final HedgingPolicy policy, final CallOptions options, final ContextView context, final MonoSink<Resp> sink,
            final Function<ChannelSubchannel, Flux<Resp>> call)
        {
            this.policy = policy;
            this.options = options;
            this.context = context;
            this.sink = sink;
            this.call = call;
            final int max = policy.maxAttempts();
            this.attempts = new Attempts<?>[max];
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
            final Attempts<Resp> attempt = new Attempts<>(options, null, true, true);
            attempt.hedge = this;
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
                for (final Attempts<?> attempt : attempts)
                {
                    if (attempt != null && won)
                    {
                        attempt.lostHedge = true; // slower than the winner: its time so far is worth recording
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

    /** Internal: the picker changed but still had nothing; pick again. */
    private static final class RetryPickSignal extends RuntimeException
    {
        private static final long serialVersionUID = 1L;

        RetryPickSignal()
        {
            super(null, null, false, false);
        }
    }

    private void addWaiter(final Runnable waiter)
    {
        final boolean runNow;
        synchronized (waiters)
        {
            // the picker may have changed between the failed pick and now: then do not wait for the next one
            runNow = picker.pick() != null || closed;
            if (!runNow)
            {
                waiters.add(waiter);
            }
        }
        if (runNow)
        {
            waiter.run();
        }
    }

    private void removeWaiter(final Runnable waiter)
    {
        synchronized (waiters)
        {
            waiters.remove(waiter);
        }
    }

    private void runWaiters()
    {
        final List<Runnable> run;
        synchronized (waiters)
        {
            if (waiters.isEmpty())
            {
                return;
            }
            run = new ArrayList<>(waiters);
            waiters.clear();
        }
        for (final Runnable waiter : run)
        {
            waiter.run();
        }
    }

    /**
     * How far a failed attempt got: read from the {@link CallFailureCause} the runtime attached to the status (the
     * call could not be sent, was refused by GOAWAY, or the server flagged it refused before any handler ran),
     * never from the status description; a status without one was processed.
     *
     * @param status the attempt's status.
     * @return the failure's kind.
     */
    static AttemptFailure classify(final Status status)
    {
        return CallFailureCause.attemptFailure(status);
    }

    private static boolean isGoAway(final Status status)
    {
        final CallFailureCause cause = CallFailureCause.find(status);
        // a server shutting down refuses calls (flagged REFUSED, UNAVAILABLE) as it sends GOAWAY: treat both alike
        return cause != null && (cause.reason() == CallFailureCause.Reason.GOAWAY ||
            cause.reason() == CallFailureCause.Reason.REFUSED_BY_SERVER && status.code() == StatusCode.UNAVAILABLE);
    }

    private static boolean isConnectionLoss(final Status status)
    {
        final CallFailureCause cause = CallFailureCause.find(status);
        return cause != null && cause.reason() == CallFailureCause.Reason.CONNECTION_LOST;
    }

    /**
     * Closes every subchannel's channel; calls running fail with UNAVAILABLE, waiting ones too.
     */
    @Override
    public void close()
    {
        closed = true;
        resolver.shutdown();
        serializer.execute(balancer::shutdown);
        final List<ChannelSubchannel> toClose;
        synchronized (all)
        {
            toClose = new ArrayList<>(all);
        }
        for (final ChannelSubchannel subchannel : toClose)
        {
            final RpcChannel channel = subchannel.channel();
            if (channel != null)
            {
                channel.close();
            }
        }
        runWaiters();
    }

    /**
     * @return true once closed.
     */
    public boolean isClosed()
    {
        return closed;
    }

    @Override
    public String toString()
    {
        return "BalancedChannel{" + target + ", " + state + "}";
    }

    /**
     * Configures a {@link BalancedChannel}.
     */
    public static final class Builder
    {
        private final String target;
        private final NameResolver resolver;
        private String policy = LoadBalancerRegistry.DEFAULT_POLICY;
        private Function<URI, RpcChannel> channelFactory = uri -> RpcChannel.builder(uri.toString()).build();
        private String healthService;
        private final Map<String, RetryPolicy> retryPolicies = new HashMap<>();
        private final Map<String, HedgingPolicy> hedgingPolicies = new HashMap<>();
        private RetryThrottle throttle;
        private int maxTransparentRetries = 5;
        private NameResolver.Args resolverArgs = NameResolver.Args.defaults();
        private Scheduler timer = Schedulers.parallel();

        Builder(final String target, final NameResolver resolver)
        {
            this.target = target;
            this.resolver = resolver;
        }

        /**
         * @param name {@code pick_first} (default), {@code round_robin}, {@code peak_ewma}, or a registered policy.
         * @return this.
         */
        public Builder loadBalancingPolicy(final String name)
        {
            LoadBalancerRegistry.provider(name); // fail here, naming the policies there are
            this.policy = name;
            return this;
        }

        /**
         * @param factory makes the single-address channel of each replica (engine settings, interceptors).
         * @return this.
         */
        public Builder channelFactory(final Function<URI, RpcChannel> factory)
        {
            this.channelFactory = Objects.requireNonNull(factory, "factory");
            return this;
        }

        /**
         * Picks only replicas whose health service reports SERVING for the given service name (replicas without a
         * health service count as serving).
         *
         * @param serviceName the service to watch, or "" for the whole server.
         * @return this.
         */
        public Builder healthCheck(final String serviceName)
        {
            this.healthService = Objects.requireNonNull(serviceName, "serviceName");
            return this;
        }

        /**
         * Marks a method, or every method of a service, idempotent and retries it per the policy.
         *
         * @param methodOrService {@code "pkg.Service/Method"} or {@code "pkg.Service"}.
         * @param retryPolicy     the policy.
         * @return this.
         */
        public Builder retryPolicy(final String methodOrService, final RetryPolicy retryPolicy)
        {
            retryPolicies.put(Objects.requireNonNull(methodOrService, "methodOrService"),
                Objects.requireNonNull(retryPolicy, "retryPolicy"));
            return this;
        }

        /**
         * Marks a method, or every method of a service, idempotent and hedges its unary calls per the policy (its
         * streaming calls are neither hedged nor retried). A method has a retry policy or a hedging policy, not both.
         *
         * @param methodOrService {@code "pkg.Service/Method"} or {@code "pkg.Service"}.
         * @param hedgingPolicy   the policy.
         * @return this.
         */
        public Builder hedgingPolicy(final String methodOrService, final HedgingPolicy hedgingPolicy)
        {
            hedgingPolicies.put(Objects.requireNonNull(methodOrService, "methodOrService"),
                Objects.requireNonNull(hedgingPolicy, "hedgingPolicy"));
            return this;
        }

        /**
         * @param maxTokens  budget size (1..1000).
         * @param tokenRatio tokens a success gives back (0..1].
         * @return this.
         */
        public Builder retryThrottling(final int maxTokens, final double tokenRatio)
        {
            this.throttle = new RetryThrottle(maxTokens, tokenRatio);
            return this;
        }

        /**
         * @param retries how many times a call the server never saw is retried at once (default 5).
         * @return this.
         */
        public Builder maxTransparentRetries(final int retries)
        {
            if (retries < 0)
            {
                throw new IllegalArgumentException("maxTransparentRetries must not be negative: " + retries);
            }
            this.maxTransparentRetries = retries;
            return this;
        }

        /**
         * @param args the resolver's scheduler and refresh intervals.
         * @return this.
         */
        public Builder resolverArgs(final NameResolver.Args args)
        {
            this.resolverArgs = Objects.requireNonNull(args, "args");
            return this;
        }

        /**
         * @param scheduler timer for retry backoff, health re-watch and deadlines while waiting.
         * @return this.
         */
        public Builder timerScheduler(final Scheduler scheduler)
        {
            this.timer = Objects.requireNonNull(scheduler, "scheduler");
            return this;
        }

        /**
         * @return the channel; resolution starts now, connections as the policy asks.
         */
        public BalancedChannel build()
        {
            for (final String name : hedgingPolicies.keySet())
            {
                if (retryPolicies.containsKey(name))
                {
                    throw new IllegalArgumentException(name + " has both a retry policy and a hedging policy: choose one");
                }
            }
            return new BalancedChannel(this);
        }
    }
}
