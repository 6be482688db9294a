package io.reverb.rpc.internal;

import io.reverb.common.LogLimiter;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.Status;
import io.reverb.rpc.compression.Codec;
import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.transport.stream.ServerStream;
import io.reverb.rpc.transport.stream.ServerStreamHandler;
import io.reverb.rpc.transport.stream.ServerStreamListener;
import io.reverb.rpc.wire.FrameType;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * The server side of one call as a stream of the stream-level SPI ({@link ServerStream}): what a
 * {@link ServerStreamHandler} gets for each call that no service serves. The wire side (deadline, cancel, the final
 * frame that carries the last response with the STATUS, compression, counters) is {@link ServerCall}'s; this adds no
 * Reactor and no handler of rpc-core: requests go to the {@link ServerStreamListener}, responses come from
 * {@link #writeMessage}.
 *
 * <p>Two serial paths, each a drain whose one runner works for every thread that signals meanwhile:
 * <ul>
 *   <li>inbound, the listener's callbacks ({@link #drain}): the requests within the listener's demand, the client's
 *   half-close after them, {@code onReady}, and {@code closed} last and once;</li>
 *   <li>outbound, the writes ({@link #writing}): responses within the client's demand, flushes and the close, in the
 *   order the owner gave them, one writer at a time.</li>
 * </ul>
 * The method's type is the owner's business (grpc-java's server learns it when it looks the method up, maybe on
 * another thread): a response is held until {@link #flush}, the next response or {@link #close}, so a one-response
 * call's response travels with its STATUS; and the client is granted more requests (REQUEST_N) only once it sent one
 * without ending, so a unary call costs no grant.
 *
 * <p>State is guarded by {@code this}, the call's monitor; nothing calls out while holding it.
 *
 * @param <M> message type, both ways.
 */
final class TransportServerStream<M> extends ServerCall<M, M> implements ServerStream<M>
{
    private static final LogLimiter LISTENER_FAILURE_LOG =
        new LogLimiter((line, t) -> WireConnection.LOG.warn(line, t));
    private static final AtomicIntegerFieldUpdater<TransportServerStream> WIP =
        AtomicIntegerFieldUpdater.newUpdater(TransportServerStream.class, "wip");
    /** Request bytes a streaming client may send ahead of the listener's demand: see {@link #takeGrant}. */
    static final int WINDOW_BYTES = 1024 * 1024;
    /** The most requests a streaming client may send ahead of the listener's demand. */
    static final int MAX_WINDOW_MESSAGES = 64;
    /** In {@link #outbound}: the held response leaves here. */
    private static final Object FLUSH = new Object();

    private static final int NONE = 0;
    private static final int MESSAGE = 1;
    private static final int HALF_CLOSED = 2;
    private static final int READY = 3;
    private static final int CLOSED = 4;

    private final String fullMethodName;
    private ServerStreamListener<M> listener;

    // ---- inbound (guarded by this)
    /** The first request waiting for demand (most calls have one), then {@link #moreRequests}. */
    private M firstRequest;
    private ArrayDeque<M> moreRequests;
    /** Requests the listener asked for and did not get yet. */
    private long requested;
    /** Requests the client may send in all: the one before any REQUEST_N, then what was granted. */
    private volatile long granted = 1;
    /** The client sent a request without ending: from then on demand travels to it as REQUEST_N. */
    private boolean grantsOpen;
    /** Requests that arrived, in all. */
    private long arrived;
    /** The largest request so far, in bytes (at least 1 once one arrived; 0 before): sizes the window. */
    private int largestRequest;
    /** The client half-closed (delivered after its requests). */
    private boolean halfClosePending;
    private boolean halfCloseDelivered;
    /** Owed to the listener: onReady. */
    private boolean readyOwed;
    /** The status the listener is closed with, once the call ended. */
    private Status closing;
    private boolean listenerClosed;
    private volatile int wip;
    /** The thread delivering a listener callback now, or null: read by that thread only to know it is in one. */
    private Thread delivering;
    /** A callback's flush corked the connection: it is uncorked when the callback returns (the delivering thread). */
    private boolean corkedInCallback;
    /** MESSAGE frames seen, counted on the transport's thread against {@link #granted}. */
    private long messagesReceived;

    // ---- outbound (guarded by this)
    /** Responses (and {@link #FLUSH}es) waiting for the client's demand or for the writer; null until needed. */
    private ArrayDeque<Object> outbound;
    /** Responses the client asked for and was not sent yet. */
    private long demand;
    /** A thread is writing: whatever the owner gives meanwhile queues behind it. */
    private boolean writing;
    /** The owner's close, once given: done by the writer when everything before it is written. */
    private Status closeStatus;
    private Metadata closeTrailers;
    private boolean closeDone;

    /**
     * @param method         the descriptor the call is counted under (its marshaller is the handler's).
     * @param fullMethodName the method the client called.
     */
    TransportServerStream(final ServerWireConnection connection, final ServerRuntime server, final int streamId,
        final MethodDescriptor<M, M> method, final String fullMethodName, final Metadata metadata,
        final long timeoutNanos, final int initialRequestN)
    {
        // the handler runs on its own executor, and its responses are not collected (see flush)
        super(connection, server, streamId, method, metadata, timeoutNanos);
        this.fullMethodName = fullMethodName;
        this.demand = fromWire(initialRequestN);
    }

    // ------------------------------------------------------------ ServerCall

    @Override
    void begin()
    {
        if (isClosed())
        {
            return; // ended before its start (its CANCEL came in the same read batch): the handler never sees it
        }
        @SuppressWarnings("unchecked")
        final ServerStreamHandler<M> handler = (ServerStreamHandler<M>)server.streamHandler();
        // the drain is held while the handler starts the call: what it asks for meanwhile (request, close) is
        // delivered when it returns, not inside it (grpc-java's server would queue a re-entrant callback)
        WIP.getAndIncrement(this);
        try
        {
            handler.streamCreated(this, fullMethodName, requestMetadataIfAny());
        }
        catch (final Throwable t)
        {
            LISTENER_FAILURE_LOG.log("streamCreated", "the stream handler failed on a call of " + fullMethodName, t);
            cancelCall(Status.INTERNAL.withDescription("the server failed to start the call"), null);
        }
        final boolean missing;
        synchronized (this)
        {
            missing = listener == null;
        }
        if (missing)
        {
            cancelCall(Status.INTERNAL.withDescription("the stream handler set no listener for " + fullMethodName),
                null);
        }
        drainLoop(1);
    }

    @Override
    boolean takeCredit()
    {
        return ++messagesReceived <= granted;
    }

    @Override
    long creditGranted()
    {
        return granted;
    }

    @Override
    void onRequest(final M value, final boolean endOfStream)
    {
        onRequest(value, endOfStream, 0);
    }

    @Override
    void onRequest(final M value, final boolean endOfStream, final int size)
    {
        final long grant;
        synchronized (this)
        {
            if (listenerClosed || closing != null || halfClosePending)
            {
                return;
            }
            arrived++;
            largestRequest = Math.max(largestRequest, Math.max(size, 1));
            if (firstRequest == null && (moreRequests == null || moreRequests.isEmpty()))
            {
                firstRequest = value;
            }
            else
            {
                if (moreRequests == null)
                {
                    moreRequests = new ArrayDeque<>(4);
                }
                moreRequests.addLast(value);
            }
            if (endOfStream)
            {
                halfClosePending = true;
                grant = 0;
            }
            else
            {
                grantsOpen = true;
                grant = takeGrant(); // the first grant, or the window topped up
            }
        }
        sendGrant(grant);
        drain();
    }

    @Override
    void onHalfClose()
    {
        synchronized (this)
        {
            if (closing != null || halfClosePending)
            {
                return;
            }
            halfClosePending = true;
        }
        drain();
    }

    @Override
    void requestsAborted()
    {
        synchronized (this)
        {
            firstRequest = null;
            if (moreRequests != null)
            {
                moreRequests.clear();
            }
            dropOutbound();
        }
    }

    @Override
    void responsesEnded()
    {
        synchronized (this)
        {
            grantsOpen = false; // the call is over: the client is granted nothing more
        }
    }

    @Override
    void ended(final Status status)
    {
        synchronized (this)
        {
            if (closing != null)
            {
                return;
            }
            closing = status;
            dropOutbound();
        }
        drain();
    }

    /** Guarded by this: what waits to be written never leaves (the call ended). */
    private void dropOutbound()
    {
        if (outbound != null)
        {
            outbound.clear();
        }
    }

    /** The client's REQUEST_N: responses waiting for it are written, and the listener hears it is ready. */
    @Override
    void onRequestN(final int n)
    {
        final long more = fromWire(n);
        final boolean write;
        synchronized (this)
        {
            if (closing != null)
            {
                return;
            }
            final boolean wasReady = readyLocked();
            demand = addCap(demand, more);
            if (!wasReady && readyLocked())
            {
                readyOwed = true;
            }
            write = !writing && outbound != null && !outbound.isEmpty();
            if (write)
            {
                writing = true;
            }
        }
        if (write)
        {
            writeQueued();
        }
        drain();
    }

    // ------------------------------------------------------------ ServerStream: the owner's side

    @Override
    public void setListener(final ServerStreamListener<M> streamListener)
    {
        synchronized (this)
        {
            if (listener != null)
            {
                throw new IllegalStateException("the stream's listener is set already");
            }
            listener = Objects.requireNonNull(streamListener, "listener");
            readyOwed = readyLocked();
        }
    }

    @Override
    public void request(final int n)
    {
        if (n <= 0)
        {
            throw new IllegalArgumentException("request(" + n + "): must be positive");
        }
        final long grant;
        synchronized (this)
        {
            requested = addCap(requested, n);
            grant = takeGrant();
        }
        sendGrant(grant);
        drain();
    }

    /**
     * Guarded by this. What the client is granted: the requests the listener asked for and did not get, plus a window
     * ahead of them, so that a listener asking for one request at a time (grpc-java's streaming calls do) does not
     * make each request a round trip: {@link #WINDOW_BYTES} of the largest request so far, at most
     * {@link #MAX_WINDOW_MESSAGES} (none before the first request, and none while the listener asks for nothing: the
     * client's {@code onReady} follows the listener's reading), topped up once half of it arrived. What arrives
     * ahead waits here for the listener's demand. A client that switches to larger requests can have up to
     * {@link #MAX_WINDOW_MESSAGES} times the server's maximum message size waiting per call, as a native streaming
     * handler's prefetch allows.
     *
     * @return the REQUEST_N to send the client now, 0 for none.
     */
    private long takeGrant()
    {
        final long given = granted;
        if (!grantsOpen || halfClosePending || closing != null || given == Long.MAX_VALUE)
        {
            return 0;
        }
        if (requested == Long.MAX_VALUE)
        {
            granted = Long.MAX_VALUE; // unbounded demand: unbounded grant, as before
            return Long.MAX_VALUE;
        }
        final long coming = given - arrived + queuedRequests();
        // no window while the listener asks for nothing: a client it does not read stays not ready until it asks
        final long window = largestRequest == 0 || requested == 0 ? 0 :
            Math.max(1, Math.min(MAX_WINDOW_MESSAGES, WINDOW_BYTES / largestRequest));
        if (coming >= requested && coming - requested > window / 2)
        {
            return 0;
        }
        final long more = requested + window - coming;
        if (more <= 0)
        {
            return 0;
        }
        granted = given + more;
        return more;
    }

    /** Guarded by this. @return requests that arrived and wait for the listener's demand. */
    private int queuedRequests()
    {
        return (firstRequest != null ? 1 : 0) + (moreRequests == null ? 0 : moreRequests.size());
    }

    private void sendGrant(final long grant)
    {
        if (grant > 0)
        {
            connection.write(new OutboundFrame.Control(FrameType.REQUEST_N, 0, streamId, toWire(grant)));
        }
    }

    @Override
    public void writeHeaders(final Metadata headers)
    {
        if (headers != null && !headers.isEmpty())
        {
            // sent before the first response (ServerCall takes them from the context when it writes one)
            rpcContext().responseHeaders().merge(headers);
        }
    }

    @Override
    public void sendHeaders(final Metadata headers)
    {
        writeHeaders(headers);
        final OutboundFrame frame;
        synchronized (this)
        {
            frame = closed ? null : takeHeadersEvenEmpty();
        }
        if (frame != null)
        {
            connection.write(frame);
        }
    }

    @Override
    public void writeMessage(final M message)
    {
        Objects.requireNonNull(message, "message");
        synchronized (this)
        {
            if (closing != null || closeStatus != null)
            {
                return;
            }
            if (writing || demand <= 0 || (outbound != null && !outbound.isEmpty()))
            {
                queue(message);
                return;
            }
            writing = true;
            demand--;
        }
        sendHeld(message);
        writeQueued();
    }

    @Override
    public void flush()
    {
        if (!corkedInCallback && delivering == Thread.currentThread())
        {
            // a callback that flushes (grpc-java flushes every response of a streaming method, a unary one's never):
            // what it writes leaves together when it returns, in transport messages of up to 4 KiB, not one each (as
            // Netty's event loop flushes after a direct-executor handler returns); any other thread's write, or 4 KiB
            // corked, sends the corked frames at once
            corkedInCallback = connection.cork();
        }
        synchronized (this)
        {
            if (closing != null)
            {
                return;
            }
            if (writing || (outbound != null && !outbound.isEmpty()))
            {
                queue(FLUSH);
                return;
            }
            writing = true;
        }
        flushHeld();
        writeQueued();
    }

    /** Guarded by this. */
    private void queue(final Object item)
    {
        if (outbound == null)
        {
            outbound = new ArrayDeque<>(8);
        }
        outbound.addLast(item);
    }

    @Override
    public boolean isReady()
    {
        synchronized (this)
        {
            return readyLocked();
        }
    }

    /** Guarded by this. */
    private boolean readyLocked()
    {
        return closing == null && closeStatus == null && demand > 0 && (outbound == null || outbound.isEmpty());
    }

    @Override
    public void close(final Status status, final Metadata trailers)
    {
        Objects.requireNonNull(status, "status");
        synchronized (this)
        {
            if (closing != null || closeStatus != null)
            {
                return;
            }
            closeStatus = status;
            closeTrailers = trailers;
            if (writing || (outbound != null && !outbound.isEmpty()))
            {
                return; // after what waits: the writer, or the REQUEST_N that lets it leave, closes
            }
            writing = true;
            closeDone = true;
        }
        doClose(status, trailers);
    }

    private void doClose(final Status status, final Metadata trailers)
    {
        if (!status.isOk())
        {
            flushHeld(); // a response written before a failure still leaves, as over HTTP/2
        }
        finish(status, trailers == null || trailers.isEmpty() ? null : trailers);
    }

    /**
     * The writer (writing set by the caller): writes what was queued behind it while the client's demand allows,
     * then the close if it was given and nothing is left before it; stops when the queue is empty or waits for
     * demand. From its second item on (the responses a REQUEST_N let out, or a callback's writes queued behind one
     * another) the connection is corked, so that they leave together in transport messages of up to 4 KiB.
     */
    @SuppressWarnings("unchecked")
    private void writeQueued()
    {
        int items = 0;
        boolean corked = false;
        try
        {
            while (true)
            {
                final Object next;
                final Status status;
                final Metadata trailers;
                synchronized (this)
                {
                    if (closing != null)
                    {
                        writing = false;
                        return;
                    }
                    final Object head = outbound == null ? null : outbound.peekFirst();
                    if (head == FLUSH)
                    {
                        outbound.pollFirst();
                        next = FLUSH;
                        status = null;
                        trailers = null;
                    }
                    else if (head != null)
                    {
                        if (demand <= 0)
                        {
                            writing = false; // the client's REQUEST_N resumes it
                            return;
                        }
                        outbound.pollFirst();
                        demand--;
                        next = head;
                        status = null;
                        trailers = null;
                    }
                    else if (closeStatus != null && !closeDone)
                    {
                        closeDone = true;
                        next = null;
                        status = closeStatus;
                        trailers = closeTrailers;
                    }
                    else
                    {
                        writing = false;
                        return;
                    }
                }
                if (++items == 2)
                {
                    corked = connection.cork();
                }
                if (next == FLUSH)
                {
                    flushHeld();
                }
                else if (next != null)
                {
                    sendHeld((M)next);
                }
                else
                {
                    doClose(status, trailers);
                    synchronized (this)
                    {
                        writing = false;
                    }
                    return;
                }
            }
        }
        finally
        {
            if (corked)
            {
                connection.uncork();
            }
        }
    }

    @Override
    public void cancel(final Status status)
    {
        final Status reason = status == null || status.isOk() ?
            Status.CANCELLED.withDescription("call cancelled by the server") : status;
        cancelCall(reason, null);
    }

    @Override
    public void setCompression(final Codec codec)
    {
        if (codec == null)
        {
            responseCompression(CodecRegistry.IDENTITY);
        }
        else
        {
            rpcContext().responseCompression(codec);
        }
    }

    // ------------------------------------------------------------ the listener's callbacks, one at a time

    /** Guarded by this. @return whether a request waits. */
    private boolean hasRequest()
    {
        return firstRequest != null;
    }

    /** Guarded by this. @return the next waiting request (there is one). */
    private M pollRequest()
    {
        final M value = firstRequest;
        firstRequest = moreRequests == null ? null : moreRequests.pollFirst();
        return value;
    }

    /**
     * Delivers what the listener is owed, on this thread unless another delivers now (then it delivers this too,
     * before it stops): the close first once the call ended, else onReady, the requests within demand, the half-close
     * after them.
     */
    private void drain()
    {
        if (WIP.getAndIncrement(this) != 0)
        {
            return;
        }
        drainLoop(1);
    }

    /** The drain's runner (the drain held, {@code signalled} times): delivers until nothing is owed. */
    private void drainLoop(final int signalled)
    {
        int missed = signalled;
        while (true)
        {
            while (true)
            {
                final int action;
                M value = null;
                final Status status;
                final ServerStreamListener<M> target;
                synchronized (this)
                {
                    target = listener;
                    if (target == null || listenerClosed)
                    {
                        break;
                    }
                    if (closing != null)
                    {
                        listenerClosed = true;
                        firstRequest = null;
                        moreRequests = null;
                        action = CLOSED;
                        status = closing;
                    }
                    else if (readyOwed)
                    {
                        readyOwed = false;
                        action = READY;
                        status = null;
                    }
                    else if (requested > 0 && hasRequest())
                    {
                        value = pollRequest();
                        if (requested != Long.MAX_VALUE)
                        {
                            requested--;
                        }
                        action = MESSAGE;
                        status = null;
                    }
                    else if (halfClosePending && !halfCloseDelivered && !hasRequest())
                    {
                        halfCloseDelivered = true;
                        action = HALF_CLOSED;
                        status = null;
                    }
                    else
                    {
                        action = NONE;
                        status = null;
                    }
                }
                if (action == NONE)
                {
                    break;
                }
                delivering = Thread.currentThread();
                try
                {
                    deliver(target, action, value, status);
                }
                finally
                {
                    delivering = null;
                    if (corkedInCallback)
                    {
                        corkedInCallback = false;
                        connection.uncork();
                    }
                }
            }
            missed = WIP.addAndGet(this, -missed);
            if (missed == 0)
            {
                return;
            }
        }
    }

    private void deliver(final ServerStreamListener<M> target, final int action, final M value, final Status status)
    {
        try
        {
            switch (action)
            {
                case MESSAGE:
                    target.messageRead(value);
                    break;
                case HALF_CLOSED:
                    target.halfClosed();
                    break;
                case READY:
                    target.onReady();
                    break;
                default:
                    target.closed(status);
                    break;
            }
        }
        catch (final Throwable t)
        {
            LISTENER_FAILURE_LOG.log("listener", "a stream listener failed on a call of " + fullMethodName, t);
            if (action != CLOSED)
            {
                cancelCall(Status.INTERNAL.withDescription("the server failed to handle the call"), null);
            }
        }
    }

    @Override
    public int streamId()
    {
        return streamId;
    }

    @Override
    public String toString()
    {
        return "TransportServerStream{" + fullMethodName + ", stream " + streamId + "}";
    }
}
