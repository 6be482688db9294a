package io.reverb.rpc.internal;

import io.reverb.rpc.AcceptedConnection;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.compression.Codec;
import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.compression.GzipCodec;
import io.reverb.common.LogLimiter;
import io.reverb.rpc.wire.FrameCodec;
import io.reverb.rpc.wire.StatusFlyweight;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
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
 * The server side of one call, the part every kind shares: it subscribes to the handler's responses (pulling only
 * as far as the client's REQUEST_N allow), writes them, and ends the call with STATUS, the single response of a
 * one-response method travelling with it in one transport message (the call is its own last frame). Its Reactor
 * context carries the {@link RpcContext}. {@link UnaryServerCall} and {@link StreamingServerCall} add how requests
 * reach the handler.
 *
 * <p>State is guarded by {@code this}; no frame is written while holding it.
 *
 * @param <Req>  request type.
 * @param <Resp> response type.
 */
abstract class ServerCall<Req, Resp> extends RpcStream implements OutboundFrame, CoreSubscriber<Resp>, RpcContext.Carrier
{
    private static final LogLimiter FAILURE_LOG = new LogLimiter((line, t) -> WireConnection.LOG.warn(line, t));

    /** The encodings the client decompresses besides gzip, as grpc-java's header. */
    static final Metadata.Key<String> ACCEPT_ENCODING = Metadata.Key.of("grpc-accept-encoding",
        Metadata.ASCII_STRING_MARSHALLER);
    final ServerWireConnection connection;
    final ServerRuntime server;
    final MethodDescriptor<Req, Resp> method;
    /** The method's counters in the process's counters file, or null when the process keeps none. */
    private final ServerMethodCounters counters;
    private final Metadata requestMetadata;
    private final Deadline deadline;
    final Scheduler.Worker worker;
    private final long startNanos;
    // created on first use: a plain unary handler never asks for them
    private RpcContext rpcContext;
    // why the call ended early (guarded by this), for a context created after that
    private Status earlyEnd;
    private volatile Context reactorContext;
    // the final frame(s), encoded by this object: the single response (if held back) and the STATUS
    private Resp pendingResponse;
    private int pendingPayloadLength;
    // the held-back response compressed (or null: the marshaller writes it into the frame)
    private EncodedMessage pendingEncoded;
    private int finalCode;
    private byte[] finalDescription;
    private Metadata finalTrailers;
    private int finalLength;
    // responses (handler output), guarded by this
    private Subscription upstream;
    private long upstreamDemandBeforeSubscribe;
    private boolean headersSent;
    boolean closed;
    private Disposable deadlineTimer;
    // the single request of a unary or server-streaming call: its marshaller may lend it memory, given back once the
    // final frame is written (responses written before it may reference the request)
    private volatile Req singleRequest;
    // the inflated bytes of a one-request call's compressed request, held against the connection's budget until the
    // call ends (the handler may keep the request that long); guarded by this
    private long inflatedHeld;
    private InflationBudget heldBudget;
    // A streaming call's responses go out together (one write lock, claim and commit for many, WireConnection#writeAll)
    // when the handler's publisher emits them inside our request to it: the requesting thread (the collector) collects
    // them in the outbox and writes it when the request returns or the outbox holds a transport message's worth. A
    // response emitted on any other thread is written at once. One thread writes the outbox at a time (writing):
    // a frame produced meanwhile joins the outbox and leaves after the frames ahead of it. All guarded by this.
    // (in an object of their own, null for a one-response method: a unary call's object is no larger for them)
    private final Outbox out;

    @SuppressWarnings("unchecked")
    ServerCall(final ServerWireConnection connection, final ServerRuntime server, final int streamId,
        final ServiceDefinition.ServerMethodDefinition<?, ?> definition, final Metadata metadata, final long timeoutNanos,
        final int initialRequestN)
    {
        this(connection, server, streamId, (MethodDescriptor<Req, Resp>)definition.method(), metadata, timeoutNanos,
            initialRequestN, server.handlerScheduler(), !definition.method().type().serverSendsOneMessage());
    }

    /**
     * @param handlers runs the handler, or null for the transport's thread.
     * @param outbox   whether the responses may be collected into one write (see the field {@code out}).
     */
    ServerCall(final ServerWireConnection connection, final ServerRuntime server, final int streamId,
        final MethodDescriptor<Req, Resp> method, final Metadata metadata, final long timeoutNanos,
        final int initialRequestN, final Scheduler handlers, final boolean outbox)
    {
        this.connection = connection;
        this.server = server;
        this.streamId = streamId;
        this.method = method;
        // the timeout is read from the deadline (no field of its own: 8 bytes less per call)
        this.deadline = timeoutNanos >= 0 ?
            Deadline.after(timeoutNanos, TimeUnit.NANOSECONDS, Deadline.Ticker.SYSTEM) : null;
        this.requestMetadata = metadata;
        this.upstreamDemandBeforeSubscribe = fromWire(initialRequestN);
        this.worker = handlers != null ? handlers.createWorker() : null;
        this.startNanos = server.metrics().callStarted();
        // looked up once: the end counts into the same counters (the handler is the subclasses' field, so the call
        // object is no larger for it); the start is counted by the connection after the dispatch (countStarted)
        this.counters = server.counters(method);
        this.out = outbox ? new Outbox() : null;
    }

    /** A streaming call's responses on their way to the connection (see ServerCall's field {@code out}). */
    private static final class Outbox
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
     * Counts the call as started in the method's counters. The connection calls it once per call, right after
     * {@link #start()} returned (or, for a call ended before its start, when it is dropped): a handler that answers
     * at once has then already written its response, so the locked increment is not on the response's path.
     */
    final void countStarted()
    {
        if (counters != null)
        {
            counters.callStarted();
        }
    }

    /**
     * @return the call for this method: without interceptors a unary handler is invoked with the request itself
     * ({@link UnaryServerCall}); every other call gives the handler a request {@code Flux}.
     */
    static ServerCall<?, ?> create(final ServerWireConnection connection, final ServerRuntime server, final int streamId,
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

    // ------------------------------------------------------------ what the kinds add

    /** The call is registered: start the handler now, or when its request arrives. */
    abstract void begin();

    /**
     * A request message.
     *
     * @param value       the request.
     * @param endOfStream the client sends no more.
     */
    abstract void onRequest(Req value, boolean endOfStream);

    /**
     * A request message and its size on the wire (decompressed): by default {@link #onRequest(Object, boolean)}.
     *
     * @param value       the request.
     * @param endOfStream the client sends no more.
     * @param size        its serialized size in bytes.
     */
    void onRequest(final Req value, final boolean endOfStream, final int size)
    {
        onRequest(value, endOfStream);
    }

    /** The client sends no more requests. */
    abstract void onHalfClose();

    /**
     * The call ended before the handler's responses did (cancel, deadline, failure): end the request side too.
     */
    abstract void requestsAborted();

    /** The responses ended: no more demand for requests goes to the client. */
    abstract void responsesEnded();

    /**
     * The call is over and released, after {@link #requestsAborted} or {@link #responsesEnded}.
     *
     * @param status OK if its status was sent by {@link #finish}; otherwise why it ended early.
     */
    void ended(final Status status)
    {
    }

    // ------------------------------------------------------------ lifecycle

    void start()
    {
        if (deadline != null)
        {
            final long remainingNanos = deadline.timeRemainingNanos();
            if (remainingNanos <= 0 && endExpired())
            {
                return; // the client's deadline passed before the call left (a timeout of 0), or in transit
            }
            final Disposable timer = server.scheduleDeadline(
                () -> cancelCall(Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded on the server"), null),
                remainingNanos);
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
        begin();
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

    final synchronized boolean isClosed()
    {
        return closed;
    }

    /**
     * Before a handler is dispatched: a call whose deadline already passed (e.g. it waited for a busy handler
     * executor, or its deadline timer is late because the process was frozen) ends DEADLINE_EXCEEDED instead of
     * running a handler for a caller that is gone.
     *
     * @return true if the call is over (ended now or before): do not run the handler.
     */
    final boolean endIfClosedOrExpired()
    {
        return isClosed() || endIfExpired();
    }

    final boolean endIfExpired()
    {
        return deadline != null && deadline.isExpired() && endExpired();
    }

    private boolean endExpired()
    {
        cancelCall(Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded before the call was dispatched"), null);
        return true;
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
        responses.subscribe(this);
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
            closed = true;
            final Metadata trailers = rpcContext != null && rpcContext.hasResponseTrailers() ?
                rpcContext.responseTrailers().copy() : null;
            finalCode = Status.OK.code().value();
            finalDescription = null;
            finalTrailers = trailers;
            finalLength = StatusFlyweight.frameLength(null, trailers) + HEADER + pendingPayloadLength;
            timer = deadlineTimer;
            deadlineTimer = null;
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

    final synchronized RpcContext context()
    {
        if (rpcContext == null)
        {
            rpcContext = new RpcContext(method, requestMetadata, deadline, // none sent: made when a handler asks
                connection.peer(), connection);
            if (earlyEnd != null)
            {
                rpcContext.cancel(earlyEnd); // no listener yet: nothing runs under this lock
            }
        }
        return rpcContext;
    }

    /**
     * The call's context for a subscriber that asks without a Reactor context ({@link RpcContext#of}).
     */
    @Override
    public final RpcContext rpcContext()
    {
        return context();
    }

    /** The connection the call came on; no context is made for it ({@link RpcContext.Carrier#connection}). */
    @Override
    public final AcceptedConnection connection()
    {
        return connection;
    }

    /** The call's deadline; no context is made for it. */
    @Override
    public final Deadline deadline()
    {
        return deadline;
    }

    /** The client's metadata if it has entries; no context is made for it. */
    @Override
    public final Metadata requestMetadataIfAny()
    {
        final RpcContext context;
        synchronized (this)
        {
            context = rpcContext;
        }
        if (context != null)
        {
            // the context may have made an empty one meanwhile; it is the same object otherwise
            return context.hasMetadata() ? context.metadata() : null;
        }
        return requestMetadata != null && !requestMetadata.isEmpty() ? requestMetadata : null;
    }

    /** No context is made to say "identity" when the server compresses nothing by default (the same either way). */
    @Override
    public final void responseCompression(final String codecName)
    {
        if (CodecRegistry.IDENTITY.equals(codecName) && server.defaultCompression() == OutboundCompression.NONE)
        {
            synchronized (this)
            {
                if (rpcContext == null)
                {
                    return;
                }
            }
        }
        context().responseCompression(codecName);
    }

    /** For tests: whether the call's {@link RpcContext} was made (it is made only when asked for). */
    final synchronized boolean hasContext()
    {
        return rpcContext != null;
    }

    private synchronized Metadata trailersCopy()
    {
        return rpcContext != null && rpcContext.hasResponseTrailers() ? rpcContext.responseTrailers().copy() : null;
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
        final boolean collecting;
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
        Resp earlier = null;
        int earlierLength = 0;
        EncodedMessage earlierEncoded = null;
        OutboundFrame[] batch = null;
        int batchCount = 0;
        synchronized (this)
        {
            if (closed)
            {
                Operators.onDiscard(value, currentContext());
                return;
            }
            headers = takeHeaders();
            server.metrics().messageSent(method, payloadLength);
            if (streamed != null)
            {
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
            else if (method.type().serverSendsOneMessage() && pendingResponse == null)
            {
                // held back to travel with the STATUS in one transport message
                pendingResponse = value;
                pendingEncoded = encoded;
                pendingPayloadLength = encoded != null ? encoded.length : payloadLength;
                value = null;
            }
            else if (pendingResponse != null)
            {
                earlier = pendingResponse;
                earlierLength = pendingPayloadLength;
                earlierEncoded = pendingEncoded;
                pendingResponse = null;
                pendingEncoded = null;
            }
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
        if (earlier != null)
        {
            connection.write(responseFrame(earlier, earlierLength, earlierEncoded));
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

    /** Guarded by this: appends a frame (null: none) to the outbox. */
    private void toOutbox(final OutboundFrame frame)
    {
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

    private OutboundFrame responseFrame(final Resp value, final int payloadLength, final EncodedMessage encoded)
    {
        return encoded == null ?
            new OutboundFrame.Message<>(streamId, false, method.responseMarshaller(), value, payloadLength, this) :
            new OutboundFrame.Message<>(streamId, false, EncodedMessage.MARSHALLER, encoded, encoded.length, this);
    }

    /**
     * @return what the next response is compressed with: the handler's choice ({@link RpcContext#responseCompression})
     * or the server's default; a codec other than gzip (which every peer has) only when the client accepts it.
     */
    private OutboundCompression responseCompression()
    {
        final RpcContext context = rpcContext;
        final String name = context == null ? null : context.responseCompression();
        if (name == null)
        {
            return server.defaultCompression();
        }
        if (CodecRegistry.IDENTITY.equals(name))
        {
            return OutboundCompression.NONE;
        }
        final Codec codec = context.responseCompressor() != null ? context.responseCompressor() :
            server.config().codecs.lookup(name);
        if (codec == null || (!GzipCodec.NAME.equals(name) && !clientAccepts(name)))
        {
            return OutboundCompression.NONE;
        }
        return new OutboundCompression(codec, server.config().minCompressionSize);
    }

    /** Whether the client's {@code grpc-accept-encoding} lists the codec. */
    private boolean clientAccepts(final String name)
    {
        final String accepted = requestMetadata == null ? null : requestMetadata.get(ACCEPT_ENCODING);
        if (accepted == null)
        {
            return false;
        }
        for (final String token : accepted.split(","))
        {
            if (token.trim().equals(name))
            {
                return true;
            }
        }
        return false;
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
    public void onError(final Throwable error)
    {
        final Throwable t = GrpcStatusExceptions.translate(error);
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
            // the stack trace stays in the server's log (rate-limited per method: a peer can make every call
            // fail); the client gets the code and message only
            FAILURE_LOG.log(method.fullMethodName(), "call " + method.fullMethodName() + " from " + connection.peer() +
                " failed", t);
        }
        finish(status, trailers);
    }

    @Override
    public void onComplete()
    {
        finish(Status.OK, trailersCopy());
    }

    /**
     * Ends the call with its status, after the responses written (with the one held back, if any).
     *
     * @param status   the status.
     * @param trailers its trailers, or null.
     */
    final void finish(final Status status, final Metadata trailers)
    {
        final OutboundFrame headers;
        final Disposable timer;
        boolean viaOutbox = false;
        OutboundFrame[] batch = null;
        int batchCount = 0;
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
            finalDescription = FrameCodec.utf8(status.description());
            finalTrailers = trailers;
            finalLength = StatusFlyweight.frameLength(finalDescription, trailers) +
                (pendingResponse != null ? HEADER + pendingPayloadLength : 0);
            timer = deadlineTimer;
            deadlineTimer = null;
            if (out != null && (out.count > 0 || out.writing))
            {
                // responses wait in the outbox: the end goes after them (with them, when this thread writes it)
                toOutbox(headers);
                toOutbox(this);
                if (!out.writing)
                {
                    out.writing = true;
                    batchCount = out.count;
                    batch = takeOutbox();
                }
                viaOutbox = true;
            }
        }
        responsesEnded();
        if (viaOutbox)
        {
            if (batch != null)
            {
                writeOutbox(batch, batchCount);
            }
            released(status, timer);
            ended(Status.OK);
            return;
        }
        // closed: nothing changes the final frame's fields any more, so it is written outside the monitor
        if (headers != null)
        {
            connection.write(headers);
        }
        connection.write(this);
        released(status, timer);
        ended(Status.OK);
    }

    /**
     * A response of a stream ({@link TransportServerStream}): held back, so that a call's last response travels with
     * its status, and the one held before it (if any) is written now. Its caller writes one response at a time.
     *
     * @param value the response.
     */
    final void sendHeld(final Resp value)
    {
        final int payloadLength;
        final EncodedMessage encoded;
        try
        {
            payloadLength = method.responseMarshaller().serializedSize(value);
            final OutboundCompression compression = responseCompression();
            encoded = compression.applies(payloadLength) ?
                compression.encode(method.responseMarshaller(), value, payloadLength) : null;
        }
        catch (final Throwable t)
        {
            onWriteFailed(Status.INTERNAL.withDescription("failed to encode response: " + t).withCause(t));
            return;
        }
        final OutboundFrame headers;
        final Resp earlier;
        final int earlierLength;
        final EncodedMessage earlierEncoded;
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            headers = takeHeaders();
            server.metrics().messageSent(method, payloadLength);
            earlier = pendingResponse;
            earlierLength = pendingPayloadLength;
            earlierEncoded = pendingEncoded;
            pendingResponse = value;
            pendingEncoded = encoded;
            pendingPayloadLength = encoded != null ? encoded.length : payloadLength;
        }
        if (headers != null)
        {
            connection.write(headers);
        }
        if (earlier != null)
        {
            connection.write(responseFrame(earlier, earlierLength, earlierEncoded));
        }
    }

    /** Writes the response {@link #sendHeld} holds back, if any, now. */
    final void flushHeld()
    {
        final Resp held;
        final int length;
        final EncodedMessage encoded;
        synchronized (this)
        {
            held = pendingResponse;
            if (closed || held == null)
            {
                return;
            }
            length = pendingPayloadLength;
            encoded = pendingEncoded;
            pendingResponse = null;
            pendingEncoded = null;
        }
        connection.write(responseFrame(held, length, encoded));
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
            at = pendingEncoded != null ?
                encoder.message(buffer, at, streamId, false, EncodedMessage.MARSHALLER, pendingEncoded,
                    pendingPayloadLength) :
                encoder.message(buffer, at, streamId, false, method.responseMarshaller(), pendingResponse,
                    pendingPayloadLength);
            buffer.limit(limit); // the marshaller wrote within a limit narrowed to its payload
        }
        encoder.status(buffer, at, streamId, finalCode, finalDescription, finalTrailers);
        // every response is written by now (frames go in order): the request's lifetime ends here
        releaseSingleRequest();
    }

    /** Gives the single request's memory back to its marshaller, once: no response references it any more. */
    final void releaseSingleRequest()
    {
        final Req request = singleRequest;
        if (request != null)
        {
            singleRequest = null;
            method.requestMarshaller().release(request);
        }
    }

    @Override
    public void failed(final Status status)
    {
        // the final frame could not be written (e.g. the response is too large): tell the client what happened
        connection.write(new OutboundFrame.StatusFrame(streamId, status, null));
    }

    // ------------------------------------------------------------ RpcStream (frames from the client)

    @Override
    final void onMessage(final ByteBuffer payload, final boolean endOfStream)
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
        if (method.type().clientSendsOneMessage() && singleRequest == null)
        {
            singleRequest = value;
        }
        onRequest(value, endOfStream, size);
    }

    /**
     * A compressed request, inflated (on the connection's inflater lane): delivered as {@link #onMessage}, its bytes
     * counted against the connection's budget until consumed. A call that takes one request holds them until it
     * ends (its handler may keep the request that long); a streaming call's request is consumed once it is queued on
     * the request stream, whose length the handler's demand bounds.
     *
     * @param array       the inflated bytes; its length is reserved in the budget.
     * @param length      the message's length.
     * @param endOfStream the client sends no more.
     * @param budget      the connection's budget.
     */
    final void onInflatedMessage(final byte[] array, final int length, final boolean endOfStream,
        final InflationBudget budget)
    {
        final boolean held = method.type().clientSendsOneMessage() && holdInflated(array.length, budget);
        try
        {
            onMessage(ByteBuffer.wrap(array, 0, length), endOfStream);
        }
        finally
        {
            if (!held)
            {
                budget.release(array.length);
            }
        }
    }

    private synchronized boolean holdInflated(final long bytes, final InflationBudget budget)
    {
        if (closed)
        {
            return false;
        }
        inflatedHeld += bytes;
        heldBudget = budget;
        return true;
    }

    private void releaseInflated()
    {
        // no monitor on the common path (nothing inflated): the step that closed the call took the monitor after any
        // holdInflated that succeeded, so this thread sees its write
        if (heldBudget == null)
        {
            return;
        }
        final long bytes;
        final InflationBudget budget;
        synchronized (this)
        {
            bytes = inflatedHeld;
            budget = heldBudget;
            inflatedHeld = 0;
        }
        if (bytes != 0)
        {
            budget.release(bytes);
        }
    }

    void onCancel(final Status reason)
    {
        cancelCall(null, reason);
    }

    @Override
    void onUndecodableMessage(final Status status)
    {
        cancelCall(status, null);
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
        final boolean collecting;
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
            collecting = startCollecting();
        }
        requestUpstream(s, demand, collecting);
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
        final RpcContext cancelContext;
        final Disposable timer;
        final Status why = reason != null ? reason : status != null ? status : Status.CANCELLED;
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
            if (out != null && out.count > 0)
            {
                // collected responses not yet written never leave: the call ended first
                Arrays.fill(out.frames, 0, out.count, null);
                out.count = 0;
                out.bytes = 0;
            }
            trailers = status != null ? trailersCopy() : null;
            earlyEnd = why;
            cancelContext = rpcContext;
            timer = deadlineTimer;
            deadlineTimer = null;
        }
        if (cancelContext != null)
        {
            // client calls made while handling this one end with it, even those subscribed on their own
            cancelContext.cancel(why);
        }
        if (status != null)
        {
            connection.write(new OutboundFrame.StatusFrame(streamId, status, trailers));
        }
        if (s != null)
        {
            s.cancel();
        }
        requestsAborted();
        released(status != null ? status : reason != null ? reason : Status.CANCELLED, timer);
        ended(why);
    }

    /**
     * @param status how the call ended.
     * @param timer  its deadline timer, taken (and cleared) in the step that closed the call, or null.
     */
    private void released(final Status status, final Disposable timer)
    {
        if (timer != null)
        {
            timer.dispose();
        }
        releaseInflated(); // closed: nothing holds more from now on
        connection.remove(streamId);
        server.metrics().callEnded(method, status, startNanos);
        if (counters != null)
        {
            counters.callEnded(status.code().value());
        }
        if (worker != null)
        {
            // let already scheduled signals run, then release the worker
            worker.schedule(worker::dispose);
        }
    }
}
