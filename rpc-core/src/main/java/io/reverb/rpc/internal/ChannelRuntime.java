package io.reverb.rpc.internal;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.ClientInterceptor;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.Status;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.TransportProvider;
import io.reverb.rpc.transport.Transports;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.reactivestreams.Publisher;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.ContextView;

/**
 * The runtime behind {@code io.reverb.rpc.RpcChannel} (which depends on it, never the reverse): lazy connection,
 * reconnect with exponential backoff, fail-fast or
 * wait-for-ready while it cannot connect, and the client interceptor chain.
 */
public final class ChannelRuntime
{
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
    private Status lastFailure;
    private long nextAttemptNanos;
    private long backoffNanos;

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
    }

    ChannelConfig config()
    {
        return config;
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
        return intercepted(method, options, requests);
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
            return new UnaryMono<>(this, method, options, request);
        }
        return intercepted(method, options, Mono.just(request))
            .singleOrEmpty()
            .switchIfEmpty(Mono.error(() -> Status.INTERNAL
                .withDescription("No value received for " + method.fullMethodName()).asException()));
    }

    private <Req, Resp> Flux<Resp> intercepted(
        final MethodDescriptor<Req, Resp> method, final CallOptions options, final Publisher<Req> requests)
    {
        return Flux.defer(() ->
        {
            final ClientCallContext context = new ClientCallContext(method, options);
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

    private Deadline deadlineOf(final CallOptions options, final ContextView context)
    {
        Deadline deadline = options.deadline();
        if (deadline == null && config.defaultDeadline != null)
        {
            deadline = Deadline.after(config.defaultDeadline);
        }
        if (!options.isDetached())
        {
            // a call made inside a handler finishes no later than the call being handled
            final RpcContext parent = RpcContext.from(context);
            if (parent != null && parent.deadline() != null)
            {
                deadline = parent.deadline().minimum(deadline);
            }
        }
        return deadline;
    }

    /** A unary call as a Mono: each subscription is a new call. */
    private static final class UnaryMono<Req, Resp> extends Mono<Resp>
    {
        private final ChannelRuntime channel;
        private final MethodDescriptor<Req, Resp> method;
        private final CallOptions options;
        private final Req request;

        UnaryMono(final ChannelRuntime channel, final MethodDescriptor<Req, Resp> method, final CallOptions options,
            final Req request)
        {
            this.channel = channel;
            this.method = method;
            this.options = options;
            this.request = request;
        }

        @Override
        public void subscribe(final CoreSubscriber<? super Resp> actual)
        {
            new UnaryClientCall<>(channel, method, request, options.metadata(),
                channel.deadlineOf(options, actual.currentContext()),
                options.isWaitForReady()).start(actual);
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

        CallFlux(final ChannelRuntime channel, final MethodDescriptor<Req, Resp> method, final CallOptions options,
            final Publisher<Req> requests, final ClientCallContext context)
        {
            this.channel = channel;
            this.method = method;
            this.options = options;
            this.requests = requests;
            this.context = context;
        }

        @Override
        public void subscribe(final CoreSubscriber<? super Resp> actual)
        {
            final Metadata metadata = context != null ? context.requestMetadata() : options.metadata();
            new StreamingClientCall<>(channel, method, requests, context, metadata,
                channel.deadlineOf(options, actual.currentContext()),
                options.isWaitForReady()).start(actual);
        }
    }

    // ------------------------------------------------------------------ connection management

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
                failure = Status.UNAVAILABLE.withDescription("channel closed");
            }
            else if ((current = ready) != null && current.isUsable())
            {
                // connected meanwhile
            }
            else
            {
                current = null;
                if (!connecting && lastFailure != null && System.nanoTime() - nextAttemptNanos < 0)
                {
                    if (call.waitForReady)
                    {
                        waiters.add(call);
                        scheduleReconnect();
                    }
                    else
                    {
                        failure = lastFailure;
                    }
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
        Status failure = null;
        boolean closeNow = false;
        synchronized (this)
        {
            connecting = false;
            if (error == null)
            {
                connection.attach(transport);
                if (closed)
                {
                    closeNow = true;
                    fail.addAll(waiters);
                    failure = Status.UNAVAILABLE.withDescription("channel closed");
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
                nextAttemptNanos = System.nanoTime() + jittered;
                backoffNanos = Math.min(config.maxBackoff.toNanos(), (long)(backoffNanos * 1.6));
                lastFailure = Status.UNAVAILABLE.withDescription("cannot connect to " + config.uri + ": " +
                    cause.getMessage()).withCause(cause);
                failure = lastFailure;
                for (final ClientCall<?, ?> call : waiters)
                {
                    (call.waitForReady ? run : fail).add(call);
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
        for (final ClientCall<?, ?> call : fail)
        {
            call.failBeforeStart(failure);
        }
        for (final ClientCall<?, ?> call : run)
        {
            call.onConnection(connection);
        }
    }

    // guarded by this
    private void scheduleReconnect()
    {
        if (reconnectScheduled || connecting)
        {
            return;
        }
        reconnectScheduled = true;
        final long delay = Math.max(0, nextAttemptNanos - System.nanoTime());
        timer().schedule(() ->
        {
            boolean connect = false;
            synchronized (this)
            {
                reconnectScheduled = false;
                if (!closed && !connecting && !waiters.isEmpty())
                {
                    connecting = true;
                    connect = true;
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
        synchronized (this)
        {
            if (ready == connection)
            {
                ready = null;
            }
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
        }
        final Status status = Status.UNAVAILABLE.withDescription("channel closed");
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
