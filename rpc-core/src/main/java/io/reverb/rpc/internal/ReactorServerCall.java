package io.reverb.rpc.internal;

import io.reverb.common.LogLimiter;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import java.util.Arrays;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.Exceptions;
import reactor.core.Fuseable;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/**
 * A call to a native handler: the Reactor side of a {@link ServerCall}. It runs the handler on the server's handler
 * executor, subscribes to the handler's responses (pulling only as far as the client's REQUEST_N allow), writes them,
 * and ends the call with the publisher's end; its Reactor context carries the {@link RpcContext}.
 * {@link UnaryServerCall} and {@link StreamingServerCall} add how requests reach the handler.
 *
 * <p>State is guarded by {@code this}; no frame is written while holding it.
 *
 * @param <Req>  request type.
 * @param <Resp> response type.
 */
abstract class ReactorServerCall<Req, Resp> extends ServerCall<Req, Resp> implements CoreSubscriber<Resp>
{
    private static final LogLimiter FAILURE_LOG = new LogLimiter((line, t) -> WireConnection.LOG.warn(line, t));

    /** Runs the handler and the signals to it, or null for the transport's thread. */
    final Scheduler.Worker worker;
    private volatile Context reactorContext;
    // responses (handler output), guarded by this
    private Subscription upstream;
    private long upstreamDemandBeforeSubscribe;
    /**
     * Responses asked of the handler's publisher ahead of those it emitted, at most: the client's demand reaches the
     * handler in steps of this window, topped up as responses leave and only while the connection's queue of unsent
     * frames is short ({@link #QUEUED_HIGH}). A client that asks for everything (Long.MAX_VALUE) and reads slowly, or
     * not at all, no longer makes the handler fill the server's memory with frames it cannot send.
     */
    static final int RESPONSE_WINDOW = 256;
    /** Frames waiting behind back-pressure on the connection above which no more responses are asked for. */
    static final int QUEUED_HIGH = 1024;
    /** Responses asked of the handler and not yet emitted (guarded by this). */
    private long upstreamAhead;
    /** Demand the client granted that was not yet asked of the handler; Long.MAX_VALUE: unbounded (guarded by this). */
    private long peerDemandLeft;
    /** Waiting for the connection's queue to drain before asking for more (guarded by this). */
    private boolean waitingForWrites;
    /** Demand that REQUEST_N frames brought, for the handler's worker to request (guarded by this). */
    private long demandForWorker;
    /** A task requesting {@link #demandForWorker} is queued on the worker (guarded by this). */
    private boolean demandTaskQueued;
    /** That task, made once (the transport's thread only). */
    private Runnable demandTask;

    @SuppressWarnings("unchecked")
    ReactorServerCall(final ServerWireConnection connection, final ServerRuntime server, final int streamId,
        final ServiceDefinition.ServerMethodDefinition<?, ?> definition, final Metadata metadata, final long timeoutNanos,
        final int initialRequestN)
    {
        super(connection, server, streamId, (MethodDescriptor<Req, Resp>)definition.method(), metadata, timeoutNanos);
        final Scheduler handlers = server.handlerScheduler();
        this.worker = handlers != null ? handlers.createWorker() : null;
        // a method that answers once asks its handler regardless of the client's grant: the one response is held
        // until the STATUS, and a second ends the call (asked for only one, a handler emitting two hung the call)
        this.upstreamDemandBeforeSubscribe = definition.method().type().serverSendsOneMessage() ? Long.MAX_VALUE :
            fromWire(initialRequestN);
    }

    /**
     * A streaming call's responses go out together (one write lock, claim and commit for many,
     * {@code WireWriter#writeAll}) when the handler's publisher emits them inside our request to it: the requesting
     * thread (the collector) collects them in the outbox and writes it when the request returns or the outbox holds a
     * transport message's worth. A response emitted on any other thread is written at once. One thread writes the
     * outbox at a time ({@code writing}): a frame produced meanwhile joins the outbox and leaves after the frames ahead
     * of it. All guarded by this call.
     *
     * @return this call's outbox, or null for a method with one response: the object is {@link StreamingServerCall}'s
     * field, so that a unary call's object has no field for it.
     */
    Outbox outbox()
    {
        return null;
    }

    /** A streaming call's responses on their way to the connection (see {@link #outbox()}). */
    static final class Outbox
    {
        // the thread collecting now, or null
        Thread collector;
        OutboundFrame[] frames;
        // an emptied array kept for the next batch
        OutboundFrame[] spare;
        int count;
        int bytes;
        // a thread is writing a batch taken from here
        boolean writing;
    }

    /**
     * @return the call for this method: without interceptors a unary handler is invoked with the request itself
     * ({@link UnaryServerCall}); every other call gives the handler a request {@code Flux}.
     */
    static ReactorServerCall<?, ?> create(final ServerWireConnection connection, final ServerRuntime server, final int streamId,
        final ServiceDefinition.ServerMethodDefinition<?, ?> definition, final Metadata metadata, final long timeoutNanos,
        final int initialRequestN)
    {
        if (server.interceptors().length == 0 && definition.method().type() == MethodDescriptor.MethodType.UNARY &&
            definition.handler() instanceof ServerCallHandler.Unary)
        {
            return new UnaryServerCall<>(connection, server, streamId, definition, metadata, timeoutNanos, initialRequestN);
        }
        return new StreamingServerCall<>(connection, server, streamId, definition, metadata, timeoutNanos,
            initialRequestN);
    }

    final void execute(final Runnable task)
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

    /** Subscribes this call to the handler's responses, or ends the call if the handler failed to give any. */
    final void subscribeTo(final Publisher<Resp> responses)
    {
        if (responses == null)
        {
            onError(new NullPointerException("handler of " + method.fullMethodName() + " returned null"));
            return;
        }
        if (responses instanceof Fuseable.ScalarCallable)
        {
            // A constant response (Mono.just, Mono.empty, Flux.just of one), the common unary handler's shape, is
            // taken as Reactor's own operators fuse it: no Subscription, no demand exchange, no subscribe chain.
            final Resp value;
            try
            {
                @SuppressWarnings("unchecked")
                final Fuseable.ScalarCallable<Resp> scalar = (Fuseable.ScalarCallable<Resp>)responses;
                value = scalar.call();
            }
            catch (final Throwable t)
            {
                if (takeScalarDemand())
                {
                    onError(Exceptions.unwrap(t)); // Mono.error's call() wraps a checked or non-fatal Error
                    return;
                }
                responses.subscribe(this); // it signals the error itself, when asked
                return;
            }
            if (value == null)
            {
                if (takeScalarDemand())
                {
                    onComplete();
                    return;
                }
            }
            else if (method.type().serverSendsOneMessage())
            {
                final int scalarResult = finishWithScalar(value);
                if (scalarResult != SCALAR_NOT_TAKEN)
                {
                    return;
                }
            }
            else if (takeScalarDemand())
            {
                onNext(value);
                onComplete();
                return;
            }
        }
        try
        {
            responses.subscribe(this);
        }
        catch (final RuntimeException e)
        {
            // a Publisher whose subscribe throws (against Reactive Streams' rule 1.9, but user code): the call ends
            // with it, instead of hanging without a status and the exception reaching the transport's thread
            onError(e);
        }
    }

    private static final int SCALAR_TAKEN = 0;
    private static final int SCALAR_NOT_TAKEN = 1;

    /**
     * The whole end of a one-response call whose handler returned a constant: the response and the OK status decided
     * in one step under the monitor (what onNext, onComplete and the end's bookkeeping would each decide under it),
     * then written as one transport message. Only when the client's demand already covers the response and nothing
     * was subscribed; otherwise the caller subscribes as before.
     *
     * @return {@link #SCALAR_TAKEN} if the call is over (ended here, or already closed), {@link #SCALAR_NOT_TAKEN} if
     *         the caller must subscribe to the publisher instead.
     */
    private int finishWithScalar(final Resp value)
    {
        final int payloadLength;
        final EncodedMessage encoded;
        try
        {
            payloadLength = method.responseMarshaller().serializedSize(value);
        }
        catch (final Throwable t)
        {
            if (!takeScalarDemand())
            {
                return SCALAR_NOT_TAKEN;
            }
            onWriteFailed(Status.INTERNAL.withDescription("failed to size response: " + t).withCause(t));
            return SCALAR_TAKEN;
        }
        try
        {
            final OutboundCompression compression = responseCompression();
            encoded = compression.applies(payloadLength) ?
                compression.encode(method.responseMarshaller(), value, payloadLength) : null;
        }
        catch (final Throwable t)
        {
            if (!takeScalarDemand())
            {
                return SCALAR_NOT_TAKEN;
            }
            onWriteFailed(Status.INTERNAL.withDescription("failed to compress response: " + t).withCause(t));
            return SCALAR_TAKEN;
        }
        final OutboundFrame headers;
        final Disposable timer;
        synchronized (this)
        {
            if (closed)
            {
                Operators.onDiscard(value, currentContext()); // the monitor is reentrant (context())
                return SCALAR_TAKEN;
            }
            if (upstream != null || upstreamDemandBeforeSubscribe <= 0)
            {
                return SCALAR_NOT_TAKEN;
            }
            upstreamDemandBeforeSubscribe--;
            headers = takeHeaders();
            server.metrics().messageSent(method, payloadLength);
            // held back to travel with the STATUS in one transport message (the same as onNext, then onComplete)
            pendingResponse = value;
            pendingEncoded = encoded;
            pendingPayloadLength = encoded != null ? encoded.length : payloadLength;
            timer = closeOkLocked();
        }
        responsesEnded();
        if (headers != null)
        {
            connection.write(headers);
        }
        connection.write(this);
        released(Status.OK, timer);
        return SCALAR_TAKEN;
    }

    /**
     * @return true if a scalar response may be delivered now, without subscribing: the call is open, nothing was
     *         subscribed, and the client's demand covers one message.
     */
    private synchronized boolean takeScalarDemand()
    {
        if (closed || upstream != null || upstreamDemandBeforeSubscribe <= 0)
        {
            return false;
        }
        upstreamDemandBeforeSubscribe--;
        return true;
    }

    // ------------------------------------------------------------ CoreSubscriber (the handler's responses)

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
        if (s == null)
        {
            throw brokenPublisher("onSubscribe(null)", false);
        }
        final long n;
        final boolean collecting;
        synchronized (this)
        {
            if (upstream != null || closed)
            {
                s.cancel();
                return;
            }
            upstream = s;
            peerDemandLeft = addCap(peerDemandLeft, upstreamDemandBeforeSubscribe);
            upstreamDemandBeforeSubscribe = 0;
            n = topUpLocked();
            collecting = n > 0 && startCollecting();
        }
        if (n > 0)
        {
            requestUpstream(s, n, collecting);
        }
    }

    /**
     * Responses arrive one at a time (Reactive Streams), so frames written after releasing the monitor keep their
     * order; only the decision (headers first? hold the single response back?) is taken under it.
     */
    @Override
    public void onNext(final Resp response)
    {
        if (response == null)
        {
            throw brokenPublisher("onNext(null)", true);
        }
        final Outbox out = outbox();
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
        final EncodedMessage encoded;
        final OutboundCompression compression = responseCompression();
        try
        {
            encoded = compression.applies(payloadLength) ?
                compression.encode(method.responseMarshaller(), value, payloadLength) : null;
        }
        catch (final Throwable t)
        {
            onWriteFailed(Status.INTERNAL.withDescription("failed to compress response: " + t).withCause(t));
            return;
        }
        // a streamed response's frame (a one-response method's single response may be held back for the STATUS)
        final OutboundFrame streamed = method.type().serverSendsOneMessage() ? null :
            responseFrame(value, payloadLength, encoded);
        final OutboundFrame headers;
        // a method that answers once got a second response (every one is held until the STATUS)
        boolean tooMany = false;
        OutboundFrame[] batch = null;
        int batchCount = 0;
        long topUp = 0;
        Subscription topUpFrom = null;
        try
        {
            synchronized (this)
            {
                if (closed)
                {
                    Operators.onDiscard(value, currentContext());
                    return;
                }
                tooMany = streamed == null && pendingResponse != null;
                // the response window (see RESPONSE_WINDOW): one fewer asked ahead; half spent, ask for more
                if (!tooMany && --upstreamAhead <= RESPONSE_WINDOW / 2 && peerDemandLeft > 0)
                {
                    topUp = topUpLocked();
                    topUpFrom = upstream;
                }
                headers = tooMany ? null : takeHeaders();
                if (tooMany)
                {
                    // handled below, outside the monitor
                }
                else if (streamed != null)
                {
                    server.metrics().messageSent(method, payloadLength);
                    value = null;
                    final boolean collecting = out.collector == Thread.currentThread();
                    if (collecting || out.count > 0 || out.writing)
                    {
                        final int adding = streamed.length() + (headers != null ? headers.length() : 0);
                        if (collecting && !out.writing && out.count > 0 &&
                            out.bytes + adding > WireConnection.COALESCE_LIMIT)
                        {
                            // the outbox holds a transport message's worth: it leaves now, this response starts the next
                            out.writing = true;
                            batchCount = out.count;
                            batch = takeOutbox();
                            toOutbox(headers);
                            toOutbox(streamed);
                        }
                        else
                        {
                            toOutbox(headers);
                            toOutbox(streamed);
                            if (out.writing || collecting)
                            {
                                return; // leaves with the outbox: written by its writer, or when the delivery returns
                            }
                            out.writing = true;
                            batchCount = out.count;
                            batch = takeOutbox();
                        }
                    }
                }
                else
                {
                    // held back to travel with the STATUS in one transport message
                    server.metrics().messageSent(method, payloadLength);
                    pendingResponse = value;
                    pendingEncoded = encoded;
                    pendingPayloadLength = encoded != null ? encoded.length : payloadLength;
                    value = null;
                }
            }
            if (tooMany)
            {
                // the handler's error, ended INTERNAL as grpc-java's server does; the first response is not sent
                Operators.onDiscard(value, currentContext());
                cancelCall(Status.INTERNAL.withDescription("Too many responses"), null);
                return;
            }
            if (batch != null)
            {
                writeOutbox(batch, batchCount);
                return;
            }
            if (headers != null)
            {
                connection.write(headers);
            }
            if (streamed != null)
            {
                connection.write(streamed);
            }
            if (value != null)
            {
                connection.write(responseFrame(value, payloadLength, encoded));
            }
        }
        finally
        {
            if (topUp > 0)
            {
                topUpFrom.request(topUp); // within the handler's own emission: Reactive Streams allows it (3.3)
            }
        }
    }

    /** Guarded by this: appends a frame (null: none) to the outbox. */
    private void toOutbox(final OutboundFrame frame)
    {
        final Outbox out = outbox();
        if (frame == null)
        {
            return;
        }
        if (out.frames == null)
        {
            out.frames = out.spare != null ? out.spare : new OutboundFrame[16];
            out.spare = null;
        }
        else if (out.count == out.frames.length)
        {
            out.frames = Arrays.copyOf(out.frames, out.count * 2);
        }
        out.frames[out.count++] = frame;
        out.bytes += frame.length();
    }

    /** Guarded by this: takes the outbox's frames (out.count of them, read before) for the writer. */
    private OutboundFrame[] takeOutbox()
    {
        final Outbox out = outbox();
        final OutboundFrame[] taken = out.frames;
        out.frames = out.spare;
        out.spare = null;
        out.count = 0;
        out.bytes = 0;
        return taken;
    }

    /**
     * The outbox's writer (out.writing set by the caller under this): writes the frames taken, then whatever
     * joined the outbox meanwhile, until it is empty. Outside the monitor, as every write.
     */
    private void writeOutbox(final OutboundFrame[] frames, final int count)
    {
        final Outbox out = outbox();
        OutboundFrame[] batch = frames;
        int n = count;
        while (true)
        {
            try
            {
                connection.writeAll(batch, n);
            }
            catch (final RuntimeException | Error e)
            {
                synchronized (this)
                {
                    out.writing = false; // whoever writes next is not left waiting for this writer
                }
                throw e;
            }
            Arrays.fill(batch, 0, n, null);
            synchronized (this)
            {
                // the collector writing what it collected leaves what joined meanwhile to itself: it writes it when full
                // or when its delivery returns
                if (out.count == 0 || out.collector == Thread.currentThread())
                {
                    out.writing = false;
                    if (out.frames == null)
                    {
                        out.frames = batch;
                    }
                    else
                    {
                        out.spare = batch;
                    }
                    return;
                }
                n = out.count;
                final OutboundFrame[] next = out.frames;
                out.frames = batch;
                out.count = 0;
                out.bytes = 0;
                batch = next;
            }
        }
    }

    /**
     * Requests responses from the handler's publisher, collecting what it emits on this thread meanwhile into one
     * write (see the outbox's fields) unless another thread already collects.
     */
    private void requestUpstream(final Subscription s, final long n, final boolean collecting)
    {
        if (!collecting)
        {
            s.request(n);
            return;
        }
        try
        {
            s.request(n);
        }
        finally
        {
            endCollecting();
        }
    }

    /** Guarded by this: makes this thread the collector if none is; @return whether it did (then endCollecting). */
    private boolean startCollecting()
    {
        final Outbox out = outbox();
        if (out == null || out.collector != null)
        {
            return false;
        }
        out.collector = Thread.currentThread();
        return true;
    }

    /**
     * Makes this thread collect the call's responses (see the outbox's fields) while it delivers the request of a
     * server-streaming call to the handler, if no other thread collects: a handler that streams its answer inside that
     * delivery has its responses written together when it returns. Not for calls whose client sends many messages: a
     * bidi handler that answers each request with one response would only pay two monitors per request for it.
     *
     * @return true if this thread collects now: then call {@link #endCollecting} when the delivery returns.
     */
    final boolean beginCollecting()
    {
        if (method.type().serverSendsOneMessage() || !method.type().clientSendsOneMessage())
        {
            return false;
        }
        synchronized (this)
        {
            return startCollecting();
        }
    }

    /** This thread stops collecting: writes what it collected, unless another thread is writing the outbox. */
    final void endCollecting()
    {
        final Outbox out = outbox();
        final OutboundFrame[] batch;
        final int count;
        synchronized (this)
        {
            out.collector = null;
            if (out.count == 0 || out.writing)
            {
                return;
            }
            out.writing = true;
            count = out.count;
            batch = takeOutbox();
        }
        writeOutbox(batch, count);
    }

    @Override
    public void onError(final Throwable error)
    {
        if (error == null)
        {
            throw brokenPublisher("onError(null)", false);
        }
        final Throwable t = GrpcStatusExceptions.translate(error);
        // Any other exception ends the call UNKNOWN without its message, as grpc-java's and reactive-grpc's servers
        // do: a message may carry what the client must not see (a query, a path, a host); it stays in the log.
        final Status status = carriesStatus(t) ? Status.fromThrowable(t) : Status.UNKNOWN.withCause(t);
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
            // the exception stays in the server's log (rate-limited per method: a peer can make every call
            // fail); the client gets the code only. Methods of services the server does not list (a
            // fallback registry's, whose names a client chooses) share one key: they cannot fill the limiter's keys.
            final String name = method.fullMethodName();
            final int slash = name.lastIndexOf('/');
            final String key = slash > 0 && server.hasService(name.substring(0, slash)) ? name :
                RpcServer.Builder.OTHER_METHOD;
            FAILURE_LOG.log(key, "call " + name + " from " + connection.peer() + " failed", t);
        }
        finish(status, trailers);
    }

    @Override
    public void onComplete()
    {
        finish(Status.OK, trailersCopy());
    }

    /** @return whether the exception or one of its causes is an RpcException (then its status is the call's). */
    private static boolean carriesStatus(final Throwable t)
    {
        int depth = 0;
        for (Throwable c = t; c != null && depth < 64; c = c.getCause(), depth++) // a chain may loop (initCause)
        {
            if (c instanceof RpcException)
            {
                return true;
            }
        }
        return false;
    }

    /**
     * The handler's publisher broke Reactive Streams rule 2.13 (a null signal): the call ends INTERNAL (its
     * subscription counts as cancelled), and the publisher gets the NullPointerException the rule asks for.
     *
     * @param signal the signal it sent.
     * @param cancel  whether to cancel its subscription (allowed within onNext, not within onError: rule 2.3).
     * @return the exception to throw to the publisher.
     */
    private NullPointerException brokenPublisher(final String signal, final boolean cancel)
    {
        final Subscription s;
        synchronized (this)
        {
            s = upstream;
        }
        final String what = "the handler's publisher signalled " + signal + " (Reactive Streams rule 2.13)";
        finish(Status.INTERNAL.withDescription(what), trailersCopy());
        if (cancel && s != null)
        {
            s.cancel(); // it may go on emitting otherwise
        }
        return new NullPointerException(what);
    }

    /**
     * A method that answers once completing without its response (held until now; a scalar one ended the call
     * already): the handler's error (Mono.empty()), ended INTERNAL as grpc-java's server does, not OK, which the
     * server's metrics, counters and interceptors recorded while the client reported INTERNAL.
     */
    @Override
    Status responseMissingLocked()
    {
        return pendingResponse == null && method.type().serverSendsOneMessage() ?
            Status.INTERNAL.withDescription("Completed without a response") : null;
    }

    // ------------------------------------------------------------ ServerCall's hooks

    @Override
    int endingLocked(final OutboundFrame headers)
    {
        final Outbox out = outbox();
        upstream = null;
        if (out == null || (out.count == 0 && !out.writing))
        {
            return END_NOT_QUEUED;
        }
        // responses wait in the outbox: the end goes after them (with them, when this thread writes it)
        toOutbox(headers);
        toOutbox(this);
        if (out.writing)
        {
            return END_QUEUED;
        }
        out.writing = true;
        return END_QUEUED_WRITE;
    }

    @Override
    void writeQueuedEnd()
    {
        final Outbox out = outbox();
        final OutboundFrame[] batch;
        final int count;
        synchronized (this)
        {
            // this thread is the outbox's writer (endingLocked): nothing else takes from it meanwhile
            count = out.count;
            batch = takeOutbox();
        }
        writeOutbox(batch, count);
    }

    @Override
    void abortedLocked()
    {
        final Outbox out = outbox();
        if (out != null && out.count > 0)
        {
            // collected responses not yet written never leave: the call ended first
            Arrays.fill(out.frames, 0, out.count, null);
            out.count = 0;
            out.bytes = 0;
        }
    }

    @Override
    void abortResponses()
    {
        final Subscription s;
        synchronized (this)
        {
            s = upstream; // closed already: no subscription is taken from now on (onSubscribe cancels it)
            upstream = null;
        }
        if (s != null)
        {
            s.cancel();
        }
    }

    @Override
    void releaseHandlerResources()
    {
        if (worker != null)
        {
            // let already scheduled signals run, then release the worker (at once if its executor refuses even that)
            try
            {
                worker.schedule(worker::dispose);
            }
            catch (final RuntimeException rejected)
            {
                worker.dispose();
            }
        }
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
            // one task at a time carries the demand: a client sending REQUEST_N after REQUEST_N while the handler's
            // executor is busy adds to it instead of queueing a task per frame there
            synchronized (this)
            {
                demandForWorker = addCap(demandForWorker, demand);
                if (demandTaskQueued)
                {
                    return;
                }
                demandTaskQueued = true;
            }
            Runnable task = demandTask;
            if (task == null)
            {
                task = this::requestQueuedDemand;
                demandTask = task;
            }
            execute(task);
        }
    }

    private void requestQueuedDemand()
    {
        final long demand;
        synchronized (this)
        {
            demand = demandForWorker;
            demandForWorker = 0;
            demandTaskQueued = false;
        }
        if (demand > 0)
        {
            requestResponses(demand);
        }
    }

    private void requestResponses(final long demand)
    {
        final Subscription s;
        final boolean collecting;
        final long n;
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
            peerDemandLeft = addCap(peerDemandLeft, demand);
            n = topUpLocked();
            collecting = n > 0 && startCollecting();
        }
        if (n > 0)
        {
            requestUpstream(s, n, collecting);
        }
    }

    /**
     * Guarded by this: how many more responses to ask of the handler now (see {@link #RESPONSE_WINDOW}), counted as
     * asked; 0 when the window is full, no demand is left, or the connection's queue is long (then the connection's
     * drain resumes this call).
     */
    private long topUpLocked()
    {
        if (peerDemandLeft == 0 || closed)
        {
            return 0;
        }
        final long ahead = Math.max(0, upstreamAhead);
        if (ahead > RESPONSE_WINDOW / 2)
        {
            return 0;
        }
        if (connection.queuedFrames() >= QUEUED_HIGH)
        {
            if (waitingForWrites)
            {
                return 0;
            }
            if (connection.whenDrained(this::resumeAfterWrites))
            {
                waitingForWrites = true;
                return 0;
            }
            // drained meanwhile: go on
        }
        final long n = Math.min(RESPONSE_WINDOW - ahead, peerDemandLeft);
        if (peerDemandLeft != Long.MAX_VALUE)
        {
            peerDemandLeft -= n;
        }
        upstreamAhead = ahead + n;
        return n;
    }

    /** The connection's queue drained (its writer's thread): ask the handler for more if the client wants more. */
    private void resumeAfterWrites()
    {
        final Subscription s;
        final long n;
        synchronized (this)
        {
            waitingForWrites = false;
            s = upstream;
            n = s == null ? 0 : topUpLocked();
        }
        if (n > 0)
        {
            s.request(n);
        }
    }
}
