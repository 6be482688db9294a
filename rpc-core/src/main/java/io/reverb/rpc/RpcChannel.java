package io.reverb.rpc;

import io.reverb.rpc.internal.ChannelConfig;
import io.reverb.rpc.internal.ChannelRuntime;
import io.reverb.rpc.lb.BalancedChannel;
import io.reverb.rpc.resolver.NameResolvers;
import io.reverb.rpc.retry.HedgingPolicy;
import io.reverb.rpc.retry.RetryPolicy;
import io.reverb.rpc.retry.RetryThrottle;
import io.reverb.rpc.transport.TransportOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * A client's connection to a server, or to several replicas of it, shared by all stubs and calls (thread-safe).
 *
 * <p>Connects lazily on the first call. When the connection fails it reconnects with exponential backoff; calls
 * made while it cannot connect fail fast with UNAVAILABLE, unless their {@link CallOptions#withWaitForReady()}
 * asks them to wait (bounded by their deadline). When the server refuses this side's credentials, or this side the
 * server's (an auth token, a TLS certificate, TLS on one side only), calls fail with UNAUTHENTICATED instead, wait
 * for ready or not: that does not heal by waiting. A keep-alive PING detects a silent peer.
 *
 * <p>Several replicas: {@link #builder(List)} with several addresses, or {@link #builder(String)} with a resolver
 * target such as {@code dns:///host:port}. A load-balancing policy picks a replica per call
 * ({@link Builder#loadBalancingPolicy(String)}), optionally only among those whose health service reports SERVING
 * ({@link Builder#healthCheck(String)}); calls the server never saw are retried on another replica, and methods
 * given a {@link RetryPolicy} are retried per the policy ({@link io.reverb.rpc.lb.BalancedChannel} has the details;
 * interceptors then run once per attempt).
 *
 * <p>A call made inside a handler inherits the handled call's remaining deadline and is cancelled when the handled
 * call ends early, whether it is composed into the handler's publisher or subscribed on its own (see
 * {@link RpcContext}), unless its options say {@link CallOptions#withoutContextPropagation()}.
 */
public final class RpcChannel implements AutoCloseable
{
    private final ChannelRuntime runtime;
    private final BalancedChannel balanced;
    private final String target;
    private final Duration defaultDeadline;

    private RpcChannel(final ChannelConfig config)
    {
        this.runtime = new ChannelRuntime(config);
        this.balanced = null;
        this.target = runtime.uri();
        this.defaultDeadline = null;
    }

    private RpcChannel(final BalancedChannel balanced, final String target, final Duration defaultDeadline)
    {
        this.runtime = null;
        this.balanced = balanced;
        this.target = target;
        this.defaultDeadline = defaultDeadline;
    }

    /**
     * @param uri the server, e.g. {@code "shm://greeter"}, {@code "inproc://test"}.
     * @return a builder.
     */
    public static Builder builder(final String uri)
    {
        return new Builder(uri, null);
    }

    /**
     * @param addresses the replicas' addresses, any mix of schemes, e.g. {@code shm://a}, {@code tcp://host:7000}.
     * @return a builder of a channel that balances calls over them ({@code pick_first} unless told otherwise).
     */
    public static Builder builder(final List<String> addresses)
    {
        if (addresses.isEmpty())
        {
            throw new IllegalArgumentException("a channel needs at least one address");
        }
        return new Builder(String.join(",", addresses), List.copyOf(addresses));
    }

    /**
     * Starts a call when the returned Flux is subscribed (nothing is sent before). Stubs use
     * {@code io.reverb.rpc.stub.ClientCalls}, which adapts this to the four kinds.
     *
     * @param method   the method.
     * @param options  call options.
     * @param requests the requests; subscribed when the server asks for them.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the responses; ends with an {@link RpcException} unless the status is OK.
     */
    public <Req, Resp> Flux<Resp> newCall(
        final MethodDescriptor<Req, Resp> method, final CallOptions options, final Publisher<Req> requests)
    {
        return balanced != null ? balanced.newCall(method, withDefaultDeadline(options), requests) :
            runtime.newCall(method, options, requests);
    }

    /**
     * Starts a unary call when the returned Mono is subscribed. The cheapest path: the request travels with the
     * CALL frame and the response goes straight to the subscriber.
     *
     * @param method  the method.
     * @param options call options.
     * @param request the request.
     * @param <Req>   request type.
     * @param <Resp>  response type.
     * @return the response; an {@link RpcException} unless the status is OK.
     */
    public <Req, Resp> Mono<Resp> newUnaryCall(
        final MethodDescriptor<Req, Resp> method, final CallOptions options, final Req request)
    {
        return balanced != null ? balanced.newUnaryCall(method, withDefaultDeadline(options), request) :
            runtime.newUnaryCall(method, options, request);
    }

    /**
     * {@link #newCall(MethodDescriptor, CallOptions, Publisher)} for a bridge that reports the server's response
     * headers, trailers and status itself (reverb-grpc's grpc-java transport): they are recorded into
     * {@code context} before the returned Flux signals. The channel's interceptors run with that context; without
     * interceptors the call takes the same direct path as an unintercepted call. The request metadata sent is
     * {@link ClientCallContext#requestMetadata()}.
     *
     * @param method   the method.
     * @param options  call options.
     * @param requests the requests.
     * @param context  receives what the server answered; one call per context.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the responses.
     * @throws UnsupportedOperationException on a channel to several replicas.
     */
    public <Req, Resp> Flux<Resp> newCall(final MethodDescriptor<Req, Resp> method, final CallOptions options,
        final Publisher<Req> requests, final ClientCallContext context)
    {
        return singleAddressRuntime().newCall(method, options, requests, context);
    }

    /**
     * {@link #newUnaryCall(MethodDescriptor, CallOptions, Object)} recording the server's response headers,
     * trailers and status into {@code context} (see {@link #newCall(MethodDescriptor, CallOptions, Publisher,
     * ClientCallContext)}); without interceptors it is the unary fast path (request with the CALL frame).
     *
     * @param method  the method.
     * @param options call options.
     * @param request the request.
     * @param context receives what the server answered; one call per context.
     * @param <Req>   request type.
     * @param <Resp>  response type.
     * @return the response.
     * @throws UnsupportedOperationException on a channel to several replicas.
     */
    public <Req, Resp> Mono<Resp> newUnaryCall(final MethodDescriptor<Req, Resp> method, final CallOptions options,
        final Req request, final ClientCallContext context)
    {
        return singleAddressRuntime().newUnaryCall(method, options, request, context);
    }

    /**
     * Connects now rather than on the first call (a single-address channel).
     *
     * @return completes when a connection is usable; fails with an {@link RpcException} (UNAVAILABLE) when this
     * attempt cannot connect or the channel is closed.
     * @throws UnsupportedOperationException on a channel to several replicas.
     */
    public CompletableFuture<Void> connect()
    {
        return singleAddressRuntime().connectNow();
    }

    /**
     * @param listener runs each time the usable connection of this single-address channel stops taking new calls
     *                 (GOAWAY, failure, close), on a transport or timer thread; replaces the previous one.
     * @throws UnsupportedOperationException on a channel to several replicas.
     */
    public void onConnectionLost(final Runnable listener)
    {
        singleAddressRuntime().onConnectionLost(Objects.requireNonNull(listener, "listener"));
    }

    private ChannelRuntime singleAddressRuntime()
    {
        if (runtime == null)
        {
            throw new UnsupportedOperationException("calls with a ClientCallContext need a single-address channel: " + target);
        }
        return runtime;
    }

    private CallOptions withDefaultDeadline(final CallOptions options)
    {
        return defaultDeadline == null || options.deadline() != null ? options : options.withDeadlineAfter(defaultDeadline);
    }

    /**
     * @return the balancing side of a channel to several replicas (policy state, subchannels), or null for a
     * channel to one address.
     */
    public BalancedChannel balancer()
    {
        return balanced;
    }

    /**
     * @return the address this channel connects to, or its target (a resolver target, or the addresses joined
     * with commas).
     */
    public String uri()
    {
        return target;
    }

    /**
     * Closes the channel: pending calls fail with UNAVAILABLE, the connection is closed.
     */
    @Override
    public void close()
    {
        if (balanced != null)
        {
            balanced.close();
        }
        else
        {
            runtime.close();
        }
    }

    /**
     * @return true once closed.
     */
    public boolean isClosed()
    {
        return balanced != null ? balanced.isClosed() : runtime.isClosed();
    }

    @Override
    public String toString()
    {
        return "RpcChannel{" + target + "}";
    }

    /**
     * Configures an {@link RpcChannel}.
     */
    public static final class Builder
    {
        private final String uri;
        private final List<ClientInterceptor> interceptors = new ArrayList<>();
        private Duration defaultDeadline;
        private int maxInboundMessageSize = RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE;
        private Object meterRegistry;
        private Duration keepAliveTime = Duration.ofSeconds(30);
        private Duration keepAliveTimeout = Duration.ofSeconds(10);
        private boolean keepAliveWithoutCalls;
        private boolean transparentRetry = true;
        private Duration initialBackoff = Duration.ofMillis(100);
        private Duration maxBackoff = Duration.ofSeconds(30);
        private Duration reconnectWhileCallsWait = ChannelConfig.DEFAULT_RECONNECT_WHILE_CALLS_WAIT;
        private Scheduler timerScheduler = Schedulers.parallel();
        private TransportOptions transportOptions = TransportOptions.EMPTY;
        private final List<String> addresses;
        private String loadBalancingPolicy;
        private String healthService;
        private final Map<String, RetryPolicy> retryPolicies = new LinkedHashMap<>();
        private final Map<String, HedgingPolicy> hedgingPolicies = new LinkedHashMap<>();
        private int retryMaxTokens;
        private double retryTokenRatio;

        private Builder(final String uri, final List<String> addresses)
        {
            this.uri = Objects.requireNonNull(uri, "uri");
            this.addresses = addresses;
        }

        /**
         * @param policy {@code pick_first} (the default), {@code round_robin}, {@code peak_ewma} (latency-aware),
         *               or one registered through {@code io.reverb.rpc.lb.LoadBalancerProvider}.
         * @return this.
         */
        public Builder loadBalancingPolicy(final String policy)
        {
            this.loadBalancingPolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * Sends calls only to replicas whose {@code reverb.health.v1.Health} service reports SERVING for the
         * service (replicas without a health service count as serving).
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
         * Marks a method, or every method of a service, idempotent: its unary and server-streaming calls are
         * retried per the policy (within the retry budget, if {@link #retryThrottling} is set).
         *
         * @param methodOrService {@code "pkg.Service/Method"} or {@code "pkg.Service"}.
         * @param policy          the policy.
         * @return this.
         */
        public Builder retryPolicy(final String methodOrService, final RetryPolicy policy)
        {
            retryPolicies.put(Objects.requireNonNull(methodOrService, "methodOrService"),
                Objects.requireNonNull(policy, "policy"));
            return this;
        }

        /**
         * Marks a method, or every method of a service, idempotent and hedges its unary calls: another attempt to
         * another replica every hedging delay until one answers, the first answer wins and the others are cancelled
         * (see {@link HedgingPolicy}). Hedges share the retry budget of {@link #retryThrottling}. A method has a
         * retry policy or a hedging policy, not both.
         *
         * @param methodOrService {@code "pkg.Service/Method"} or {@code "pkg.Service"}.
         * @param policy          the policy.
         * @return this.
         */
        public Builder hedgingPolicy(final String methodOrService, final HedgingPolicy policy)
        {
            hedgingPolicies.put(Objects.requireNonNull(methodOrService, "methodOrService"),
                Objects.requireNonNull(policy, "policy"));
            return this;
        }

        /**
         * A retry budget (gRPC's retry throttling): retries stop while more than half of {@code maxTokens} were
         * spent by failures; each success gives back {@code tokenRatio}.
         *
         * @param maxTokens  1..1000.
         * @param tokenRatio (0, 1].
         * @return this.
         */
        public Builder retryThrottling(final int maxTokens, final double tokenRatio)
        {
            new RetryThrottle(maxTokens, tokenRatio); // validates now, naming the bad value
            this.retryMaxTokens = maxTokens;
            this.retryTokenRatio = tokenRatio;
            return this;
        }

        /**
         * @param interceptor an interceptor; the first added runs outermost.
         * @return this.
         */
        public Builder intercept(final ClientInterceptor interceptor)
        {
            interceptors.add(Objects.requireNonNull(interceptor, "interceptor"));
            return this;
        }

        /**
         * @param deadline deadline of calls whose options set none.
         * @return this.
         */
        public Builder defaultDeadline(final Duration deadline)
        {
            this.defaultDeadline = deadline;
            return this;
        }

        /**
         * @param bytes largest response payload accepted; larger ones fail the call with RESOURCE_EXHAUSTED.
         * @return this.
         */
        public Builder maxInboundMessageSize(final int bytes)
        {
            if (bytes <= 0)
            {
                throw new IllegalArgumentException("maxInboundMessageSize must be positive: " + bytes);
            }
            this.maxInboundMessageSize = bytes;
            return this;
        }

        /**
         * @param registry an {@code io.micrometer.core.instrument.MeterRegistry}, typed as Object so that
         *                 micrometer need not be on the class path when metrics are not used.
         * @return this.
         */
        public Builder meterRegistry(final Object registry)
        {
            this.meterRegistry = registry;
            return this;
        }

        /**
         * Keep-alive (default every 30 s, timeout 10 s, while calls are open): a connection whose PING is not answered
         * within {@code timeout} is closed and its calls fail with UNAVAILABLE, so a dead peer is noticed within
         * {@code interval + timeout}. A zero or negative interval turns keep-alive off.
         *
         * @param interval how often to PING while calls are active (or always: {@link #keepAliveWithoutCalls}).
         * @param timeout  how long to wait for the answer before failing the connection's calls with UNAVAILABLE.
         * @return this.
         */
        public Builder keepAlive(final Duration interval, final Duration timeout)
        {
            this.keepAliveTime = Objects.requireNonNull(interval, "interval");
            this.keepAliveTimeout = Objects.requireNonNull(timeout, "timeout");
            if (timeout.isNegative() || timeout.isZero())
            {
                throw new IllegalArgumentException("keep-alive timeout must be positive: " + timeout);
            }
            return this;
        }

        /**
         * PINGs also while the connection has no call (off by default, as in grpc-java), so that an idle channel
         * notices a dead peer within keep-alive interval + timeout and reconnects before the next call needs it.
         * The server must permit it: a server built with {@code RpcServer.Builder.permitKeepAliveWithoutCalls(false)}
         * closes such a connection with GOAWAY "too many pings" (the channel then PINGs half as often).
         *
         * @param enable true to PING idle connections.
         * @return this.
         */
        public Builder keepAliveWithoutCalls(final boolean enable)
        {
            this.keepAliveWithoutCalls = enable;
            return this;
        }

        /**
         * Transparent retry (on by default, as in grpc-java): a unary or server-streaming call that the server refused
         * before any handler ran (it sent GOAWAY below the call's stream id, or refused the call while shutting down
         * gracefully) is sent again on a new connection, within its deadline, at most 5 times, so that a server
         * replaced by another on the same address loses no call. Client- and bidi-streaming calls are not resent
         * (their requests are gone with the publisher); they fail UNAVAILABLE with
         * {@code CallFailureCause.Reason.GOAWAY} or {@code REFUSED_BY_SERVER}. Turn it off where a layer above
         * retries refused calls itself (reverb-grpc does: grpc-java's own transparent retry).
         *
         * @param enable false to fail refused calls with UNAVAILABLE instead.
         * @return this.
         */
        public Builder transparentRetry(final boolean enable)
        {
            this.transparentRetry = enable;
            return this;
        }

        /**
         * @param initial first reconnect delay.
         * @param max     largest reconnect delay.
         * @return this.
         */
        public Builder reconnectBackoff(final Duration initial, final Duration max)
        {
            this.initialBackoff = Objects.requireNonNull(initial, "initial");
            this.maxBackoff = Objects.requireNonNull(max, "max");
            return this;
        }

        /**
         * While calls want a connection (they wait for one, or keep failing fast during the backoff), the next attempt
         * comes at most {@code interval} after the last failed one (default 1 s), however far the exponential
         * {@link #reconnectBackoff} has grown: a server back after a long outage serves its callers within about that
         * long, instead of after up to the maximum backoff. Connections are made on demand, so a channel no call needs
         * makes no attempt at all. A fail-fast call made during the backoff still fails at once (as in gRPC), but
         * brings the next attempt forward. Use the maximum backoff here to keep attempts purely exponential.
         *
         * @param interval positive.
         * @return this.
         */
        public Builder reconnectWhileCallsWait(final Duration interval)
        {
            if (interval.isNegative() || interval.isZero())
            {
                throw new IllegalArgumentException("reconnectWhileCallsWait must be positive: " + interval);
            }
            this.reconnectWhileCallsWait = interval;
            return this;
        }

        /**
         * @param scheduler timer scheduler for deadlines, keep-alive and backoff.
         * @return this.
         */
        public Builder timerScheduler(final Scheduler scheduler)
        {
            this.timerScheduler = Objects.requireNonNull(scheduler, "scheduler");
            return this;
        }

        /**
         * @param options the transport's settings (for {@code shm://}, {@code tcp://}, {@code rdma://}:
         *                {@code io.reverb.rdma.rpc.EngineOptions}); the address's query parameters override single
         *                fields of them.
         * @return this.
         */
        public Builder transportOptions(final TransportOptions options)
        {
            this.transportOptions = Objects.requireNonNull(options, "options");
            return this;
        }

        /**
         * Builds a channel from a copy of this builder's settings: changing or reusing the builder afterwards does
         * not affect the channel.
         *
         * @return the channel (not yet connected).
         */
        public RpcChannel build()
        {
            final boolean balancing = addresses != null || loadBalancingPolicy != null || healthService != null ||
                !retryPolicies.isEmpty() || !hedgingPolicies.isEmpty() || retryMaxTokens > 0 ||
                NameResolvers.isResolverTarget(uri);
            if (!balancing)
            {
                return new RpcChannel(new ChannelConfig(uri, interceptors, defaultDeadline, maxInboundMessageSize,
                    meterRegistry, keepAliveTime, keepAliveTimeout, keepAliveWithoutCalls, transparentRetry,
                    initialBackoff, maxBackoff, reconnectWhileCallsWait, timerScheduler, transportOptions));
            }
            // one single-address channel per replica, from a copy of these settings (the builder may change later);
            // the default deadline is applied once per call by the balancing side, not per attempt, and refused calls
            // are retried there too (on another pick), not by the replica's channel
            final List<ClientInterceptor> chain = List.copyOf(interceptors);
            final int maxInbound = maxInboundMessageSize;
            final Object registry = meterRegistry;
            final Duration pingEvery = keepAliveTime;
            final Duration pingTimeout = keepAliveTimeout;
            final boolean pingIdle = keepAliveWithoutCalls;
            final Duration backoff = initialBackoff;
            final Duration backoffMax = maxBackoff;
            final Duration whileCallsWait = reconnectWhileCallsWait;
            final Scheduler timer = timerScheduler;
            final TransportOptions transport = transportOptions;
            final BalancedChannel.Builder b = addresses != null ? BalancedChannel.builder(addresses) :
                BalancedChannel.builder(uri);
            b.channelFactory(address -> new RpcChannel(new ChannelConfig(address.toString(), chain, null, maxInbound,
                registry, pingEvery, pingTimeout, pingIdle, false, backoff, backoffMax, whileCallsWait, timer, transport)));
            b.timerScheduler(timer);
            if (loadBalancingPolicy != null)
            {
                b.loadBalancingPolicy(loadBalancingPolicy);
            }
            if (healthService != null)
            {
                b.healthCheck(healthService);
            }
            retryPolicies.forEach(b::retryPolicy);
            hedgingPolicies.forEach(b::hedgingPolicy);
            if (retryMaxTokens > 0)
            {
                b.retryThrottling(retryMaxTokens, retryTokenRatio);
            }
            return new RpcChannel(b.build(), uri, defaultDeadline);
        }
    }
}
