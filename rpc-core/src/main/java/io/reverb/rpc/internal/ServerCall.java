package io.reverb.rpc.internal;

import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.ServerInterceptor;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.wire.FrameType;
import io.reverb.rpc.wire.StatusFlyweight;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/**
 * The server side of one call, in one object: the stream the connection routes the client's frames to, the
 * {@link Subscription} given to whoever subscribes to the handler's request {@code Flux} (its demand becomes
 * REQUEST_N to the client), and the subscriber of the handler's response publisher (which it pulls only as far as
 * the client's REQUEST_N allow). Its Reactor context carries the {@link RpcContext}.
 */
final class ServerCall<Req, Resp> extends RpcStream implements OutboundFrame, Subscription, CoreSubscriber<Resp>
{
    private static final AtomicIntegerFieldUpdater<ServerCall> WIP =
        AtomicIntegerFieldUpdater.newUpdater(ServerCall.class, "wip");

    private final ServerConnection connection;
    private final ServerRuntime server;
    private final MethodDescriptor<Req, Resp> method;
    private final ServerCallHandler<Req, Resp> handler;
    private final Metadata requestMetadata;
    private final Deadline deadline;
    // created on first use: a plain unary handler never asks for them
    private RpcContext rpcContext;
    private volatile Context reactorContext;
    private final long timeoutNanos;
    private final boolean oneRequest;
    private final Scheduler.Worker worker;
    private final long startNanos;
    private final ServerCallHandler.Unary<Req, Resp> unaryHandler;
    private boolean unaryRequestSeen;
    // the final frame(s), encoded by this object: the single response (if held back) and the STATUS
    private Resp pendingResponse;
    private int pendingPayloadLength;
    private int finalCode;
    private byte[] finalDescription;
    private Metadata finalTrailers;
    private int finalLength;

    // responses (handler output), guarded by this
    private Subscription upstream;
    private long upstreamDemandBeforeSubscribe;
    private boolean headersSent;
    private boolean closed;
    private Disposable deadlineTimer;

    // requests (handler input), guarded by this
    private CoreSubscriber<? super Req> requestSubscriber;
    private ArrayDeque<Req> queue;
    private long requested;
    private long demandTotal;
    private long granted = 1; // the client may send one message before we ask
    private boolean halfClosed;
    private boolean requestsDone;
    private boolean requestsCancelled;
    private Status requestsError;
    private volatile int wip;

    @SuppressWarnings("unchecked")
    ServerCall(final ServerConnection connection, final ServerRuntime server, final int streamId,
        final ServiceDefinition.ServerMethodDefinition<?, ?> definition, final Metadata metadata, final long timeoutNanos,
        final int initialRequestN)
    {
        this.connection = connection;
        this.server = server;
        this.streamId = streamId;
        this.method = (MethodDescriptor<Req, Resp>)definition.method();
        this.handler = (ServerCallHandler<Req, Resp>)definition.handler();
        this.timeoutNanos = timeoutNanos;
        this.deadline = timeoutNanos >= 0 ?
            Deadline.after(timeoutNanos, TimeUnit.NANOSECONDS, Deadline.Ticker.SYSTEM) : null;
        this.requestMetadata = metadata;
        this.oneRequest = method.type().clientSendsOneMessage();
        this.upstreamDemandBeforeSubscribe = fromWire(initialRequestN);
        this.worker = server.handlerScheduler() != null ? server.handlerScheduler().createWorker() : null;
        this.startNanos = server.metrics().callStarted();
        // without interceptors a unary handler is invoked with the request itself, no request Flux
        this.unaryHandler = server.interceptors().length == 0 && method.type() == MethodDescriptor.MethodType.UNARY &&
            handler instanceof ServerCallHandler.Unary ? (ServerCallHandler.Unary<Req, Resp>)handler : null;
    }

    void start()
    {
        if (timeoutNanos >= 0)
        {
            final Disposable timer = server.timer().schedule(
                () -> cancelCall(Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded on the server"), null),
                timeoutNanos, TimeUnit.NANOSECONDS);
            synchronized (this)
            {
                if (closed)
                {
                    timer.dispose();
                    return;
                }
                deadlineTimer = timer;
            }
        }
        if (unaryHandler == null)
        {
            execute(this::invokeHandler);
        }
    }

    private void invokeUnary(final Req request)
    {
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
        }
        final Publisher<Resp> response;
        try
        {
            response = unaryHandler.invoke(request);
            if (response == null)
            {
                throw new NullPointerException("handler of " + method.fullMethodName() + " returned null");
            }
        }
        catch (final Throwable t)
        {
            onError(t);
            return;
        }
        response.subscribe(this);
    }

    private void execute(final Runnable task)
    {
        if (worker == null)
        {
            task.run();
        }
        else
        {
            try
            {
                worker.schedule(task);
            }
            catch (final RuntimeException rejected)
            {
                cancelCall(Status.UNAVAILABLE.withDescription("handler executor rejected the call"), null);
            }
        }
    }

    private void invokeHandler()
    {
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
        }
        final Publisher<Resp> responses;
        try
        {
            responses = intercepted().handle(new RequestFlux());
            if (responses == null)
            {
                throw new NullPointerException("handler of " + method.fullMethodName() + " returned null");
            }
        }
        catch (final Throwable t)
        {
            onError(t);
            return;
        }
        responses.subscribe(this);
    }

    private synchronized RpcContext context()
    {
        if (rpcContext == null)
        {
            rpcContext = new RpcContext(method, requestMetadata != null ? requestMetadata : new Metadata(), deadline,
                connection.peer());
        }
        return rpcContext;
    }

    private synchronized Metadata trailersCopy()
    {
        return rpcContext != null && rpcContext.hasResponseTrailers() ? rpcContext.responseTrailers().copy() : null;
    }

    private ServerCallHandler<Req, Resp> intercepted()
    {
        ServerCallHandler<Req, Resp> next = handler;
        final ServerInterceptor[] interceptors = server.interceptors();
        final RpcContext rpcContext = interceptors.length > 0 ? context() : null;
        for (int i = interceptors.length - 1; i >= 0; i--)
        {
            final ServerInterceptor interceptor = interceptors[i];
            final ServerCallHandler<Req, Resp> inner = next;
            next = requests -> interceptor.interceptCall(rpcContext, requests, inner);
        }
        return next;
    }

    // ------------------------------------------------------------ CoreSubscriber (handler's responses)

    @Override
    public Context currentContext()
    {
        Context context = reactorContext;
        if (context == null)
        {
            context = Context.of(RpcContext.CONTEXT_KEY, context());
            reactorContext = context;
        }
        return context;
    }

    @Override
    public void onSubscribe(final Subscription s)
    {
        final long n;
        synchronized (this)
        {
            if (upstream != null || closed)
            {
                s.cancel();
                return;
            }
            upstream = s;
            n = upstreamDemandBeforeSubscribe;
            upstreamDemandBeforeSubscribe = 0;
        }
        if (n > 0)
        {
            s.request(n);
        }
    }

    /**
     * Responses arrive one at a time (Reactive Streams), so frames written after releasing the monitor keep their
     * order; only the decision (headers first? hold the single response back?) is taken under it.
     */
    @Override
    public void onNext(final Resp response)
    {
        Resp value = response;
        final int payloadLength;
        try
        {
            payloadLength = method.responseMarshaller().serializedSize(value);
        }
        catch (final Throwable t)
        {
            onWriteFailed(Status.INTERNAL.withDescription("failed to size response: " + t).withCause(t));
            return;
        }
        final OutboundFrame headers;
        Resp earlier = null;
        int earlierLength = 0;
        synchronized (this)
        {
            if (closed)
            {
                Operators.onDiscard(value, currentContext());
                return;
            }
            headers = takeHeaders();
            server.metrics().messageSent(method, payloadLength);
            if (method.type().serverSendsOneMessage() && pendingResponse == null)
            {
                // held back to travel with the STATUS in one transport message
                pendingResponse = value;
                pendingPayloadLength = payloadLength;
                value = null;
            }
            else if (pendingResponse != null)
            {
                earlier = pendingResponse;
                earlierLength = pendingPayloadLength;
                pendingResponse = null;
            }
        }
        if (headers != null)
        {
            connection.write(headers);
        }
        if (earlier != null)
        {
            connection.write(new OutboundFrame.Message<>(streamId, false, method.responseMarshaller(), earlier,
                earlierLength, this));
        }
        if (value != null)
        {
            connection.write(new OutboundFrame.Message<>(streamId, false, method.responseMarshaller(), value,
                payloadLength, this));
        }
    }

    /** Guarded by this. @return the HEADERS frame to send before anything else, once, or null. */
    private OutboundFrame takeHeaders()
    {
        if (headersSent)
        {
            return null;
        }
        headersSent = true;
        return rpcContext != null && rpcContext.hasResponseHeaders() ?
            new OutboundFrame.Headers(streamId, rpcContext.responseHeaders().copy()) : null;
    }

    @Override
    public void onError(final Throwable t)
    {
        final Status status = Status.fromThrowable(t);
        Metadata trailers = trailersCopy();
        if (t instanceof RpcException && !((RpcException)t).trailers().isEmpty())
        {
            if (trailers == null)
            {
                trailers = new Metadata();
            }
            trailers.merge(((RpcException)t).trailers());
        }
        if (!(t instanceof RpcException))
        {
            // the stack trace stays in the server's log; the client gets the code and message only
            RpcConnection.LOG.warn("call {} from {} failed", method.fullMethodName(), connection.peer(), t);
        }
        finish(status, trailers);
    }

    @Override
    public void onComplete()
    {
        finish(Status.OK, trailersCopy());
    }

    private void finish(final Status status, final Metadata trailers)
    {
        final OutboundFrame headers;
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            upstream = null;
            headers = takeHeaders();
            if (!status.isOk())
            {
                pendingResponse = null;
            }
            finalCode = status.code().value();
            finalDescription = io.reverb.rpc.wire.FrameCodec.utf8(status.description());
            finalTrailers = trailers;
            finalLength = StatusFlyweight.frameLength(finalDescription, trailers) +
                (pendingResponse != null ? HEADER + pendingPayloadLength : 0);
        }
        // closed: nothing changes the final frame's fields any more, so it is written outside the monitor
        if (headers != null)
        {
            connection.write(headers);
        }
        connection.write(this);
        released(status);
    }

    // ------------------------------------------------------------ OutboundFrame (final response + STATUS)

    @Override
    public int length()
    {
        return finalLength;
    }

    @Override
    public void encode(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
    {
        int at = offset;
        if (pendingResponse != null)
        {
            final int limit = buffer.limit();
            at = encoder.message(buffer, at, streamId, false, method.responseMarshaller(), pendingResponse,
                pendingPayloadLength);
            buffer.limit(limit); // the marshaller wrote within a limit narrowed to its payload
        }
        encoder.status(buffer, at, streamId, finalCode, finalDescription, finalTrailers);
    }

    @Override
    public void failed(final Status status)
    {
        // the final frame could not be written (e.g. the response is too large): tell the client what happened
        connection.write(new OutboundFrame.StatusFrame(streamId, status, null));
    }

    // ------------------------------------------------------------ RpcStream (frames from the client)

    @Override
    void onMessage(final ByteBuffer payload, final boolean endOfStream)
    {
        final int size = payload.remaining();
        final Req value;
        try
        {
            value = method.requestMarshaller().read(payload);
        }
        catch (final Throwable t)
        {
            cancelCall(Status.INTERNAL.withDescription("failed to parse request: " + t.getMessage()).withCause(t), null);
            return;
        }
        server.metrics().messageReceived(method, size);
        if (unaryHandler != null)
        {
            onUnaryRequest(value);
            return;
        }
        synchronized (this)
        {
            if (closed || requestsDone || requestsCancelled)
            {
                return;
            }
            if (queue == null)
            {
                queue = new ArrayDeque<>(oneRequest ? 1 : 4);
            }
            queue.addLast(value);
            if (endOfStream)
            {
                halfClosed = true;
            }
        }
        drainRequests();
    }

    private void onUnaryRequest(final Req value)
    {
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            if (unaryRequestSeen)
            {
                // the protocol allows one message for a unary call; the client broke it
                cancelCall(Status.INTERNAL.withDescription("Too many requests for a unary call"), null);
                return;
            }
            unaryRequestSeen = true;
        }
        if (worker == null)
        {
            invokeUnary(value);
        }
        else
        {
            execute(() -> invokeUnary(value));
        }
    }

    void onHalfClose()
    {
        synchronized (this)
        {
            halfClosed = true;
            if (unaryHandler != null && !unaryRequestSeen && !closed)
            {
                unaryRequestSeen = true;
            }
            else if (unaryHandler != null)
            {
                return;
            }
        }
        if (unaryHandler != null)
        {
            onError(Status.INTERNAL.withDescription("Half-closed without a request").asException());
            return;
        }
        drainRequests();
    }

    void onCancel(final Status reason)
    {
        cancelCall(null, reason);
    }

    @Override
    void onOversizedMessage(final int length, final int limit)
    {
        cancelCall(Status.RESOURCE_EXHAUSTED.withDescription(
            "request message of " + length + " bytes exceeds the server's limit of " + limit + " bytes"), null);
    }

    @Override
    void onRequestN(final int n)
    {
        final long demand = fromWire(n);
        if (worker == null)
        {
            requestResponses(demand); // no lambda per REQUEST_N on the common path
        }
        else
        {
            execute(() -> requestResponses(demand));
        }
    }

    private void requestResponses(final long demand)
    {
        final Subscription s;
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            s = upstream;
            if (s == null)
            {
                upstreamDemandBeforeSubscribe = addCap(upstreamDemandBeforeSubscribe, demand);
                return;
            }
        }
        s.request(demand);
    }

    @Override
    void onConnectionClosed(final Status status)
    {
        cancelCall(null, status);
    }

    @Override
    void onWriteFailed(final Status status)
    {
        cancelCall(status, null);
    }

    /**
     * Ends the call early: the handler's publisher is cancelled, its request stream fails if still in use, and the
     * client is sent the status (none when the client cancelled).
     *
     * @param status what to send the client, or null to send nothing (it cancelled, or the connection is gone).
     * @param reason how the call ended here when nothing is sent (metrics), or null to use status.
     */
    void cancelCall(final Status status, final Status reason)
    {
        final Subscription s;
        final Metadata trailers;
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            s = upstream;
            upstream = null;
            pendingResponse = null;
            trailers = status != null ? trailersCopy() : null;
            if (!requestsDone && !requestsCancelled)
            {
                requestsError = Status.CANCELLED.withDescription("call cancelled");
            }
        }
        if (status != null)
        {
            connection.write(new OutboundFrame.StatusFrame(streamId, status, trailers));
        }
        if (s != null)
        {
            s.cancel();
        }
        drainRequests();
        released(status != null ? status : reason != null ? reason : Status.CANCELLED);
    }

    private void released(final Status status)
    {
        final Disposable timer;
        synchronized (this)
        {
            timer = deadlineTimer;
            deadlineTimer = null;
        }
        if (timer != null)
        {
            timer.dispose();
        }
        connection.remove(streamId);
        server.metrics().callEnded(method, status, startNanos);
        if (worker != null)
        {
            // let already scheduled signals run, then release the worker
            worker.schedule(worker::dispose);
        }
    }

    // ------------------------------------------------------------ requests Flux given to the handler

    private final class RequestFlux extends Flux<Req>
    {
        @Override
        public void subscribe(final CoreSubscriber<? super Req> actual)
        {
            synchronized (ServerCall.this)
            {
                if (requestSubscriber != null)
                {
                    Operators.error(actual, new IllegalStateException("the request stream can be subscribed only once"));
                    return;
                }
                requestSubscriber = actual;
            }
            actual.onSubscribe(ServerCall.this);
            drainRequests();
        }
    }

    @Override
    public void request(final long n)
    {
        if (n <= 0)
        {
            return;
        }
        long delta = 0;
        synchronized (this)
        {
            requested = addCap(requested, n);
            demandTotal = addCap(demandTotal, n);
            if (!oneRequest && !halfClosed && !closed && demandTotal > granted)
            {
                delta = demandTotal == Long.MAX_VALUE ? Long.MAX_VALUE : demandTotal - granted;
                granted = demandTotal;
            }
        }
        if (delta > 0)
        {
            connection.write(new OutboundFrame.Control(FrameType.REQUEST_N, 0, streamId, toWire(delta)));
        }
        drainRequests();
    }

    @Override
    public void cancel()
    {
        synchronized (this)
        {
            requestsCancelled = true;
            if (queue != null)
            {
                queue.clear();
            }
        }
    }

    private void drainRequests()
    {
        if (worker != null)
        {
            if (WIP.getAndIncrement(this) == 0)
            {
                try
                {
                    worker.schedule(this::drainLoop);
                }
                catch (final RuntimeException ignored)
                {
                    WIP.set(this, 0);
                }
            }
            return;
        }
        if (WIP.getAndIncrement(this) == 0)
        {
            drainLoop();
        }
    }

    private void drainLoop()
    {
        int missed = 1;
        while (true)
        {
            while (true)
            {
                final CoreSubscriber<? super Req> subscriber;
                Req value = null;
                Status error = null;
                boolean complete = false;
                synchronized (this)
                {
                    subscriber = requestSubscriber;
                    if (subscriber == null || requestsDone || requestsCancelled)
                    {
                        break;
                    }
                    if (requestsError != null)
                    {
                        requestsDone = true;
                        error = requestsError;
                        if (queue != null)
                        {
                            queue.clear();
                        }
                    }
                    else if (requested > 0 && queue != null && !queue.isEmpty())
                    {
                        value = queue.pollFirst();
                        if (requested != Long.MAX_VALUE)
                        {
                            requested--;
                        }
                    }
                    else if (halfClosed && (queue == null || queue.isEmpty()))
                    {
                        requestsDone = true;
                        complete = true;
                    }
                    else
                    {
                        break;
                    }
                }
                if (value != null)
                {
                    subscriber.onNext(value);
                }
                else if (error != null)
                {
                    subscriber.onError(error.asException());
                }
                else if (complete)
                {
                    subscriber.onComplete();
                }
            }
            missed = WIP.addAndGet(this, -missed);
            if (missed == 0)
            {
                return;
            }
        }
    }
}
