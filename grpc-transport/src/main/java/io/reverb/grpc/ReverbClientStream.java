package io.reverb.grpc;

import io.grpc.Attributes;
import io.grpc.Deadline;
import io.grpc.DecompressorRegistry;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.internal.ClientStream;
import io.grpc.internal.ClientStreamListener;
import io.grpc.internal.InsightBuilder;
import io.grpc.internal.StatsTraceContext;
import io.grpc.internal.StreamListener;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.MethodDescriptor.MethodType;
import io.reverb.rpc.RpcClientConnection;
import io.reverb.rpc.compression.Codec;

import java.io.InputStream;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The client side of one grpc-java call over Reverb: a Reverb call on the transport's connection
 * ({@link RpcClientConnection#newCall}) whose requests are
 * what grpc-java writes and whose responses, headers and status go to grpc-java's listener. Frames on the wire are
 * Reverb's (CALL, MESSAGE, HALF_CLOSE, REQUEST_N, CANCEL / HEADERS, MESSAGE, STATUS), so the server may be a
 * grpc-java server over Reverb or a native Reverb server.
 *
 * <p>A unary call made by one of grpc-java's blocking stubs is answered on the thread that waits for it: the blocking
 * stub runs the call's callbacks in an executor of its own, drained by the waiting thread, and grpc-java's call layers
 * hand each callback (the retry layer's commit, headers, message, close) to it in a task of its own. Given from the
 * transport's thread one by one, each of those tasks wakes the waiting thread again; so rpc-core's response and status,
 * which arrive together, are given to that executor as one task, and the callbacks it makes run on the waiting thread,
 * where grpc-java's executor queues them behind it without another wake-up: one thread hand-off per call, as the
 * blocking stub's own design requires, instead of up to four.
 *
 * <p>The same holds for every unary call on that fast path, whatever its executor: its response, headers and status
 * go to grpc-java's listener in one task of the stream's serializer (this stream is that task, and the producer of
 * its one message), not in one task each.
 */
final class ReverbClientStream extends ReverbStream<ClientStreamListener>
    implements ClientStream, Runnable, StreamListener.MessageProducer
{
    /**
     * grpc-java's {@code io.grpc.Context} already carries a handled call's deadline and cancellation to the calls made
     * while handling it (the deadline arrives here as the call's own): rpc-core must not add its own inheritance on
     * top, or a call forked off grpc-java's Context would still end with the handled call.
     */
    private static final CallOptions DETACHED = CallOptions.DEFAULT.withoutContextPropagation();
    /**
     * The executor in which grpc-java's blocking stubs ({@code ClientCalls.blockingUnaryCall}, the generated blocking
     * stubs) wait for a call: its tasks run on the waiting thread, which drains it until the call is closed.
     */
    private static final String BLOCKING_STUB_EXECUTOR = "io.grpc.stub.ClientCalls$ThreadlessExecutor";

    private final ReverbClientTransport transport;
    private final MethodDescriptor<Payload, Payload> method;
    private final Metadata headers;
    /** What grpc-java writes, as the call's request publisher; never created for a unary call's fast path. */
    private volatile OutboundMessages requests;
    private final boolean waitForReady;
    private final boolean unary;
    private volatile ClientCallContext callContext;
    /** A unary call's request, held until halfClose sends it with the CALL frame (rpc-core's unary fast path). */
    private Payload unaryRequest;
    /** A unary call whose messages went to the request publisher instead (more than one written). */
    private boolean requestsUsed;
    private Deadline deadline;
    private CallOptions options;
    private boolean callStarted;
    private boolean headersDelivered;
    /** The executor of a blocking stub waiting for this call, or null. */
    private final Executor waitingCaller;
    /**
     * A unary call sent on rpc-core's fast path, which gives the response only together with its status, on one
     * thread: the response is held until then, and the end goes to the listener in one task ({@link #run}).
     */
    private volatile boolean unaryEnd;
    /** With {@link #unaryEnd}: the end goes to {@link #waitingCaller} (a blocking stub's) in that one task. */
    private volatile boolean handOff;
    /** With {@link #unaryEnd}, the response, held until its status. */
    private Payload heldResponse;
    /** {@link #run} was given to the serializer: its next run delivers the end. */
    private boolean endOnSerializer;
    /** The response of {@link #run}, until grpc-java takes it from this producer ({@link #next}). */
    private volatile Payload endMessage;
    /** The transport's list of open streams (guarded by the transport): linked in, and the neighbours. */
    boolean isLive;
    ReverbClientStream previousLive;
    ReverbClientStream nextLive;

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - Reverb's CallOptions is imported, grpc-java's is spelled out
    ReverbClientStream(
        final ReverbClientTransport transport, final MethodDescriptor<Payload, Payload> method, final Metadata headers,
        final io.grpc.CallOptions callOptions, final StatsTraceContext statsTraceContext)
    // CHECKSTYLE.ON: InlineFullyQualifiedName
    {
        super(statsTraceContext);
        this.transport = transport;
        this.method = method;
        this.headers = headers;
        this.waitForReady = callOptions.isWaitForReady();
        this.deadline = callOptions.getDeadline();
        this.unary = method.type() == MethodType.UNARY;
        this.waitingCaller = waitingCaller(callOptions.getExecutor());
    }

    /**
     * @param executor the executor of grpc-java's call (its call options'), or null.
     * @return it if it is the one a blocking stub waits in, else null.
     */
    static Executor waitingCaller(final Executor executor)
    {
        return executor != null && BLOCKING_STUB_EXECUTOR.equals(executor.getClass().getName()) ? executor : null;
    }

    /**
     * @return whether the call's end is handed to the waiting caller's thread (tests).
     */
    boolean handsOffToCaller()
    {
        return handOff;
    }

    @Override
    public void start(final ClientStreamListener listener)
    {
        this.listener = listener;
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's Metadata and Deadline are imported, Reverb's are spelled out
        final io.reverb.rpc.Metadata metadata = GrpcBridge.toReverb(headers);
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        // grpc-java's own headers (accept-encoding...) are dropped: most calls then carry none, and copy none
        CallOptions options = metadata == null ? DETACHED : DETACHED.withMetadata(metadata);
        if (deadline != null)
        {
            // CHECKSTYLE.OFF: InlineFullyQualifiedName - Reverb's Deadline (see above)
            options = options.withDeadline(io.reverb.rpc.Deadline.after(
                Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)), TimeUnit.NANOSECONDS,
                io.reverb.rpc.Deadline.Ticker.SYSTEM));
            // CHECKSTYLE.ON: InlineFullyQualifiedName
        }
        if (waitForReady)
        {
            options = options.withWaitForReady();
        }
        final Codec codec = outboundCodec();
        if (codec != null)
        {
            options = options.withCompression(codec); // grpc-java's CallOptions.withCompression, as Reverb's flag
        }
        statsTraceContext.clientOutboundHeaders();
        this.options = options;
        if (!method.type().clientSendsOneMessage())
        {
            startCall();
        }
        // else the CALL waits for the request: both then leave in one go, with the response demand grpc-java already
        // asked for, as Reverb's native unary calls do (no separate MESSAGE and REQUEST_N round)
    }

    private void startCall()
    {
        final Payload single;
        synchronized (this)
        {
            if (callStarted)
            {
                return;
            }
            callStarted = true;
            single = unaryRequest;
            unaryRequest = null;
        }
        final ClientCallContext context = new ClientCallContext(method, options);
        callContext = context;
        if (single != null)
        {
            // rpc-core's unary call gives its response only with its status: both then go to the listener in one
            // task, to a waiting blocking stub's thread if there is one (see the class comment)
            unaryEnd = true;
            handOff = waitingCaller != null;
            // the request goes with the CALL frame and the response straight to this subscriber: no request publisher
            transport.connection().newUnaryCall(method, options, single, context).subscribe(this);
        }
        else
        {
            transport.connection().newCall(method, options, requests(), context).subscribe(this);
        }
    }

    // ---------------------------------------------------------------- grpc-java -> Reverb

    @Override
    public void writeMessage(final InputStream message)
    {
        final Payload payload = outbound(message);
        if (unary)
        {
            final Payload earlier;
            synchronized (this)
            {
                if (awaitsUnaryRequest())
                {
                    unaryRequest = payload; // sent by halfClose
                    return;
                }
                // a second message on a unary method (grpc-java's stubs never do that): the server refuses it
                earlier = unaryRequest;
                unaryRequest = null;
                requestsUsed = true;
            }
            if (earlier != null)
            {
                requests().offer(earlier);
            }
        }
        requests().offer(payload);
        startCall();
    }

    @Override
    public boolean isReady()
    {
        if (unary)
        {
            synchronized (this)
            {
                if (awaitsUnaryRequest())
                {
                    return true; // the one message waits for halfClose, nothing to hold it back
                }
            }
        }
        return requests().isReady();
    }

    @Override
    public void halfClose()
    {
        final boolean fastPath;
        synchronized (this)
        {
            fastPath = unaryRequest != null && !callStarted;
        }
        if (!fastPath)
        {
            requests().complete();
        }
        startCall();
    }

    @Override
    public void cancel(final Status reason)
    {
        synchronized (this)
        {
            callStarted = true; // a call not sent yet never will be
            unaryRequest = null;
        }
        cancelInbound(); // rpc-core sends CANCEL
        cancelRequests();
        close(reason, new Metadata(), ClientStreamListener.RpcProgress.PROCESSED);
    }

    @Override
    public void setDeadline(final Deadline deadline)
    {
        this.deadline = deadline;
    }

    @Override
    public Attributes getAttributes()
    {
        return transport.getAttributes();
    }

    @Override
    public void appendTimeoutInsight(final InsightBuilder insight)
    {
        insight.appendKeyValue("remote_addr", transport.address());
    }

    @Override
    public void setAuthority(final String authority)
    {
    }

    @Override
    public void setFullStreamDecompression(final boolean fullStreamDecompression)
    {
    }

    @Override
    public void setDecompressorRegistry(final DecompressorRegistry decompressorRegistry)
    {
    }

    @Override
    public void setMaxInboundMessageSize(final int maxSize)
    {
        // enforced per channel by rpc-core (ReverbChannelBuilder.maxInboundMessageSize)
    }

    @Override
    public void setMaxOutboundMessageSize(final int maxSize)
    {
    }

    // ---------------------------------------------------------------- Reverb -> grpc-java (responses)

    @Override
    boolean refusesInbound()
    {
        return isClosed(); // closed before its call began (cancelled, transport shut down)
    }

    @Override
    void beforeMessage()
    {
        deliverHeadersOnce();
    }

    @Override
    public void onNext(final Payload payload)
    {
        if (unaryEnd)
        {
            heldResponse = payload; // its status follows at once, on this thread
            return;
        }
        deliver(payload);
    }

    @Override
    public void onError(final Throwable t)
    {
        if (handOff)
        {
            heldResponse = null; // rpc-core gives a unary response only with an OK status; none came before this
            toWaitingCaller(() -> failed(t));
            return;
        }
        heldResponse = null;
        failed(t);
    }

    @Override
    public void onComplete()
    {
        if (unaryEnd)
        {
            final Payload response = heldResponse;
            heldResponse = null;
            endMessage = response;
            if (handOff)
            {
                toWaitingCaller(this); // runs there, and then again on the serializer
            }
            else
            {
                run();
            }
            return;
        }
        completed();
    }

    /**
     * The end of a unary call sent on the fast path (see {@link #unaryEnd}), its response (if any) and its OK status,
     * given to the listener in one go: the first run (on the thread that is to run the listener) gives this to the
     * serializer, the second (on the serializer) delivers. The first happens-before the second (the serializer's
     * hand-over), so the flag needs no lock.
     */
    @Override
    public void run()
    {
        if (!endOnSerializer)
        {
            endOnSerializer = true;
            serializer.execute(this);
            return;
        }
        if (isClosed())
        {
            endMessage = null; // cancelled meanwhile
            return;
        }
        final Payload response = endMessage;
        if (response != null)
        {
            countInbound(response); // on the thread the listener runs on, as the message itself
            deliverHeadersOnce();
            listener.messagesAvailable(this);
        }
        closeNow(Status.OK, trailers(), ClientStreamListener.RpcProgress.PROCESSED);
    }

    /**
     * grpc-java's producer of the one response of {@link #run}: gives it once.
     */
    @Override
    public InputStream next()
    {
        final Payload m = endMessage;
        endMessage = null;
        return m == null ? null : m.stream();
    }

    private void failed(final Throwable t)
    {
        close(GrpcBridge.statusOf(t), GrpcBridge.trailersOf(t), GrpcBridge.progressOf(t));
    }

    private void completed()
    {
        close(Status.OK, trailers(), ClientStreamListener.RpcProgress.PROCESSED);
    }

    private Metadata trailers()
    {
        final ClientCallContext ctx = callContext;
        return GrpcBridge.toGrpc(ctx != null ? ctx.receivedTrailers() : null); // no empty Reverb Metadata made
    }

    /**
     * Runs the end of the call on the thread of the blocking stub that waits for it. That thread drains its executor
     * until grpc-java's call is closed, and the call is closed only by this stream's close (its listener's) or after
     * this stream was cancelled (which closes it on the cancelling thread): so a task the executor drops, once shut down,
     * belongs to a stream already closed, and has nothing left to do.
     *
     * @param end delivers the call's end to the listener.
     */
    private void toWaitingCaller(final Runnable end)
    {
        try
        {
            waitingCaller.execute(end);
        }
        catch (final RejectedExecutionException e)
        {
            end.run(); // shut down (the call is over for the caller): its stream is closed, this only checks that
        }
    }

    // ---------------------------------------------------------------- rpc-core's demand for requests

    @Override
    public void onCancel()
    {
    }

    @Override
    public void onTerminated()
    {
    }

    // ---------------------------------------------------------------- internals

    /** Under this stream's lock: a unary call whose one message is still to come, to go with the CALL frame. */
    private boolean awaitsUnaryRequest()
    {
        return !callStarted && unaryRequest == null && !requestsUsed;
    }

    private OutboundMessages requests()
    {
        OutboundMessages r = requests;
        if (r == null)
        {
            synchronized (this)
            {
                r = requests;
                if (r == null)
                {
                    requests = r = new OutboundMessages(this);
                }
            }
        }
        return r;
    }

    private void cancelRequests()
    {
        final OutboundMessages r = requests;
        if (r != null)
        {
            r.cancel();
        }
    }

    // on the serializer
    private void deliverHeadersOnce()
    {
        if (!headersDelivered)
        {
            headersDelivered = true;
            final ClientCallContext ctx = callContext;
            final Metadata received = GrpcBridge.toGrpc(ctx != null ? ctx.responseHeaders() : null);
            statsTraceContext.clientInboundHeaders(received);
            listener.headersRead(received);
        }
    }

    private void close(final Status status, final Metadata trailers, final ClientStreamListener.RpcProgress progress)
    {
        serializer.execute(() -> closeNow(status, trailers, progress));
    }

    // on the serializer
    private void closeNow(final Status status, final Metadata trailers, final ClientStreamListener.RpcProgress progress)
    {
        if (!markClosed())
        {
            return;
        }
        try
        {
            cancelRequests();
            statsTraceContext.clientInboundTrailers(trailers);
            statsTraceContext.streamClosed(status);
            if (listener != null)
            {
                // REFUSED: the server never saw the call, and grpc-java may resend it (transparent retry)
                listener.closed(status, progress, trailers);
            }
        }
        finally
        {
            transport.streamClosed(this);
        }
    }
}
