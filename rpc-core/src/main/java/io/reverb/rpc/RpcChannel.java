package io.reverb.rpc;

import io.reverb.rpc.internal.ChannelConfig;
import io.reverb.rpc.internal.ChannelRuntime;
import io.reverb.rpc.transport.TransportOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * A client's connection to one server address, shared by all stubs and calls (thread-safe).
 *
 * <p>Connects lazily on the first call. When the connection fails it reconnects with exponential backoff; calls
 * made while it cannot connect fail fast with UNAVAILABLE, unless their {@link CallOptions#withWaitForReady()}
 * asks them to wait (bounded by their deadline). A keep-alive PING detects a silent peer.
 */
public final class RpcChannel implements AutoCloseable
{
    private final ChannelRuntime runtime;

    private RpcChannel(final ChannelConfig config)
    {
        this.runtime = new ChannelRuntime(config);
    }

    /**
     * @param uri the server, e.g. {@code "shm://greeter"}, {@code "inproc://test"}.
     * @return a builder.
     */
    public static Builder builder(final String uri)
    {
        return new Builder(uri);
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
        return runtime.newCall(method, options, requests);
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
        return runtime.newUnaryCall(method, options, request);
    }

    /**
     * @return the address this channel connects to.
     */
    public String uri()
    {
        return runtime.uri();
    }

    /**
     * Closes the channel: pending calls fail with UNAVAILABLE, the connection is closed.
     */
    @Override
    public void close()
    {
        runtime.close();
    }

    /**
     * @return true once closed.
     */
    public boolean isClosed()
    {
        return runtime.isClosed();
    }

    @Override
    public String toString()
    {
        return "RpcChannel{" + runtime.uri() + "}";
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
        private Duration initialBackoff = Duration.ofMillis(100);
        private Duration maxBackoff = Duration.ofSeconds(30);
        private Scheduler timerScheduler = Schedulers.parallel();
        private TransportOptions transportOptions = TransportOptions.EMPTY;

        private Builder(final String uri)
        {
            this.uri = Objects.requireNonNull(uri, "uri");
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
         * @param interval how often to PING while calls are active.
         * @param timeout  how long to wait for the answer before failing the connection's calls with UNAVAILABLE.
         * @return this.
         */
        public Builder keepAlive(final Duration interval, final Duration timeout)
        {
            this.keepAliveTime = Objects.requireNonNull(interval, "interval");
            this.keepAliveTimeout = Objects.requireNonNull(timeout, "timeout");
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
            return new RpcChannel(new ChannelConfig(uri, interceptors, defaultDeadline, maxInboundMessageSize,
                meterRegistry, keepAliveTime, keepAliveTimeout, initialBackoff, maxBackoff, timerScheduler,
                transportOptions));
        }
    }
}
