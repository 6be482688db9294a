package io.reverb.rpc;

import io.reverb.rpc.internal.ChannelRuntime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
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

    private RpcChannel(final Builder builder)
    {
        this.runtime = new ChannelRuntime(builder);
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
    public <Req, Resp> reactor.core.publisher.Mono<Resp> newUnaryCall(
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
        /** Server address. */
        public final String uri;
        /** Interceptors, first outermost. */
        public final List<ClientInterceptor> interceptors = new ArrayList<>();
        /** Deadline for calls whose options have none, or null. */
        public Duration defaultDeadline;
        /** Largest inbound message payload. */
        public int maxInboundMessageSize = RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE;
        /** A Micrometer MeterRegistry, or null. */
        public Object meterRegistry;
        /** Interval of keep-alive PINGs while calls are active. */
        public Duration keepAliveTime = Duration.ofSeconds(30);
        /** How long to wait for a PING's answer before declaring the connection dead. */
        public Duration keepAliveTimeout = Duration.ofSeconds(10);
        /** First reconnect delay. */
        public Duration initialBackoff = Duration.ofMillis(100);
        /** Largest reconnect delay. */
        public Duration maxBackoff = Duration.ofSeconds(30);
        /** Timer scheduler for deadlines, keep-alive and backoff. */
        public Scheduler timerScheduler = Schedulers.parallel();

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
         * @return the channel (not yet connected).
         */
        public RpcChannel build()
        {
            return new RpcChannel(this);
        }
    }
}
