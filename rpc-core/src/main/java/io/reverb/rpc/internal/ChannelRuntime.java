package io.reverb.rpc.internal;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.ClientInterceptor;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.Status;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.TransportProvider;
import io.reverb.rpc.transport.Transports;
import io.reverb.rpc.transport.UnauthenticatedException;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.reactivestreams.Publisher;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.ContextView;

/**
 * The runtime behind {@code io.reverb.rpc.RpcChannel} (which depends on it, never the reverse): lazy connection,
 * reconnect with exponential backoff, fail-fast or
 * wait-for-ready while it cannot connect, and the client interceptor chain.
 */
public final class ChannelRuntime
{
    /** A call failed because this channel (or the subchannel that owns it) was closed before it was sent. */
    private static final Status CHANNEL_CLOSED = Status.UNAVAILABLE.withDescription("channel closed")
        .withCause(CallFailureCause.of(CallFailureCause.Reason.CHANNEL_CLOSED));

    private final ChannelConfig config;
    private final URI uri;
    private final TransportProvider provider;
    private final CallMetrics metrics;
    private final ClientInterceptor[] interceptors;
    private final Set<ClientConnection> connections = ConcurrentHashMap.newKeySet();

    private volatile ClientConnection ready;
    /** The last stream id a connection may use ({@link ClientConnection#LAST_STREAM_ID}; lower in tests). */
    volatile int lastStreamId = ClientConnection.LAST_STREAM_ID;
    private volatile boolean closed;
    // guarded by this
    private boolean connecting;
    private boolean reconnectScheduled;
    private final List<ClientCall<?, ?>> waiters = new ArrayList<>();
    private final List<CompletableFuture<Void>> connectWaiters = new ArrayList<>();
    private volatile Runnable connectionLostListener;
    private Status lastFailure;
    private long nextAttemptNanos;
    private long lastFailureNanos;
    /** A fail-fast call found the channel backing off: attempt again soon (see {@link #nextAttemptForCallsNanos}). */
    private boolean callsWant;
    private long backoffNanos;
    /** The keep-alive interval of new connections: doubled each time a server said "too many pings" (as grpc-java). */
    private volatile long keepAliveNanos;

    /**
     * @param config the channel's configuration.
     */
    public ChannelRuntime(final ChannelConfig config)
    {
        this.config = config;
        this.uri = Transports.parse(config.uri);
        this.provider = Transports.providerFor(uri);
        this.metrics = CallMetrics.create(config.meterRegistry, "client");
        this.interceptors = config.interceptors;
        this.backoffNanos = config.initialBackoff.toNanos();
        this.keepAliveNanos = config.keepAliveTime.toNanos();
    }

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
            RpcConnection.LOG.warn("{} answered GOAWAY \"{}\": keep-alive interval raised from {} ms to {} ms", config.uri,
                KeepAliveEnforcer.TOO_MANY_PINGS, before / 1_000_000, after / 1_000_000);
        }
    }

    ChannelConfig config()
    {
        return config;
    }

    /**
     * A call's deadline: on the shared {@link DeadlineTimer} unless the user gave the channel a timer scheduler of
     * their own (e.g. a virtual-time one in tests), which then keeps all of the channel's timers.
     */
    Disposable scheduleDeadline(final Runnable task, final long delayNanos)
    {
        return config.timerScheduler == Schedulers.parallel() ? DeadlineTimer.shared().schedule(task, delayNanos) :
            config.timerScheduler.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
    }

    Scheduler timer()
    {
        return config.timerScheduler;
    }

    CallMetrics metrics()
    {
        return metrics;
    }

    /**
     * @return the address.
     */
    public String uri()
    {
        return config.uri;
    }

    /**
     * See {@code RpcChannel#newCall}.
     */
    public <Req, Resp> Flux<Resp> newCall(
        final MethodDescriptor<Req, Resp> method, final CallOptions options, final Publisher<Req> requests)
    {
        if (interceptors.length == 0)
        {
            return new CallFlux<>(this, method, options, requests, null);
        }
        return intercepted(method, options, requests, null);
    }

    /**
     * See {@code RpcChannel#newCall(MethodDescriptor, CallOptions, Publisher, ClientCallContext)}: the call records
     * what the server answered into {@code context}, and takes the direct path when there are no interceptors.
     */
    public <Req, Resp> Flux<Resp> newCall(final MethodDescriptor<Req, Resp> method, final CallOptions options,
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
     * See {@code RpcChannel#newUnaryCall(MethodDescriptor, CallOptions, Object, ClientCallContext)}: the call records
     * what the server answered into {@code context}, and takes the unary fast path when there are no interceptors.
     */
    public <Req, Resp> Mono<Resp> newUnaryCall(final MethodDescriptor<Req, Resp> method, final CallOptions options,
        final Req request, final ClientCallContext context)
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
     * See {@code RpcChannel#newUnaryCall}: without interceptors the request travels with the CALL frame and the
     * response goes straight to the subscriber, without intermediate operators.
     */
    public <Req, Resp> Mono<Resp> newUnaryCall(
        final MethodDescriptor<Req, Resp> method, final CallOptions options, final Req request)
    {
        Objects.requireNonNull(request, "request");
        if (interceptors.length == 0)
        {
            return new UnaryMono<>(this, method, options, request, null);
        }
        return unaryResult(method, intercepted(method, options, Mono.just(request), null));
    }

    private static <Resp> Mono<Resp> unaryResult(final MethodDescriptor<?, Resp> method, final Flux<Resp> responses)
    {
        return responses
            .singleOrEmpty()
            .switchIfEmpty(Mono.error(() -> Status.INTERNAL
                .withDescription("No value received for " + method.fullMethodName()).asException()));
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

    private Deadline deadlineOf(final CallOptions options, final RpcContext parent)
    {
        Deadline deadline = options.deadline();
        if (deadline == null && config.defaultDeadline != null)
        {
            deadline = Deadline.after(config.defaultDeadline);
        }
        // a call made inside a handler finishes no later than the call being handled
        if (parent != null && parent.deadline() != null)
        {
            deadline = parent.deadline().minimum(deadline);
        }
        return deadline;
    }

    private static RpcContext parentOf(final CallOptions options, final ContextView context, final RpcContext assembled)
    {
        return ServerCallScope.parent(options.isDetached(), RpcContext.from(context), assembled);
    }

    private static RpcContext assembledParent(final CallOptions options)
    {
        return options.isDetached() ? null : ServerCallScope.current();
    }

    /** A unary call as a Mono: each subscription is a new call. */
    private static final class UnaryMono<Req, Resp> extends Mono<Resp>
    {
        private final ChannelRuntime channel;
        private final MethodDescriptor<Req, Resp> method;
        private final CallOptions options;
        private final Req request;
        private final RpcContext assembled;
        private final ClientCallContext context;

        UnaryMono(final ChannelRuntime channel, final MethodDescriptor<Req, Resp> method, final CallOptions options,
            final Req request, final ClientCallContext context)
        {
            this.channel = channel;
            this.method = method;
            this.options = options;
            this.request = request;
            this.assembled = assembledParent(options);
            this.context = context;
        }

        @Override
        public void subscribe(final CoreSubscriber<? super Resp> actual)
        {
            final RpcContext parent = parentOf(options, actual.currentContext(), assembled);
            final Metadata metadata = context != null ? context.requestMetadata() : options.metadata();
            new UnaryClientCall<>(channel, method, request, context, metadata, channel.deadlineOf(options, parent),
                options.isWaitForReady()).inheritCancellation(parent).start(actual);
        }
    }

    /** The call as a Flux: each subscription is a new call. */
    private static final class CallFlux<Req, Resp> extends Flux<Resp>
    {
        private final ChannelRuntime channel;
        private final MethodDescriptor<Req, Resp> method;
        private final CallOptions options;
        private final Publisher<Req> requests;
        private final ClientCallContext context;
        private final RpcContext assembled;

        CallFlux(final ChannelRuntime channel, final MethodDescriptor<Req, Resp> method, final CallOptions options,
            final Publisher<Req> requests, final ClientCallContext context)
        {
            this.channel = channel;
            this.method = method;
            this.options = options;
            this.requests = requests;
            this.context = context;
            this.assembled = assembledParent(options);
        }

        @Override
        public void subscribe(final CoreSubscriber<? super Resp> actual)
        {
            final Metadata metadata = context != null ? context.requestMetadata() : options.metadata();
            final RpcContext parent = parentOf(options, actual.currentContext(), assembled);
            new StreamingClientCall<>(channel, method, requests, context, metadata, channel.deadlineOf(options, parent),
                options.isWaitForReady()).inheritCancellation(parent).start(actual);
        }
    }

    // ------------------------------------------------------------------ connection management

    /**
     * Connects now unless a connection is usable (for bridges that report connectivity, such as reverb-grpc).
     *
     * @return completes when a connection is usable; fails with an {@code RpcException} (UNAVAILABLE) if this
     * attempt could not connect or the channel is closed. A failure does not schedule a reconnect by itself.
     */
    public CompletableFuture<Void> connectNow()
    {
        final CompletableFuture<Void> result = new CompletableFuture<>();
        final ClientConnection current = ready;
        if (current != null && current.isUsable())
        {
            result.complete(null);
            return result;
        }
        boolean start = false;
        synchronized (this)
        {
            if (closed)
            {
                result.completeExceptionally(Status.UNAVAILABLE.withDescription("channel closed").asException());
                return result;
            }
            if (ready != null && ready.isUsable())
            {
                result.complete(null);
                return result;
            }
            connectWaiters.add(result);
            if (!connecting)
            {
                connecting = true;
                start = true;
            }
        }
        if (start)
        {
            connect();
        }
        return result;
    }

    /**
     * @param listener runs (on a transport or timer thread) each time the usable connection stops taking new calls
     *                 (GOAWAY, failure, close); replaces the previous one.
     */
    public void onConnectionLost(final Runnable listener)
    {
        this.connectionLostListener = listener;
    }

    void acquire(final ClientCall<?, ?> call)
    {
        final ClientConnection current = ready;
        if (current != null && current.isUsable())
        {
            call.onConnection(current);
            return;
        }
        slowAcquire(call);
    }

    private void slowAcquire(final ClientCall<?, ?> call)
    {
        ClientConnection current = null;
        Status failure = null;
        boolean connect = false;
        synchronized (this)
        {
            if (call.isDone())
            {
                return; // cancelled or timed out before it could wait: never park it
            }
            if (closed)
            {
                failure = CHANNEL_CLOSED;
            }
            else if ((current = ready) != null && current.isUsable())
            {
                // connected meanwhile
            }
            else
            {
                current = null;
                if (!connecting && lastFailure != null && System.nanoTime() - nextAttemptForCallsNanos() < 0)
                {
                    if (call.waitForReady)
                    {
                        waiters.add(call);
                    }
                    else
                    {
                        failure = lastFailure; // fails fast, as in gRPC, but the channel tries again soon
                        callsWant = true;
                    }
                    scheduleReconnect();
                }
                else
                {
                    waiters.add(call);
                    if (!connecting)
                    {
                        connecting = true;
                        connect = true;
                    }
                }
            }
        }
        if (current != null)
        {
            call.onConnection(current);
        }
        else if (failure != null)
        {
            call.failBeforeStart(failure);
        }
        else if (connect)
        {
            connect();
        }
    }

    void reacquireLater(final ClientCall<?, ?> call)
    {
        timer().schedule(() -> acquire(call));
    }

    void removeWaiter(final ClientCall<?, ?> call)
    {
        synchronized (this)
        {
            waiters.remove(call);
        }
    }

    private void connect()
    {
        final ClientConnection connection = new ClientConnection(this, config.maxInboundMessageSize, lastStreamId);
        try
        {
            provider.connect(uri, config.transportOptions, connection)
                .whenComplete((c, error) -> onConnectResult(connection, c, error));
        }
        catch (final RuntimeException e)
        {
            onConnectResult(connection, null, e);
        }
    }

    private void onConnectResult(final ClientConnection connection, final Connection transport, final Throwable error)
    {
        final List<ClientCall<?, ?>> run = new ArrayList<>();
        final List<ClientCall<?, ?>> fail = new ArrayList<>();
        final List<CompletableFuture<Void>> connectResults;
        Status failure = null;
        boolean closeNow = false;
        synchronized (this)
        {
            connecting = false;
            connectResults = connectWaiters.isEmpty() ? List.of() : new ArrayList<>(connectWaiters);
            connectWaiters.clear();
            if (error == null)
            {
                connection.attach(transport);
                if (closed)
                {
                    closeNow = true;
                    fail.addAll(waiters);
                    failure = CHANNEL_CLOSED;
                }
                else
                {
                    connections.add(connection);
                    ready = connection;
                    lastFailure = null;
                    backoffNanos = config.initialBackoff.toNanos();
                    run.addAll(waiters);
                }
                waiters.clear();
            }
            else
            {
                final Throwable cause = error instanceof CompletionException && error.getCause() != null ?
                    error.getCause() : error;
                // jitter of +-20% as gRPC, so that many clients do not reconnect in lockstep
                final long jittered = (long)(backoffNanos * (0.8 + 0.4 * ThreadLocalRandom.current().nextDouble()));
                lastFailureNanos = System.nanoTime();
                nextAttemptNanos = lastFailureNanos + jittered;
                backoffNanos = Math.min(config.maxBackoff.toNanos(), (long)(backoffNanos * 1.6));
                // refused credentials are no transient failure: UNAUTHENTICATED, and even wait-for-ready calls fail
                final boolean refused = cause instanceof UnauthenticatedException;
                lastFailure = refused
                    ? Status.UNAUTHENTICATED.withDescription("cannot connect to " + config.uri + ": " + cause.getMessage())
                        .withCause(cause)
                    : Status.UNAVAILABLE.withDescription("cannot connect to " + config.uri + ": " + cause.getMessage())
                        .withCause(CallFailureCause.of(CallFailureCause.Reason.CONNECT_FAILED, cause));
                failure = lastFailure;
                for (final ClientCall<?, ?> call : waiters)
                {
                    (call.waitForReady && !refused ? run : fail).add(call);
                }
                waiters.clear();
                waiters.addAll(run);
                run.clear();
                if (!waiters.isEmpty())
                {
                    scheduleReconnect();
                }
            }
        }
        if (closeNow)
        {
            transport.close();
        }
        for (final CompletableFuture<Void> result : connectResults)
        {
            if (error == null && !closeNow)
            {
                result.complete(null);
            }
            else
            {
                result.completeExceptionally((failure != null ? failure : lastFailure != null ? lastFailure :
                    Status.UNAVAILABLE.withDescription("channel closed")).asException());
            }
        }
        for (final ClientCall<?, ?> call : fail)
        {
            call.failBeforeStart(failure);
        }
        for (final ClientCall<?, ?> call : run)
        {
            call.onConnection(connection);
        }
    }

    /**
     * Guarded by this. When calls want a connection (they wait for one, or keep failing fast), the next attempt comes
     * at most {@code ChannelConfig.reconnectWhileCallsWait} (default 1 s) after the last failed one, however far the
     * exponential backoff has grown: a server back after a long outage serves the callers within about that long,
     * instead of after up to the maximum backoff. A channel that no call needs makes no attempt at all (connections
     * are made on demand).
     */
    private long nextAttemptForCallsNanos()
    {
        final long cap = config.reconnectWhileCallsWait.toNanos();
        return lastFailureNanos + cap - nextAttemptNanos < 0 ? lastFailureNanos + cap : nextAttemptNanos;
    }

    // guarded by this
    private void scheduleReconnect()
    {
        if (reconnectScheduled || connecting)
        {
            return;
        }
        reconnectScheduled = true;
        final long delay = Math.max(0, nextAttemptForCallsNanos() - System.nanoTime());
        timer().schedule(() ->
        {
            boolean connect = false;
            synchronized (this)
            {
                reconnectScheduled = false;
                if (!closed && !connecting && (!waiters.isEmpty() || callsWant))
                {
                    connecting = true;
                    connect = true;
                    callsWant = false;
                }
            }
            if (connect)
            {
                connect();
            }
        }, delay, TimeUnit.NANOSECONDS);
    }

    void connectionUnusable(final ClientConnection connection)
    {
        final boolean lost;
        synchronized (this)
        {
            lost = ready == connection;
            if (lost)
            {
                ready = null;
            }
        }
        final Runnable listener = connectionLostListener;
        if (lost && listener != null)
        {
            listener.run();
        }
    }

    void connectionClosed(final ClientConnection connection)
    {
        connections.remove(connection);
    }

    /**
     * Closes the channel: waiting and running calls fail with UNAVAILABLE, connections close.
     */
    public void close()
    {
        final List<ClientCall<?, ?>> fail;
        final List<CompletableFuture<Void>> connectResults;
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            ready = null;
            fail = new ArrayList<>(waiters);
            waiters.clear();
            connectResults = new ArrayList<>(connectWaiters);
            connectWaiters.clear();
        }
        for (final CompletableFuture<Void> result : connectResults)
        {
            result.completeExceptionally(Status.UNAVAILABLE.withDescription("channel closed").asException());
        }
        final Status status = CHANNEL_CLOSED;
        for (final ClientCall<?, ?> call : fail)
        {
            call.failBeforeStart(status);
        }
        for (final ClientConnection connection : connections)
        {
            connection.closeWithError(status);
        }
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
        return config.uri;
    }
}
