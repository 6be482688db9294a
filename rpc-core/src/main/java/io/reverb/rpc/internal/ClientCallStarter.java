package io.reverb.rpc.internal;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.ClientInterceptor;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.Status;
import io.reverb.rpc.compression.Codec;
import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.transport.UnauthenticatedException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.reactivestreams.Publisher;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.ContextView;

/**
 * What starts client calls on one address, shared by its two subclasses: the calls as Reactor publishers (the
 * interceptor chain, the deadline, the unary fast path), the timers, the metrics, and what those calls ask of their
 * owner (a connection: {@code acquire}). The subclasses: {@link SubchannelConnector} (a subchannel's connector: it
 * reconnects with backoff and keeps calls waiting while it cannot connect) and {@link ClientTransportImpl} (the client
 * transport of one connection: one attempt, no reconnect of its own).
 */
public abstract class ClientCallStarter
{
    final ChannelConfig config;
    private final CallMetrics metrics;
    private final ClientInterceptor[] interceptors;
    /** The keep-alive interval of new connections: doubled each time a server said "too many pings" (as grpc-java). */
    private volatile long keepAliveNanos;
    /** What calls whose options name no codec compress with (the channel's {@code compression}). */
    private final OutboundCompression defaultCompression;

    ClientCallStarter(final ChannelConfig config)
    {
        this(config, null);
    }

    /**
     * @param config  the settings.
     * @param metrics the call metrics to share (a subchannel's connections count their calls as the subchannel's),
     *                or null for metrics of its own.
     */
    ClientCallStarter(final ChannelConfig config, final CallMetrics metrics)
    {
        this.config = config;
        this.metrics = metrics != null ? metrics : CallMetrics.create(config.meterRegistry, "client");
        this.interceptors = config.interceptors;
        this.keepAliveNanos = config.keepAliveTime.toNanos();
        final Codec codec = config.compression == null ? null : config.codecs.lookup(config.compression);
        this.defaultCompression = codec == null ? OutboundCompression.NONE :
            new OutboundCompression(codec, config.minCompressionSize);
    }

    /**
     * @param options a call's options.
     * @return what the call's requests are compressed with, or null when the options name a codec the channel's
     * registry does not have (the call then fails INTERNAL, as grpc-java's does).
     */
    final OutboundCompression compressionOf(final CallOptions options)
    {
        final String name = options.compression();
        if (name == null)
        {
            return defaultCompression;
        }
        if (CodecRegistry.IDENTITY.equals(name))
        {
            return OutboundCompression.NONE;
        }
        final Codec codec = options.compressor() != null ? options.compressor() : config.codecs.lookup(name);
        return codec == null ? null : new OutboundCompression(codec, config.minCompressionSize);
    }

    private static Status unknownCompressor(final CallOptions options)
    {
        return Status.INTERNAL.withDescription("Unable to find compressor by name " + options.compression() +
            " (register it in the channel's codecRegistry)");
    }

    // ------------------------------------------------------------------ what calls and connections ask of the owner

    /**
     * Gives the call a usable connection ({@link ClientCall#onConnection}), parks it until there is one, or fails it
     * ({@link ClientCall#failBeforeStart}).
     */
    abstract void acquire(ClientCall<?, ?> call);

    /**
     * The call lost its connection before it was sent (a race with GOAWAY), or was refused and will be sent again:
     * acquire again, off the transport's thread.
     */
    abstract void reacquireLater(ClientCall<?, ?> call);

    /** The call ended while parked: forget it. */
    abstract void removeWaiter(ClientCall<?, ?> call);

    /** @return the keep-alive interval for a new connection (0 or less: no keep-alive). */
    long keepAliveNanos()
    {
        return keepAliveNanos;
    }

    /** A server closed a connection for PINGs too frequent: the next connections PING half as often. */
    void keepAliveTooFrequent()
    {
        final long before = keepAliveNanos;
        if (before > 0)
        {
            final long after = before > Long.MAX_VALUE / 2 ? Long.MAX_VALUE : before * 2;
            keepAliveNanos = after;
            WireConnection.PEER_LOG.log("keep-alive too frequent", config.uri + " answered GOAWAY \"" +
                KeepAliveEnforcer.TOO_MANY_PINGS + "\": keep-alive interval raised from " + before / 1_000_000 +
                " ms to " + after / 1_000_000 + " ms", null);
        }
    }

    /**
     * @param error why a connection attempt failed.
     * @return the status of the calls it fails: UNAUTHENTICATED when the server refused this side's credentials (or
     * this side the server's), which does not heal by waiting; UNAVAILABLE ({@code CONNECT_FAILED}) otherwise.
     */
    final Status connectFailure(final Throwable error)
    {
        final Throwable cause = error instanceof CompletionException && error.getCause() != null ?
            error.getCause() : error;
        return cause instanceof UnauthenticatedException
            ? Status.UNAUTHENTICATED.withDescription("cannot connect to " + config.uri + ": " + cause.getMessage())
                .withCause(cause)
            : Status.UNAVAILABLE.withDescription("cannot connect to " + config.uri + ": " + cause.getMessage())
                .withCause(CallFailureCause.of(CallFailureCause.Reason.CONNECT_FAILED, cause));
    }

    final ChannelConfig config()
    {
        return config;
    }

    /**
     * A call's deadline: on the shared {@link DeadlineTimer} unless the user gave the channel a timer scheduler of
     * their own (e.g. a virtual-time one in tests), which then keeps all of the channel's timers.
     */
    final Disposable scheduleDeadline(final Runnable task, final long delayNanos)
    {
        return config.timerScheduler == Schedulers.parallel() ? DeadlineTimer.shared().schedule(task, delayNanos) :
            config.timerScheduler.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
    }

    final Scheduler timer()
    {
        return config.timerScheduler;
    }

    final CallMetrics metrics()
    {
        return metrics;
    }

    /**
     * @return the address.
     */
    public final String uri()
    {
        return config.uri;
    }

    // ------------------------------------------------------------------ calls

    /**
     * A call's deadline, computed once per call, here and nowhere else: the options' deadline, else the default one
     * fixed now; a call made inside a handler finishes no later than the call being handled. A channel computes it
     * once per call, above its attempts ({@link #attemptCall}, {@link #attemptUnary} take it as computed); a single
     * connection's calls ({@link #newCall}, {@link #newUnaryCall}) compute it when subscribed.
     *
     * @param options         the call's options.
     * @param defaultDeadline how long a call whose options set no deadline may take, or null for no limit.
     * @param parent          the call being handled when this one was made, or null.
     * @return the deadline, or null for none.
     */
    public static Deadline callDeadline(final CallOptions options, final Duration defaultDeadline,
        final RpcContext parent)
    {
        Deadline deadline = options.deadline();
        if (deadline == null && defaultDeadline != null)
        {
            deadline = Deadline.after(defaultDeadline);
        }
        if (parent != null && parent.deadline() != null && !options.isDetached())
        {
            deadline = parent.deadline().minimum(deadline);
        }
        return deadline;
    }

    /**
     * @param options   the call's options.
     * @param context   the subscriber's Reactor context.
     * @param assembled the handled call current when the call was assembled, or null.
     * @return the handled call a call made now is a child of (its deadline and cancellation), or null.
     */
    public static RpcContext parentOf(final CallOptions options, final ContextView context, final RpcContext assembled)
    {
        return ServerCallScope.parent(options.isDetached(), RpcContext.from(context), assembled);
    }

    /**
     * @param options a call's options.
     * @return the handled call current while the call is assembled (when not detached), or null.
     */
    public static RpcContext assembledParent(final CallOptions options)
    {
        return options.isDetached() ? null : ServerCallScope.current();
    }

    /**
     * One attempt of a channel's call, without interceptors (the channel ran them once for the whole call): its
     * deadline and the handled call it is a child of were computed by the channel, once per call.
     *
     * @param method   the method.
     * @param options  call options (their deadline is not read: {@code deadline} is).
     * @param requests the requests.
     * @param context  receives what the server answered, or null.
     * @param deadline the call's deadline ({@link #callDeadline}), or null.
     * @param parent   the handled call this one is a child of, or null.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the responses.
     */
    public final <Req, Resp> Flux<Resp> attemptCall(final MethodDescriptor<Req, Resp> method,
        final CallOptions options, final Publisher<Req> requests, final ClientCallContext context,
        final Deadline deadline, final RpcContext parent)
    {
        return new CallFlux<>(this, method, options, requests, context, deadline, parent);
    }

    /**
     * One attempt of a channel's unary call: the request travels with the CALL frame and the response goes straight to
     * the subscriber. As {@link #attemptCall}.
     *
     * @param method   the method.
     * @param options  call options (their deadline is not read: {@code deadline} is).
     * @param request  the request.
     * @param context  receives what the server answered, or null.
     * @param deadline the call's deadline ({@link #callDeadline}), or null.
     * @param parent   the handled call this one is a child of, or null.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the response.
     */
    public final <Req, Resp> Mono<Resp> attemptUnary(final MethodDescriptor<Req, Resp> method,
        final CallOptions options, final Req request, final ClientCallContext context, final Deadline deadline,
        final RpcContext parent)
    {
        return new UnaryMono<>(this, method, options, request, context, deadline, parent);
    }

    /**
     * Starts one attempt of a channel's unary call now, for {@code subscriber}: {@link #attemptUnary} without the Mono
     * (the channel's unary fast path subscribes its own subscriber straight to the call).
     *
     * @param method     the method.
     * @param options    call options (their deadline is not read: {@code deadline} is).
     * @param request    the request.
     * @param deadline   the call's deadline ({@link #callDeadline}), or null.
     * @param parent     the handled call this one is a child of, or null.
     * @param subscriber gets the response.
     * @param <Req>      request type.
     * @param <Resp>     response type.
     */
    public final <Req, Resp> void startUnaryAttempt(final MethodDescriptor<Req, Resp> method,
        final CallOptions options, final Req request, final Deadline deadline, final RpcContext parent,
        final CoreSubscriber<? super Resp> subscriber)
    {
        final OutboundCompression compression = compressionOf(options);
        if (compression == null)
        {
            Operators.error(subscriber, unknownCompressor(options).asException());
            return;
        }
        new UnaryClientCall<>(this, method, request, null, options.metadata(), deadline, options.isWaitForReady())
            .inheritCancellation(parent).compressWith(compression).start(subscriber);
    }

    /**
     * A call of any kind; each subscription is a new call.
     *
     * @param method   the method.
     * @param options  call options.
     * @param requests the requests.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the responses.
     */
    public final <Req, Resp> Flux<Resp> newCall(
        final MethodDescriptor<Req, Resp> method, final CallOptions options, final Publisher<Req> requests)
    {
        if (interceptors.length == 0)
        {
            return new CallFlux<>(this, method, options, requests, null);
        }
        return intercepted(method, options, requests, null);
    }

    /**
     * A call that records what the server answered into {@code context}, and takes the direct path when there are no
     * interceptors.
     *
     * @param method   the method.
     * @param options  call options.
     * @param requests the requests.
     * @param context  receives the server's headers, trailers and status; one call per context.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the responses.
     */
    public final <Req, Resp> Flux<Resp> newCall(final MethodDescriptor<Req, Resp> method, final CallOptions options,
        final Publisher<Req> requests, final ClientCallContext context)
    {
        Objects.requireNonNull(context, "context");
        if (interceptors.length == 0)
        {
            return new CallFlux<>(this, method, options, requests, context);
        }
        return intercepted(method, options, requests, context);
    }

    /**
     * A unary call recording what the server answered into {@code context}; the unary fast path when there are no
     * interceptors.
     *
     * @param method  the method.
     * @param options call options.
     * @param request the request.
     * @param context receives the server's headers, trailers and status; one call per context.
     * @param <Req>   request type.
     * @param <Resp>  response type.
     * @return the response.
     */
    public final <Req, Resp> Mono<Resp> newUnaryCall(final MethodDescriptor<Req, Resp> method,
        final CallOptions options, final Req request, final ClientCallContext context)
    {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(context, "context");
        if (interceptors.length == 0)
        {
            return new UnaryMono<>(this, method, options, request, context);
        }
        return unaryResult(method, intercepted(method, options, Mono.just(request), context));
    }

    /**
     * A unary call: without interceptors the request travels with the CALL frame and the response goes straight to
     * the subscriber, without intermediate operators.
     *
     * @param method  the method.
     * @param options call options.
     * @param request the request.
     * @param <Req>   request type.
     * @param <Resp>  response type.
     * @return the response.
     */
    public final <Req, Resp> Mono<Resp> newUnaryCall(
        final MethodDescriptor<Req, Resp> method, final CallOptions options, final Req request)
    {
        Objects.requireNonNull(request, "request");
        if (interceptors.length == 0)
        {
            return new UnaryMono<>(this, method, options, request, null);
        }
        return unaryResult(method, intercepted(method, options, Mono.just(request), null));
    }

    /**
     * @param method    the method.
     * @param responses the responses of a unary call made as a stream (through interceptors).
     * @param <Resp>    response type.
     * @return the one response; INTERNAL when there was none or more than one.
     */
    public static <Resp> Mono<Resp> unaryResult(final MethodDescriptor<?, Resp> method, final Flux<Resp> responses)
    {
        // a second response is the server's error, reported as grpc-java and the unary path do (INTERNAL), not as
        // Reactor's IndexOutOfBoundsException; take(2) cancels the call when it comes
        return responses
            .take(2)
            .collectList()
            .flatMap(values -> values.size() == 1 ? Mono.just(values.get(0)) : Mono.error(Status.INTERNAL
                .withDescription((values.isEmpty() ? "No value" : "More than one value") + " received for " +
                method.fullMethodName()).asException()));
    }

    private <Req, Resp> Flux<Resp> intercepted(final MethodDescriptor<Req, Resp> method, final CallOptions options,
        final Publisher<Req> requests, final ClientCallContext given)
    {
        return Flux.defer(() ->
        {
            final ClientCallContext context = given != null ? given : new ClientCallContext(method, options);
            ClientInterceptor.Next<Req, Resp> next = r -> new CallFlux<>(this, method, options, r, context);
            for (int i = interceptors.length - 1; i >= 0; i--)
            {
                final ClientInterceptor interceptor = interceptors[i];
                final ClientInterceptor.Next<Req, Resp> inner = next;
                next = r -> interceptor.interceptCall(context, r, inner);
            }
            return next.call(Flux.from(requests));
        });
    }

    /**
     * A unary call as a Mono: each subscription is a new call. Its deadline and parent are either computed when
     * subscribed (a single connection's call) or given (a channel's attempt).
     */
    private static final class UnaryMono<Req, Resp> extends Mono<Resp>
    {
        private final ClientCallStarter host;
        private final MethodDescriptor<Req, Resp> method;
        private final CallOptions options;
        private final Req request;
        private final RpcContext assembled;
        private final ClientCallContext context;
        /** True when {@link #deadline} and {@link #parent} were given: nothing is computed at subscription. */
        private final boolean given;
        private final Deadline deadline;
        private final RpcContext parent;

        UnaryMono(final ClientCallStarter host, final MethodDescriptor<Req, Resp> method, final CallOptions options,
            final Req request, final ClientCallContext context)
        {
            this.host = host;
            this.method = method;
            this.options = options;
            this.request = request;
            this.assembled = assembledParent(options);
            this.context = context;
            this.given = false;
            this.deadline = null;
            this.parent = null;
        }

        UnaryMono(final ClientCallStarter host, final MethodDescriptor<Req, Resp> method, final CallOptions options,
            final Req request, final ClientCallContext context, final Deadline deadline, final RpcContext parent)
        {
            this.host = host;
            this.method = method;
            this.options = options;
            this.request = request;
            this.assembled = null;
            this.context = context;
            this.given = true;
            this.deadline = deadline;
            this.parent = parent;
        }

        @Override
        public void subscribe(final CoreSubscriber<? super Resp> actual)
        {
            final OutboundCompression compression = host.compressionOf(options);
            if (compression == null)
            {
                Operators.error(actual, unknownCompressor(options).asException());
                return;
            }
            final RpcContext handled = given ? parent : parentOf(options, actual.currentContext(), assembled);
            final Deadline callDeadline = given ? deadline : callDeadline(options, host.config.defaultDeadline, handled);
            final Metadata metadata = context != null ? context.requestMetadataToSend() : options.metadata();
            new UnaryClientCall<>(host, method, request, context, metadata, callDeadline, options.isWaitForReady())
                .inheritCancellation(handled).compressWith(compression).start(actual);
        }
    }

    /** The call as a Flux: each subscription is a new call. Deadline and parent as {@link UnaryMono}'s. */
    private static final class CallFlux<Req, Resp> extends Flux<Resp>
    {
        private final ClientCallStarter host;
        private final MethodDescriptor<Req, Resp> method;
        private final CallOptions options;
        private final Publisher<Req> requests;
        private final ClientCallContext context;
        private final RpcContext assembled;
        private final boolean given;
        private final Deadline deadline;
        private final RpcContext parent;

        CallFlux(final ClientCallStarter host, final MethodDescriptor<Req, Resp> method, final CallOptions options,
            final Publisher<Req> requests, final ClientCallContext context)
        {
            this.host = host;
            this.method = method;
            this.options = options;
            this.requests = requests;
            this.context = context;
            this.assembled = assembledParent(options);
            this.given = false;
            this.deadline = null;
            this.parent = null;
        }

        CallFlux(final ClientCallStarter host, final MethodDescriptor<Req, Resp> method, final CallOptions options,
            final Publisher<Req> requests, final ClientCallContext context, final Deadline deadline,
            final RpcContext parent)
        {
            this.host = host;
            this.method = method;
            this.options = options;
            this.requests = requests;
            this.context = context;
            this.assembled = null;
            this.given = true;
            this.deadline = deadline;
            this.parent = parent;
        }

        @Override
        public void subscribe(final CoreSubscriber<? super Resp> actual)
        {
            final OutboundCompression compression = host.compressionOf(options);
            if (compression == null)
            {
                Operators.error(actual, unknownCompressor(options).asException());
                return;
            }
            final Metadata metadata = context != null ? context.requestMetadataToSend() : options.metadata();
            final RpcContext handled = given ? parent : parentOf(options, actual.currentContext(), assembled);
            final Deadline callDeadline = given ? deadline : callDeadline(options, host.config.defaultDeadline, handled);
            new StreamingClientCall<>(host, method, requests, context, metadata, callDeadline, options.isWaitForReady())
                .inheritCancellation(handled).compressWith(compression).start(actual);
        }
    }
}
