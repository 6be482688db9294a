package io.reverb.rpc.lb;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.ClientInterceptor;
import io.reverb.rpc.ConnectivityState;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.HedgingPolicy;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RetryPolicy;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.internal.ChannelConfig;
import io.reverb.rpc.internal.ClientCallStarter;
import io.reverb.rpc.internal.SubchannelConnector;
import io.reverb.rpc.resolver.NameResolver;
import io.reverb.rpc.resolver.NameResolvers;
import io.reverb.rpc.retry.AttemptFailure;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.retry.RetryDecision;
import io.reverb.rpc.retry.RetryState;
import io.reverb.rpc.retry.RetryThrottle;
import io.reverb.rpc.transport.Transports;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.ContextView;

/**
 * The implementation of {@link RpcChannel} (the only one, as grpc-java's {@code ManagedChannelImpl} is of
 * {@code ManagedChannel}), built by {@link RpcChannel.Builder#build()}: a {@link NameResolver} gives the addresses, a
 * {@link LoadBalancer} policy ({@code pick_first} unless told otherwise) keeps one subchannel per address, each owning
 * the connection to its address (a {@link SubchannelConnector}: it connects, reconnects with backoff, keeps alive), and
 * picks one per call, optionally only among replicas whose health service says SERVING. Calls the server never saw (it
 * could not be reached, or refused the call with GOAWAY) are retried at once on another pick; calls of methods given a
 * {@link RetryPolicy} (idempotent ones) are retried per the policy within the channel's {@link RetryThrottle}.
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
 *
 * <p>The balancer always picks: a single address is {@code pick_first} over one subchannel, and every setting means
 * the same whatever the number of addresses. Per call, once, above the attempts: the interceptors, the deadline
 * ({@link ClientCallStarter#callDeadline}: the options', else the default one, capped by a handled call's), and the
 * retry loop (transparent retries unless {@link RpcChannel.Builder#transparentRetry}{@code (false)}, the retry or
 * hedging policy). A subchannel's connector runs one attempt at a time and none of these.
 */
public final class BalancedChannel extends RpcChannel
{
    private final String target;
    /** The deadline of calls whose options set none, fixed when each call is subscribed; null for none. */
    private final Duration defaultDeadline;
    /** Run once per call, first outermost, around the call's attempts. */
    private final ClientInterceptor[] interceptors;
    /** Set by {@link #state(boolean)}{@code (true)}: subchannels made from now on connect at once. */
    private volatile boolean connectRequested;
    private final NameResolver resolver;
    private final LoadBalancer balancer;
    private final SerializingExecutor serializer = new SerializingExecutor();
    private final Scheduler timer;
    private final Map<String, RetryPolicy> retryPolicies;
    private final Map<String, HedgingPolicy> hedgingPolicies;
    private final RetryThrottle throttle;
    /** How many times a call the server never saw is retried at once on another pick (0: transparent retry off). */
    private final int maxTransparentRetries;
    /** How many times a call the server never saw is retried at once on another pick, unless turned off. */
    private static final int MAX_TRANSPARENT_RETRIES = 5;
    private final List<Runnable> waiters = new ArrayList<>();
    private final SubchannelRegistry all = new SubchannelRegistry();
    private volatile Picker picker = Pickers.none(Status.UNAVAILABLE.withDescription("not connected yet"));
    private volatile ConnectivityState state = ConnectivityState.CONNECTING;
    private volatile boolean closed;
    /** Callbacks of {@link #notifyWhenStateChanged}, with the state each waits to leave; guarded by itself. */
    private final List<Map.Entry<ConnectivityState, Runnable>> stateWatchers = new ArrayList<>();

    /**
     * @param settings the channel's settings.
     */
    public BalancedChannel(final RpcChannel.Builder settings)
    {
        this(settings, null);
    }

    /**
     * @param settings the channel's settings.
     * @param given    the name resolver to use (tests), or null for the one the target names.
     */
    BalancedChannel(final RpcChannel.Builder settings, final NameResolver given)
    {
        this.target = settings.target();
        this.timer = settings.timerScheduler();
        this.retryPolicies = settings.retryPolicies();
        this.hedgingPolicies = settings.hedgingPolicies();
        this.throttle = settings.retryMaxTokens() > 0 ?
            new RetryThrottle(settings.retryMaxTokens(), settings.retryTokenRatio()) : null;
        this.maxTransparentRetries = settings.transparentRetry() ? MAX_TRANSPARENT_RETRIES : 0;
        this.defaultDeadline = settings.defaultDeadline();
        this.interceptors = settings.interceptors().toArray(new ClientInterceptor[0]);
        final Function<URI, SubchannelConnector> factory = address ->
        {
            final SubchannelConnector connector =
                new SubchannelConnector(ChannelConfig.forSubchannel(settings, address.toString()));
            connector.onStateChange(this::stateChanged); // the channel's state follows its connections
            if (connectRequested)
            {
                connector.requestConnection();
            }
            return connector;
        };
        // fails here, naming the scheme, when no transport serves an address (its subchannel is made later)
        if (settings.addresses() != null)
        {
            settings.addresses().forEach(address -> Transports.providerFor(Transports.parse(address)));
        }
        else if (given == null && !NameResolvers.isResolverTarget(target))
        {
            Transports.providerFor(Transports.parse(target));
        }
        final String healthService = settings.healthCheck();
        final String policy = settings.loadBalancingPolicy() != null ? settings.loadBalancingPolicy() :
            LoadBalancerRegistry.DEFAULT_POLICY;
        final NameResolver.Args resolverArgs = NameResolver.Args.defaults();
        final LoadBalancer.Helper helper = new LoadBalancer.Helper()
        {
            @Override
            public Subchannel createSubchannel(final URI address, final SubchannelStateListener listener)
            {
                final ChannelSubchannel subchannel = new ChannelSubchannel(address, listener, factory, serializer, timer,
                    healthService, all);
                all.add(subchannel);
                return subchannel;
            }

            @Override
            public void updateBalancingState(final ConnectivityState newState, final Picker newPicker)
            {
                picker = newPicker;
                state = newState;
                runWaiters();
                stateChanged();
            }

            @Override
            public void refreshNameResolution()
            {
                resolver.refresh();
            }
        };
        this.balancer = LoadBalancerRegistry.provider(policy).newLoadBalancer(helper);
        this.resolver = given != null ? given : settings.addresses() != null ?
            NameResolvers.forAddresses(settings.addresses()) : NameResolvers.newNameResolver(target, resolverArgs);
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
     * @return the aggregate state published by the load balancer.
     */
    public ConnectivityState state()
    {
        return state;
    }

    /**
     * The channel's state: the balancer's, except that while it has a subchannel to pick (READY) the channel is as
     * ready as its best connection (READY when one takes calls, else CONNECTING, IDLE or TRANSIENT_FAILURE), so that
     * its state tells of connections made and lost, whatever the number of addresses.
     *
     * @param requestConnection true to make every subchannel connect now (connections are made on demand otherwise).
     * @return the state.
     */
    @Override
    public ConnectivityState state(final boolean requestConnection)
    {
        if (closed)
        {
            return ConnectivityState.SHUTDOWN;
        }
        final List<SubchannelConnector> connectors = new ArrayList<>();
        for (final ChannelSubchannel subchannel : all.snapshot())
        {
            final SubchannelConnector connector = subchannel.connector();
            if (connector != null && subchannel.state() != ConnectivityState.SHUTDOWN)
            {
                connectors.add(connector);
            }
        }
        if (requestConnection)
        {
            connectRequested = true;
            connectors.forEach(SubchannelConnector::requestConnection);
        }
        final ConnectivityState balanced = state;
        if (balanced != ConnectivityState.READY)
        {
            return balanced;
        }
        ConnectivityState best = ConnectivityState.IDLE;
        for (final SubchannelConnector connector : connectors)
        {
            final ConnectivityState connection = connector.state();
            if (connection == ConnectivityState.READY)
            {
                return ConnectivityState.READY;
            }
            if (connection == ConnectivityState.CONNECTING ||
                connection == ConnectivityState.TRANSIENT_FAILURE && best == ConnectivityState.IDLE)
            {
                best = connection;
            }
        }
        return best;
    }

    @Override
    public void notifyWhenStateChanged(final ConnectivityState source, final Runnable callback)
    {
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(callback, "callback");
        synchronized (stateWatchers)
        {
            if (state(false) == source)
            {
                stateWatchers.add(Map.entry(source, callback));
                return;
            }
        }
        callback.run();
    }

    private void stateChanged()
    {
        final ConnectivityState now = state(false);
        List<Runnable> run = null;
        synchronized (stateWatchers)
        {
            for (final Iterator<Map.Entry<ConnectivityState, Runnable>> i = stateWatchers.iterator(); i.hasNext();)
            {
                final Map.Entry<ConnectivityState, Runnable> watcher = i.next();
                if (watcher.getKey() != now)
                {
                    i.remove();
                    if (run == null)
                    {
                        run = new ArrayList<>();
                    }
                    run.add(watcher.getValue());
                }
            }
        }
        if (run != null)
        {
            run.forEach(Runnable::run);
        }
    }

    /** @return the subchannels this channel still holds, shut down or not (tests: retired ones must go). */
    int subchannelsHeld()
    {
        return all.size();
    }

    /**
     * @return the subchannels created so far that are not shut down (for diagnostics and tests).
     */
    public List<Subchannel> subchannels()
    {
        final List<Subchannel> live = new ArrayList<>();
        for (final ChannelSubchannel subchannel : all.snapshot())
        {
            if (subchannel.state() != ConnectivityState.SHUTDOWN)
            {
                live.add(subchannel);
            }
        }
        return live;
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
    @Override
    public <Req, Resp> Mono<Resp> newUnaryCall(
        final MethodDescriptor<Req, Resp> method, final CallOptions options, final Req request)
    {
        Objects.requireNonNull(request, "request");
        final HedgingPolicy hedging = policyFor(hedgingPolicies, method);
        final RetryPolicy policy = hedging == null ? policyFor(retryPolicies, method) : null;
        if (interceptors.length == 0 && hedging == null)
        {
            return new PickedUnaryCall<>(this, method, options, request, policy);
        }
        final RpcContext assembled = ClientCallStarter.assembledParent(options);
        if (interceptors.length == 0)
        {
            return Mono.deferContextual(context ->
            {
                final RpcContext parent = ClientCallStarter.parentOf(options, context, assembled);
                final Deadline deadline = ClientCallStarter.callDeadline(options, defaultDeadline, parent);
                return unary(method, options, request, null, deadline, parent, hedging, policy, context);
            });
        }
        return ClientCallStarter.unaryResult(method, intercepted(method, options, Mono.just(request), assembled,
            (call, requests, deadline, parent, context) ->
            {
                if (hedging != null)
                {
                    return Mono.from(requests).flatMap(r -> unary(method, options, r, call, deadline, parent, hedging,
                        null, context)).flux();
                }
                // the interceptors' request, made once: a retry sends it again, it does not run them again
                return replayed(requests, sent -> new Attempts<Resp>(deadline, options.isWaitForReady(), policy,
                    true, true).run(sc -> sc.connector().attemptCall(method, options, sent, call, deadline, parent)));
            }));
    }

    private <Req, Resp> Mono<Resp> unary(final MethodDescriptor<Req, Resp> method, final CallOptions options,
        final Req request, final ClientCallContext call, final Deadline deadline, final RpcContext parent,
        final HedgingPolicy hedging, final RetryPolicy policy, final ContextView context)
    {
        if (hedging != null)
        {
            return Mono.<Resp>create(sink -> new HedgedUnaryCall<>(hedging, context, sink,
                sc -> sc.connector().attemptUnary(method, options, request, call, deadline, parent).flux(),
                hedge -> newHedgeAttempt(deadline, options.isWaitForReady(), hedge), throttle, timer,
                maxTransparentRetries).start());
        }
        return new Attempts<Resp>(deadline, options.isWaitForReady(), policy, true, true)
            .run(sc -> sc.connector().attemptUnary(method, options, request, call, deadline, parent).flux()).next();
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
    @Override
    public <Req, Resp> Flux<Resp> newCall(final MethodDescriptor<Req, Resp> method, final CallOptions options,
        final Publisher<Req> requests)
    {
        final MethodDescriptor.MethodType type = method.type();
        final boolean replayable =
            type == MethodDescriptor.MethodType.UNARY || type == MethodDescriptor.MethodType.SERVER_STREAMING;
        final RetryPolicy policy = replayable ? policyFor(retryPolicies, method) : null;
        final RpcContext assembled = ClientCallStarter.assembledParent(options);
        if (interceptors.length == 0)
        {
            return Flux.deferContextual(context ->
            {
                final RpcContext parent = ClientCallStarter.parentOf(options, context, assembled);
                final Deadline deadline = ClientCallStarter.callDeadline(options, defaultDeadline, parent);
                if (!replayable)
                {
                    return new Attempts<Resp>(deadline, options.isWaitForReady(), policy, false, false)
                        .run(sc -> sc.connector().attemptCall(method, options, requests, null, deadline, parent));
                }
                return replayed(requests, sent -> new Attempts<Resp>(deadline, options.isWaitForReady(), policy,
                    true, false).run(sc -> sc.connector().attemptCall(method, options, sent, null, deadline, parent)));
            });
        }
        return intercepted(method, options, requests, assembled, (call, r, deadline, parent, context) ->
        {
            if (!replayable)
            {
                return new Attempts<Resp>(deadline, options.isWaitForReady(), policy, false, false)
                    .run(sc -> sc.connector().attemptCall(method, options, r, call, deadline, parent));
            }
            return replayed(r, sent -> new Attempts<Resp>(deadline, options.isWaitForReady(), policy, true, false)
                .run(sc -> sc.connector().attemptCall(method, options, sent, call, deadline, parent)));
        });
    }

    /**
     * A call whose request is taken from its publisher once and sent again by each attempt (a retry replays what was
     * sent; it does not subscribe to the publisher again). The publisher's subscription is cancelled when the call
     * ends, so a request still being produced (a token fetch, a {@code Mono} on another scheduler) stops with a call
     * cancelled or past its deadline, as it would with one subscription ({@code Flux.cache()} never cancels its
     * source).
     */
    private static <Req, Resp> Flux<Resp> replayed(final Publisher<Req> requests,
        final Function<Flux<Req>, Flux<Resp>> call)
    {
        final Disposable.Swap source = Disposables.swap();
        final Flux<Req> sent = Flux.from(requests).replay().autoConnect(1, source::update);
        return call.apply(sent).doFinally(signal -> source.dispose());
    }

    /** What the interceptors of a call wrap: its attempts, given the call's context, deadline and parent. */
    @FunctionalInterface
    private interface Attempted<Req, Resp>
    {
        Flux<Resp> call(ClientCallContext call, Flux<Req> requests, Deadline deadline, RpcContext parent,
            ContextView context);
    }

    /**
     * The interceptors, once per call (as grpc-java's, which wrap the channel, not the attempts): each subscription
     * computes the call's parent and deadline, makes its {@link ClientCallContext} (every attempt records the
     * server's answer into it, the last one last) and runs the chain around the attempts.
     */
    private <Req, Resp> Flux<Resp> intercepted(final MethodDescriptor<Req, Resp> method, final CallOptions options,
        final Publisher<Req> requests, final RpcContext assembled, final Attempted<Req, Resp> attempts)
    {
        return Flux.deferContextual(context ->
        {
            final RpcContext parent = ClientCallStarter.parentOf(options, context, assembled);
            final Deadline deadline = ClientCallStarter.callDeadline(options, defaultDeadline, parent);
            final ClientCallContext call = new ClientCallContext(method, options);
            ClientInterceptor.Next<Req, Resp> next = r -> attempts.call(call, r, deadline, parent, context);
            for (int i = interceptors.length - 1; i >= 0; i--)
            {
                final ClientInterceptor interceptor = interceptors[i];
                final ClientInterceptor.Next<Req, Resp> inner = next;
                next = r -> interceptor.interceptCall(call, r, inner);
            }
            return next.call(Flux.from(requests));
        });
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

    /** @return the deadline of calls whose options set none, or null. */
    Duration defaultDeadline()
    {
        return defaultDeadline;
    }

    /** @return a replica to send a call to now, or null when none is ready (or being connected to). */
    ChannelSubchannel pickNow()
    {
        return (ChannelSubchannel)picker.pick();
    }

    /** The first attempt of a call without a retry state answered: the retry budget gets its token back. */
    void attemptAnswered()
    {
        if (throttle != null)
        {
            throttle.onSuccess();
        }
    }

    /**
     * @return the retry loop of a unary call, not yet started.
     */
    <Resp> Attempts<Resp> newAttempts(final Deadline deadline, final boolean waitForReady, final RetryPolicy policy)
    {
        return new Attempts<>(deadline, waitForReady, policy, true, true);
    }

    /** One attempt of a hedged unary call: its picks avoid the replicas the call's other attempts use. */
    private <Resp> Attempts<Resp> newHedgeAttempt(final Deadline deadline, final boolean waitForReady,
        final HedgedUnaryCall<Resp> hedge)
    {
        final Attempts<Resp> attempt = new Attempts<>(deadline, waitForReady, null, true, true);
        attempt.hedge = hedge;
        return attempt;
    }

    /** Marks an attempt as one that lost its hedge: it is cancelled because another attempt answered first. */
    static void lostHedge(final Attempts<?> attempt)
    {
        attempt.lostHedge = true;
    }

    /**
     * The retry loop of one call.
     */
    final class Attempts<Resp>
    {
        /** The call's deadline, computed once for the call ({@link ClientCallStarter#callDeadline}), or null. */
        private final Deadline deadline;
        private final boolean waitForReady;
        private final RetryPolicy policy;
        private final boolean replayable;
        private final boolean unary;
        private RetryState retry;
        private volatile boolean responded;
        /** Set when this is one attempt of a hedged call: picks avoid the replicas its other attempts use. */
        private HedgedUnaryCall<Resp> hedge;
        /** Set by the hedge before it cancels this attempt because another one won. */
        private volatile boolean lostHedge;

        Attempts(final Deadline deadline, final boolean waitForReady, final RetryPolicy policy,
            final boolean replayable, final boolean unary)
        {
            this.deadline = deadline;
            this.waitForReady = waitForReady;
            this.policy = policy;
            this.replayable = replayable;
            this.unary = unary;
        }

        Flux<Resp> run(final Function<ChannelSubchannel, Flux<Resp>> call)
        {
            // a replica ready now (the common case): no operator between the pick and the attempt
            final Subchannel picked = hedge == null ? picker.pick() : null;
            if (picked != null)
            {
                return attempt((ChannelSubchannel)picked, call);
            }
            return pick().flatMapMany(sc -> attempt(sc, call));
        }

        private Flux<Resp> attempt(final ChannelSubchannel sc, final Function<ChannelSubchannel, Flux<Resp>> call)
        {
            final SubchannelLoad load = sc.load();
            final boolean[] ended = {false};
            final long start = load.startCall();
            return call.apply(sc)
                .doOnNext(r ->
                {
                    // written once: a volatile store per message of a stream cost a fence each (3.7% of a streaming
                    // client's samples)
                    if (!responded)
                    {
                        responded = true;
                        // a unary call succeeded with its response (next() cancels before the completion would come)
                        if (unary)
                        {
                            onSuccess();
                        }
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
                            load.endCall(start);
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

        /**
         * The first attempt, made outside this loop ({@link PickedUnaryCall}), failed: decide as for any attempt.
         *
         * @return the rest of the call: further attempts, or the error.
         */
        Flux<Resp> afterFirstFailure(final ChannelSubchannel sc, final Throwable error, final SubchannelLoad load,
            final boolean[] ended, final Function<ChannelSubchannel, Flux<Resp>> call, final boolean answered)
        {
            responded = answered;
            return onFailure(sc, error, load, ended, call);
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
            if (failure == AttemptFailure.NOT_SENT)
            {
                sc.onUnreachable(status);
            }
            else if (isGoAway(status))
            {
                sc.onGoAway();
            }
            // a connection lost under a running call says nothing of the replica: the subchannel's connector
            // makes another for the next call, and a replica that is gone is found unreachable then (NOT_SENT)
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
                if (RetryState.fitsDeadline(backoff, deadline))
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
            // the calls want a connection: failing replicas try again soon
            // (see SubchannelConnector.callsWantConnection)
            wantConnections();
            if (now == ConnectivityState.TRANSIENT_FAILURE && !waitForReady)
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
                    else if (state == ConnectivityState.TRANSIENT_FAILURE && !waitForReady)
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

    /** Internal: the picker changed but still had nothing; pick again. */
    private static final class RetryPickSignal extends RuntimeException
    {
        private static final long serialVersionUID = 1L;

        RetryPickSignal()
        {
            super(null, null, false, false);
        }
    }

    /**
     * A call found no replica to pick: tells the connectors of the failing subchannels that calls want a
     * connection, so that their next attempt comes within {@code reconnectWhileCallsWait} of their last failure,
     * however far their backoff has grown (as a single connector does for the calls it parks itself).
     */
    private void wantConnections()
    {
        for (final ChannelSubchannel subchannel : all.snapshot())
        {
            final SubchannelConnector connector = subchannel.connector();
            if (connector != null && subchannel.state() == ConnectivityState.TRANSIENT_FAILURE)
            {
                connector.callsWantConnection();
            }
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
     * How far a failed attempt got: read from the {@link CallFailureCause} the connector attached to the status (the
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

    /**
     * Closes every subchannel's connections; calls running fail with UNAVAILABLE, waiting ones too.
     */
    @Override
    public void close()
    {
        closed = true;
        resolver.shutdown();
        serializer.execute(balancer::shutdown);
        for (final ChannelSubchannel subchannel : all.snapshot())
        {
            final SubchannelConnector connector = subchannel.connector();
            if (connector != null)
            {
                connector.close();
            }
        }
        runWaiters();
        stateChanged();
    }

    @Override
    public String uri()
    {
        return target;
    }

    @Override
    public String fabric()
    {
        final TreeSet<String> fabrics = new TreeSet<>();
        for (final ChannelSubchannel subchannel : all.snapshot())
        {
            final String fabric = subchannel.state() == ConnectivityState.READY ? subchannel.fabric() : null;
            if (fabric != null)
            {
                fabrics.add(fabric);
            }
        }
        return fabrics.isEmpty() ? null : String.join(",", fabrics);
    }

    /**
     * @return true once closed.
     */
    @Override
    public boolean isClosed()
    {
        return closed;
    }

    @Override
    public String toString()
    {
        return "BalancedChannel{" + target + ", " + state + "}";
    }
}
