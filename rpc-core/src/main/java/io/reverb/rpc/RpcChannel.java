package io.reverb.rpc;

import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.transport.TransportOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * A client's connection to a server, or to several replicas of it, shared by all stubs and calls (thread-safe).
 *
 * <p>Every channel runs a load-balancing policy ({@code pick_first} unless {@link Builder#loadBalancingPolicy} says
 * otherwise) over one subchannel per address; a subchannel owns the connection to its address. It connects lazily
 * on the first call. When the connection fails it reconnects with exponential backoff; calls made while it cannot
 * connect fail fast with UNAVAILABLE, unless their {@link CallOptions#withWaitForReady()} asks them to wait (bounded
 * by their deadline). When the server refuses this side's credentials, or this side the server's (an auth token, a
 * TLS certificate, TLS on one side only), calls fail with UNAUTHENTICATED instead, wait for ready or not: that does
 * not heal by waiting. A keep-alive PING detects a silent peer.
 *
 * <p>Several replicas: {@link #builder(List)} with several addresses, or {@link #builder(String)} with a resolver
 * target such as {@code dns:///host:port}. The policy picks a replica per call, optionally only among those whose
 * health service reports SERVING ({@link Builder#healthCheck(String)}); calls the server never saw are retried on
 * another replica, and methods given a {@link RetryPolicy} are retried per the policy (interceptors then run once
 * per attempt).
 *
 * <p>A call made inside a handler inherits the handled call's remaining deadline and is cancelled when the handled
 * call ends early, whether it is composed into the handler's publisher or subscribed on its own (see
 * {@link RpcContext}), unless its options say {@link CallOptions#withoutContextPropagation()}.
 *
 * <p>This class is the API (as grpc-java's {@code ManagedChannel}); its one implementation lives in rpc-core's
 * implementation packages and is reached through {@link RpcImplementation}, so this package imports none of them.
 * One connection without a balancer or reconnect loop (for a bridge that has its own, such as reverb-grpc): see
 * {@link RpcClientConnection}.
 */
public abstract class RpcChannel implements AutoCloseable
{
    /**
     * For the implementation only: a channel is made by {@link Builder#build()}.
     */
    protected RpcChannel()
    {
    }

    /**
     * @param uri the server, e.g. {@code "shm://greeter"}, {@code "inproc://test"}, or a resolver target such as
     *            {@code "dns:///host:7000"}.
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
    public abstract <Req, Resp> Flux<Resp> newCall(
        MethodDescriptor<Req, Resp> method, CallOptions options, Publisher<Req> requests);

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
    public abstract <Req, Resp> Mono<Resp> newUnaryCall(
        MethodDescriptor<Req, Resp> method, CallOptions options, Req request);

    /**
     * The channel's connectivity, as grpc-java's {@code ManagedChannel.getState}: for a channel to one address, its
     * connection's (READY while it takes calls, IDLE when none is needed yet, CONNECTING, TRANSIENT_FAILURE after a
     * failed attempt); for several, what the load-balancing policy reports over its subchannels; SHUTDOWN once closed.
     *
     * @param requestConnection true to connect now if the channel is IDLE (rather than on the first call).
     * @return the state now.
     */
    public abstract ConnectivityState state(boolean requestConnection);

    /**
     * Runs {@code callback} once, when the state is no longer {@code source} (at once if it already is not), as
     * grpc-java's {@code ManagedChannel.notifyWhenStateChanged}; on the thread that changed the state.
     *
     * @param source   the state the caller last saw.
     * @param callback what to run.
     */
    public abstract void notifyWhenStateChanged(ConnectivityState source, Runnable callback);

    /**
     * Which fabric the channel's calls travel over now: {@code "shm"}, {@code "rdma"}, {@code "tcp"} (or
     * {@code "inproc"}), as the connections of its READY subchannels report it; a {@code reverb://} channel reports
     * the fabric its connection settled on. Several READY subchannels on different fabrics give them sorted and joined
     * with commas ({@code "shm,tcp"}).
     *
     * @return the fabric, or null while no connection takes calls (before the first call, or while reconnecting).
     */
    public abstract String fabric();

    /**
     * @return the address this channel connects to, or its target (a resolver target, or the addresses joined
     * with commas).
     */
    public abstract String uri();

    /**
     * Closes the channel: pending calls fail with UNAVAILABLE, the connections are closed.
     */
    @Override
    public abstract void close();

    /**
     * @return true once closed.
     */
    public abstract boolean isClosed();

    /**
     * Configures an {@link RpcChannel}.
     */
    public static final class Builder
    {
        /** Messages smaller than this are not compressed unless {@link #minCompressionSize} says otherwise. */
        public static final int DEFAULT_MIN_COMPRESSION_SIZE = 1024;
        /**
         * While calls want a connection (waiting, or failing fast and coming again), attempts are at most this far
         * apart, however far the exponential backoff has grown.
         */
        public static final Duration DEFAULT_RECONNECT_WHILE_CALLS_WAIT = Duration.ofSeconds(1);

        private final String uri;
        private final List<ClientInterceptor> interceptors = new ArrayList<>();
        private Duration defaultDeadline;
        private int maxInboundMessageSize = RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE;
        private int maxInboundMetadataSize = RpcServer.Builder.DEFAULT_MAX_INBOUND_METADATA_SIZE;
        private CodecRegistry codecs = CodecRegistry.defaults();
        private String compression;
        private int minCompressionSize = DEFAULT_MIN_COMPRESSION_SIZE;
        private Object meterRegistry;
        private Duration keepAliveTime = Duration.ofSeconds(30);
        private Duration keepAliveTimeout = Duration.ofSeconds(10);
        private boolean keepAliveWithoutCalls;
        private boolean transparentRetry = true;
        private Duration initialBackoff = Duration.ofMillis(100);
        private Duration maxBackoff = Duration.ofSeconds(30);
        private Duration reconnectWhileCallsWait = DEFAULT_RECONNECT_WHILE_CALLS_WAIT;
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
            // validated now, naming the bad value
            if (maxTokens <= 0 || maxTokens > 1000)
            {
                throw new IllegalArgumentException("maxTokens must be 1..1000: " + maxTokens);
            }
            if (!(tokenRatio > 0 && tokenRatio <= 1))
            {
                throw new IllegalArgumentException("tokenRatio must be in (0, 1]: " + tokenRatio);
            }
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
         * Compresses every request message of at least {@link #minCompressionSize} bytes with this codec, unless
         * the call names another ({@link CallOptions#withCompression(String)}).
         * Off by default, as in grpc-java: on shm:// and rdma:// compressing costs more time than it saves; it pays
         * where the link is slow (tcp:// between hosts) and the messages compress.
         *
         * @param codecName a codec of {@link #codecRegistry} ("gzip" is built in), or "identity" or null for none.
         * @return this.
         * @throws IllegalArgumentException if the registry has no codec of that name.
         */
        public Builder compression(final String codecName)
        {
            this.compression = codecs.defaultCodec(codecName);
            return this;
        }

        /**
         * @param registry the codecs this channel compresses with and decompresses (default: {@link CodecRegistry#defaults()},
         *                 gzip). A peer's message compressed with a codec not in it fails its call (UNIMPLEMENTED on a
         *                 server, INTERNAL on a client).
         * @return this.
         */
        public Builder codecRegistry(final CodecRegistry registry)
        {
            this.codecs = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /**
         * @param bytes messages whose serialized size is below this are sent uncompressed whatever the codec
         *              (default {@value #DEFAULT_MIN_COMPRESSION_SIZE}): a small message gains little and costs a
         *              compressor's set-up. 0 compresses every message.
         * @return this.
         */
        public Builder minCompressionSize(final int bytes)
        {
            if (bytes < 0)
            {
                throw new IllegalArgumentException("minCompressionSize must not be negative: " + bytes);
            }
            this.minCompressionSize = bytes;
            return this;
        }

        /**
         * @return the codecs (see {@link #codecRegistry(CodecRegistry)}).
         */
        public CodecRegistry codecRegistry()
        {
            return codecs;
        }

        /**
         * @return the default codec's name, or null for none (see {@link #compression(String)}).
         */
        public String compression()
        {
            return compression;
        }

        /**
         * @return the size below which messages are not compressed.
         */
        public int minCompressionSize()
        {
            return minCompressionSize;
        }

        /**
         * @param bytes most response metadata (headers, and trailers apart) a call accepts (default
         *              {@value RpcServer.Builder#DEFAULT_MAX_INBOUND_METADATA_SIZE}, counted as gRPC counts it: each
         *              entry's name and value plus 32 bytes); a call whose server sends more fails
         *              RESOURCE_EXHAUSTED (grpc-java's {@code ManagedChannelBuilder.maxInboundMetadataSize}).
         * @return this.
         */
        public Builder maxInboundMetadataSize(final int bytes)
        {
            if (bytes <= 0)
            {
                throw new IllegalArgumentException("maxInboundMetadataSize must be positive: " + bytes);
            }
            this.maxInboundMetadataSize = bytes;
            return this;
        }

        /** @return most response metadata a call accepts, in bytes. */
        public int maxInboundMetadataSize()
        {
            return maxInboundMetadataSize;
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
            for (final String name : hedgingPolicies.keySet())
            {
                if (retryPolicies.containsKey(name))
                {
                    throw new IllegalArgumentException(name + " has both a retry policy and a hedging policy: choose one");
                }
            }
            return RpcImplementation.get().newChannel(this);
        }

        // ------------------------------------------------------------------ the settings, read by the implementation

        /** @return the address or target given to {@link RpcChannel#builder(String)} (addresses joined by commas). */
        public String target()
        {
            return uri;
        }

        /** @return the addresses given to {@link RpcChannel#builder(List)}, or null for a single address or target. */
        public List<String> addresses()
        {
            return addresses;
        }

        /** @return the interceptors, first outermost (a copy). */
        public List<ClientInterceptor> interceptors()
        {
            return List.copyOf(interceptors);
        }

        /** @return the deadline of calls whose options set none, or null. */
        public Duration defaultDeadline()
        {
            return defaultDeadline;
        }

        /** @return the largest response payload accepted. */
        public int maxInboundMessageSize()
        {
            return maxInboundMessageSize;
        }

        /** @return the Micrometer MeterRegistry, or null. */
        public Object meterRegistry()
        {
            return meterRegistry;
        }

        /** @return the keep-alive PING interval (zero or negative: off). */
        public Duration keepAliveTime()
        {
            return keepAliveTime;
        }

        /** @return how long a PING's answer may take. */
        public Duration keepAliveTimeout()
        {
            return keepAliveTimeout;
        }

        /** @return whether idle connections are PINGed too. */
        public boolean keepAliveWithoutCalls()
        {
            return keepAliveWithoutCalls;
        }

        /** @return whether refused calls are sent again on a new connection. */
        public boolean transparentRetry()
        {
            return transparentRetry;
        }

        /** @return the first reconnect delay. */
        public Duration initialBackoff()
        {
            return initialBackoff;
        }

        /** @return the largest reconnect delay. */
        public Duration maxBackoff()
        {
            return maxBackoff;
        }

        /** @return the longest gap between attempts while calls want a connection. */
        public Duration reconnectWhileCallsWait()
        {
            return reconnectWhileCallsWait;
        }

        /** @return the timer scheduler. */
        public Scheduler timerScheduler()
        {
            return timerScheduler;
        }

        /** @return the transport's settings. */
        public TransportOptions transportOptions()
        {
            return transportOptions;
        }

        /** @return the load-balancing policy's name, or null for the default ({@code pick_first}). */
        public String loadBalancingPolicy()
        {
            return loadBalancingPolicy;
        }

        /** @return the service whose health decides which replicas are picked, or null for no health checking. */
        public String healthCheck()
        {
            return healthService;
        }

        /** @return the retry policies by method or service name (a copy). */
        public Map<String, RetryPolicy> retryPolicies()
        {
            return Map.copyOf(retryPolicies);
        }

        /** @return the hedging policies by method or service name (a copy). */
        public Map<String, HedgingPolicy> hedgingPolicies()
        {
            return Map.copyOf(hedgingPolicies);
        }

        /** @return the retry budget's size, or 0 for no retry throttling. */
        public int retryMaxTokens()
        {
            return retryMaxTokens;
        }

        /** @return the tokens a success gives back to the retry budget. */
        public double retryTokenRatio()
        {
            return retryTokenRatio;
        }
    }
}
