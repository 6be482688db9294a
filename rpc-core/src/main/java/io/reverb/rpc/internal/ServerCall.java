package io.reverb.rpc.internal;

import io.reverb.rpc.AcceptedConnection;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.Status;
import io.reverb.rpc.compression.Codec;
import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.compression.GzipCodec;
import io.reverb.rpc.wire.FrameCodec;
import io.reverb.rpc.wire.StatusFlyweight;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import reactor.core.Disposable;

/**
 * The server side of one call on the wire, the part every kind shares: the call's deadline, its context, its
 * requests as they arrive (parsed, counted, inflated), and its end: STATUS, the single response of a one-response
 * method travelling with it in one transport message (the call is its own last frame), or an early end (cancel,
 * deadline, a failed write). It knows nothing of Reactor: {@link ReactorServerCall} subscribes to a native handler's
 * responses ({@link UnaryServerCall}, {@link StreamingServerCall}), {@link TransportServerStream} takes a stream
 * handler's (grpc-java's server).
 *
 * <p>State is guarded by {@code this}; no frame is written while holding it.
 *
 * @param <Req>  request type.
 * @param <Resp> response type.
 */
abstract class ServerCall<Req, Resp> extends RpcStream implements OutboundFrame, RpcContext.Carrier
{
    /** The encodings the client decompresses besides gzip, as grpc-java's header. */
    static final Metadata.Key<String> ACCEPT_ENCODING = Metadata.Key.of("grpc-accept-encoding",
        Metadata.ASCII_STRING_MARSHALLER);
    /** {@link #endingLocked}: the end is not queued, its caller writes it. */
    static final int END_NOT_QUEUED = 0;
    /** {@link #endingLocked}: the end is queued behind responses another thread writes. */
    static final int END_QUEUED = 1;
    /** {@link #endingLocked}: the end is queued behind responses, and its caller writes them ({@link #writeQueuedEnd}). */
    static final int END_QUEUED_WRITE = 2;

    final ServerWireConnection connection;
    final ServerRuntime server;
    final MethodDescriptor<Req, Resp> method;
    /** The method's counters in the process's counters file, or null when the process keeps none. */
    private final ServerMethodCounters counters;
    private final Metadata requestMetadata;
    private final Deadline deadline;
    private final long startNanos;
    // created on first use: a plain unary handler never asks for them (guarded by this)
    RpcContext rpcContext;
    // why the call ended early (guarded by this), for a context created after that
    private Status earlyEnd;
    // the final frame(s), encoded by this object: the single response (if held back) and the STATUS (guarded by this)
    Resp pendingResponse;
    int pendingPayloadLength;
    // the held-back response compressed (or null: the marshaller writes it into the frame)
    EncodedMessage pendingEncoded;
    private int finalCode;
    private byte[] finalDescription;
    private Metadata finalTrailers;
    private int finalLength;
    private boolean headersSent;
    boolean closed;
    private Disposable deadlineTimer;
    // the single request of a unary or server-streaming call: its marshaller may lend it memory, given back once the
    // final frame is written (responses written before it may reference the request)
    private volatile Req singleRequest;
    // the inflated bytes of a one-request call's compressed request, held against the connection's budget until the
    // call ends (the handler may keep the request that long); guarded by this. An object of its own, made by the
    // first compressed request: a call of uncompressed requests is 8 bytes smaller for it
    private InflatedHold inflated;

    /**
     * @param timeoutNanos the client's timeout, or negative for none.
     */
    ServerCall(final ServerWireConnection connection, final ServerRuntime server, final int streamId,
        final MethodDescriptor<Req, Resp> method, final Metadata metadata, final long timeoutNanos)
    {
        this.connection = connection;
        this.server = server;
        this.streamId = streamId;
        this.method = method;
        // the timeout is read from the deadline (no field of its own: 8 bytes less per call)
        this.deadline = timeoutNanos >= 0 ?
            Deadline.after(timeoutNanos, TimeUnit.NANOSECONDS, Deadline.Ticker.SYSTEM) : null;
        this.requestMetadata = metadata;
        this.startNanos = server.metrics().callStarted();
        // looked up once: the end counts into the same counters (the handler is the subclasses' field, so the call
        // object is no larger for it); the start is counted by the connection after the dispatch (countStarted)
        this.counters = server.counters(method);
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

    final synchronized Metadata trailersCopy()
    {
        return rpcContext != null && rpcContext.hasResponseTrailers() ? rpcContext.responseTrailers().copy() : null;
    }

    final OutboundFrame responseFrame(final Resp value, final int payloadLength, final EncodedMessage encoded)
    {
        return encoded == null ?
            new OutboundFrame.Message<>(streamId, false, method.responseMarshaller(), value, payloadLength, this) :
            new OutboundFrame.Message<>(streamId, false, EncodedMessage.MARSHALLER, encoded, encoded.length, this);
    }

    /**
     * @return what the next response is compressed with: the handler's choice ({@link RpcContext#responseCompression})
     * or the server's default; a codec other than gzip (which every peer has) only when the client accepts it.
     */
    final OutboundCompression responseCompression()
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

    /** Guarded by this. @return the HEADERS frame to send now (none sent yet), even without entries, or null. */
    final OutboundFrame takeHeadersEvenEmpty()
    {
        if (headersSent)
        {
            return null;
        }
        headersSent = true;
        return new OutboundFrame.Headers(streamId, rpcContext != null && rpcContext.hasResponseHeaders() ?
            rpcContext.responseHeaders().copy() : new Metadata());
    }

    /** Guarded by this. @return the HEADERS frame to send before anything else, once, or null. */
    final OutboundFrame takeHeaders()
    {
        if (headersSent)
        {
            return null;
        }
        headersSent = true;
        return rpcContext != null && rpcContext.hasResponseHeaders() ?
            new OutboundFrame.Headers(streamId, rpcContext.responseHeaders().copy()) : null;
    }

    /**
     * Guarded by this: ends the call OK, with the response held back ({@link #pendingResponse}, if any) travelling
     * with the STATUS: the final frame's fields are set and the call is closed. The caller then writes this call's
     * frame and {@link #released releases} it.
     *
     * @return the deadline timer to dispose, or null.
     */
    final Disposable closeOkLocked()
    {
        return closeLocked(Status.OK, null, rpcContext != null && rpcContext.hasResponseTrailers() ?
            rpcContext.responseTrailers().copy() : null);
    }

    /**
     * Guarded by this: closes the call with its final frame's fields (the held-back response, if any, travels with
     * the STATUS).
     *
     * @param description the status's description, UTF-8, or null.
     * @param trailers    the trailers, or null.
     * @return the deadline timer to dispose, or null.
     */
    private Disposable closeLocked(final Status status, final byte[] description, final Metadata trailers)
    {
        closed = true;
        finalCode = status.code().value();
        finalDescription = description;
        finalTrailers = trailers;
        finalLength = StatusFlyweight.frameLength(description, trailers) +
            (pendingResponse != null ? HEADER + pendingPayloadLength : 0);
        final Disposable timer = deadlineTimer;
        deadlineTimer = null;
        return timer;
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
        final int queued;
        final Status missing;
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            missing = status.isOk() ? responseMissingLocked() : null;
            if (missing != null)
            {
                headers = null;
                timer = null;
                queued = END_NOT_QUEUED;
            }
            else
            {
                headers = takeHeaders();
                if (!status.isOk())
                {
                    pendingResponse = null;
                }
                timer = closeLocked(status, FrameCodec.utf8(status.description()), trailers);
                queued = endingLocked(headers);
            }
        }
        if (missing != null)
        {
            cancelCall(missing, null);
            return;
        }
        responsesEnded();
        if (queued != END_NOT_QUEUED)
        {
            if (queued == END_QUEUED_WRITE)
            {
                writeQueuedEnd();
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
     * Guarded by this: at an OK end, whether the call lacks the response its method must send.
     *
     * @return the status to end the call with instead of OK, or null when nothing is missing.
     */
    Status responseMissingLocked()
    {
        return null;
    }

    /**
     * Guarded by this: the call has just ended with its status (the final frame's fields are set), and its responses
     * stop here. A kind whose responses may wait to be written queues the end (the headers, if not null, then this
     * call's final frame) behind them.
     *
     * @param headers the HEADERS frame still to send before the end, or null.
     * @return {@link #END_NOT_QUEUED} (the caller writes the end), {@link #END_QUEUED} or {@link #END_QUEUED_WRITE}.
     */
    int endingLocked(final OutboundFrame headers)
    {
        return END_NOT_QUEUED;
    }

    /** Writes what {@link #endingLocked} queued, when it answered {@link #END_QUEUED_WRITE}. Outside the monitor. */
    void writeQueuedEnd()
    {
    }

    /**
     * Guarded by this: the call has just ended early ({@link #cancelCall}): responses waiting to be written never
     * leave.
     */
    void abortedLocked()
    {
    }

    /** The call has ended early, its status sent: the source of its responses stops. Outside the monitor. */
    void abortResponses()
    {
    }

    /** The call is released: what runs its handler may be given back. */
    void releaseHandlerResources()
    {
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
        if (inflated == null)
        {
            inflated = new InflatedHold(budget);
        }
        inflated.bytes += bytes;
        return true;
    }

    private void releaseInflated()
    {
        // no monitor on the common path (nothing inflated): the step that closed the call took the monitor after any
        // holdInflated that succeeded, so this thread sees its write
        final InflatedHold hold = inflated;
        if (hold == null)
        {
            return;
        }
        final long bytes;
        synchronized (this)
        {
            bytes = hold.bytes;
            hold.bytes = 0;
        }
        if (bytes != 0)
        {
            hold.budget.release(bytes);
        }
    }

    /** A one-request call's inflated bytes held against the connection's budget (guarded by the call). */
    private static final class InflatedHold
    {
        final InflationBudget budget;
        long bytes;

        InflatedHold(final InflationBudget budget)
        {
            this.budget = budget;
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
            pendingResponse = null;
            abortedLocked();
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
        abortResponses();
        requestsAborted();
        released(status != null ? status : reason != null ? reason : Status.CANCELLED, timer);
        ended(why);
    }

    /**
     * @param status how the call ended.
     * @param timer  its deadline timer, taken (and cleared) in the step that closed the call, or null.
     */
    final void released(final Status status, final Disposable timer)
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
        releaseHandlerResources();
    }
}
