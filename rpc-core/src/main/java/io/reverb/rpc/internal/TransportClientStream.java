package io.reverb.rpc.internal;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.Status;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.transport.stream.ClientStream;
import io.reverb.rpc.transport.stream.ClientStreamListener;
import io.reverb.rpc.wire.CallFlyweight;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import reactor.core.Disposable;

/**
 * One call of the stream SPI ({@link ClientStream}) on one {@link ClientWireConnection}: the whole client side of the
 * call in one state machine, with no Reactor and no call object besides this one. It is its own CALL frame
 * ({@link OutboundFrame}); for a method whose client sends one message, the CALL waits for {@link #halfClose()} and
 * carries that message in the same transport message (the unary fast path: a unary call is one transport message
 * each way, its first and last frames).
 *
 * <p>State is guarded by {@code this}; no frame is written and no listener callback runs while holding it. Listener
 * callbacks never overlap: a callback from the transport's thread marks itself ({@code inCallback}), and an end
 * decided meanwhile on another thread (cancel, deadline) is delivered by the transport's thread when its callback
 * returns, so {@code closed} is always the last callback and runs once.
 *
 * <p>Outbound flow control is the server's: it grants one message before it asks, then what its REQUEST_N allow;
 * messages written beyond that wait here in order and leave from {@link #onRequestN} (only one thread sends waiting
 * messages at a time: {@code draining}).
 *
 * @param <Req> request type.
 */
final class TransportClientStream<Req> extends ClientSideStream implements ClientStream<Req>, OutboundFrame
{
    private final ClientCallStarter host;
    private final MethodDescriptor<Req, ?> method;
    private final Metadata metadata;
    private final Deadline deadline;
    private final OutboundCompression compression;
    private final ClientStreamListener listener;
    /** The client sends one message: CALL waits for it and halfClose. */
    private final boolean oneMessage;
    private long startNanos;

    /**
     * Written once, in {@link #start}, before {@code newStream} returns the stream, before its deadline is scheduled and
     * before it is registered with the connection (each of which publishes it to the threads that may end it).
     */
    private ClientWireConnection connection;

    // the connection's list of started streams whose CALL has not left (ClientWireConnection#addUnsent): guarded by
    // that connection's write lock
    TransportClientStream<?> unsentPrev;
    TransportClientStream<?> unsentNext;
    boolean unsentLinked;

    // guarded by this
    private boolean callStarted;
    private boolean callSent;
    private boolean ended;
    private boolean closeDelivered;
    private boolean inCallback;
    private Status endStatus;
    private Metadata endTrailers;
    /** The end is the server's STATUS (the listener is told: {@link ClientStreamListener#closed(Status, Metadata, boolean)}). */
    private boolean endFromServer;
    private long demandBeforeCall;
    /** Responses asked of the server in all (counted as asked, before the CALL or REQUEST_N carrying them leaves). */
    private volatile long responsesGranted;
    /** Responses the server sent (the transport's thread only): see {@link #takeCredit}. */
    private long responsesReceived;
    /** Messages the server may still take (one before it asks). */
    private long credit = 1;
    private ArrayDeque<Req> waiting;
    private boolean draining;
    private boolean halfClosed;
    private boolean halfCloseSent;
    private Req firstMessage;
    private Disposable deadlineTimer;
    /** Written on the transport's thread just before the STATUS ends the stream there (read by that thread). */
    private boolean removed;

    // the CALL frame, fixed before it is handed to the connection (which publishes it to the encoding thread)
    private int callInitialRequestN;
    private int callFrameLength;
    private Req callMessage;
    private int callMessageLength;
    private EncodedMessage callMessageEncoded;

    TransportClientStream(final ClientCallStarter host, final MethodDescriptor<Req, ?> method, final CallOptions options,
        final OutboundCompression compression, final ClientStreamListener listener)
    {
        this.host = host;
        this.method = method;
        this.metadata = options.metadata();
        this.deadline = options.deadline();
        this.compression = compression;
        this.listener = listener;
        this.oneMessage = method.type().clientSendsOneMessage();
    }

    /**
     * Starts the stream: its deadline, and for a method whose client streams, its CALL.
     *
     * @param conn the connection, or null if none takes calls (the stream ends UNAVAILABLE, never sent).
     */
    void start(final ClientWireConnection conn)
    {
        startNanos = host.metrics().callStarted();
        if (conn == null)
        {
            endStream(notSent("no connection takes calls"), null, false);
            return;
        }
        connection = conn;
        final long remaining = deadline == null ? 0 : deadline.timeRemainingNanos();
        if (deadline != null && remaining <= 0)
        {
            endStream(Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded before the call started"), null, false);
            return;
        }
        // a one-message stream gets its id only when its CALL leaves at halfClose: until then the connection knows it
        // from this registration, so that the connection's end closes it (as it closes every stream with an id)
        if (oneMessage && !conn.addUnsent(this))
        {
            endStream(notSent("connection to " + host.uri() + " takes no new calls"), null, false);
            return;
        }
        if (deadline != null)
        {
            final Disposable timer = host.scheduleDeadline(this::onDeadline, remaining);
            final boolean kept;
            synchronized (this)
            {
                kept = !ended;
                if (kept)
                {
                    deadlineTimer = timer;
                }
            }
            if (!kept)
            {
                timer.dispose();
                return;
            }
        }
        if (!oneMessage)
        {
            sendCall(null);
        }
    }

    /**
     * Ends the stream before it started (its options cannot be honoured).
     *
     * @param status why.
     */
    void startFailed(final Status status)
    {
        startNanos = host.metrics().callStarted();
        endStream(status, null, false);
    }

    private static Status notSent(final String why)
    {
        return Status.UNAVAILABLE.withDescription(why)
            .withCause(CallFailureCause.of(CallFailureCause.Reason.CHANNEL_CLOSED));
    }

    /**
     * A server that streams responses sends no more than the client asked for: beyond it, what it sends would queue
     * here without bound, so the call fails RESOURCE_EXHAUSTED (WireConnection; the connection's other calls go on).
     * A method that answers once is not counted: a second response ends the call.
     */
    @Override
    boolean takeCredit()
    {
        return method.type().serverSendsOneMessage() || ++responsesReceived <= responsesGranted;
    }

    @Override
    long creditGranted()
    {
        return responsesGranted;
    }

    // ---------------------------------------------------------------- ClientStream

    @Override
    public void request(final int n)
    {
        if (n <= 0)
        {
            throw new IllegalArgumentException("request(" + n + "): demand must be positive");
        }
        final ClientWireConnection conn;
        synchronized (this)
        {
            if (ended)
            {
                return;
            }
            // a REQUEST_N of 2^31 - 1 is unbounded on the wire (toWire), and is granted as such
            responsesGranted = n == Integer.MAX_VALUE ? Long.MAX_VALUE : addCap(responsesGranted, n);
            if (!callSent)
            {
                demandBeforeCall = addCap(demandBeforeCall, n); // travels with the CALL, or right after it
                return;
            }
            conn = connection;
        }
        conn.write(new OutboundFrame.Control(FrameType.REQUEST_N, 0, streamId, n));
    }

    @Override
    public void writeMessage(final Req message)
    {
        final ClientWireConnection conn;
        synchronized (this)
        {
            if (ended || halfClosed)
            {
                return;
            }
            if (oneMessage)
            {
                if (firstMessage == null && !callStarted)
                {
                    firstMessage = message; // leaves with the CALL at halfClose
                    return;
                }
                conn = null;
            }
            else if (callSent && credit > 0 && !draining && (waiting == null || waiting.isEmpty()))
            {
                credit--;
                conn = connection;
            }
            else
            {
                if (waiting == null)
                {
                    waiting = new ArrayDeque<>();
                }
                waiting.add(message);
                return;
            }
        }
        if (conn == null)
        {
            cancel(Status.INTERNAL.withDescription("more than one request message for " + method.fullMethodName() +
                ", whose client sends one"));
            return;
        }
        sendMessage(conn, message);
    }

    @Override
    public void halfClose()
    {
        final boolean startCall;
        final ClientWireConnection conn;
        final Req first;
        synchronized (this)
        {
            if (ended || halfClosed)
            {
                return;
            }
            halfClosed = true;
            startCall = oneMessage && !callStarted;
            first = firstMessage;
            firstMessage = null;
            conn = !startCall && callSent && !draining && (waiting == null || waiting.isEmpty()) ?
                takeHalfCloseLocked() : null;
        }
        if (startCall)
        {
            sendCall(first);
        }
        else if (conn != null)
        {
            conn.write(new OutboundFrame.Control(FrameType.HALF_CLOSE, 0, streamId, 0));
        }
    }

    /** Guarded by this: the connection to send HALF_CLOSE on, once. */
    private ClientWireConnection takeHalfCloseLocked()
    {
        if (halfCloseSent)
        {
            return null;
        }
        halfCloseSent = true;
        return connection;
    }

    @Override
    public void cancel(final Status status)
    {
        endStream(status, null, true);
    }

    @Override
    public synchronized boolean isReady()
    {
        if (ended || halfClosed)
        {
            return false;
        }
        if (oneMessage)
        {
            return firstMessage == null && !callStarted;
        }
        return credit > 0 && (waiting == null || waiting.isEmpty());
    }

    // ---------------------------------------------------------------- CALL

    /**
     * Registers the stream and writes its CALL frame (with the one message of a one-message method).
     *
     * @param first the message that travels with the CALL, or null.
     */
    private void sendCall(final Req first)
    {
        final ClientWireConnection conn;
        synchronized (this)
        {
            if (ended || callStarted)
            {
                return;
            }
            callStarted = true;
            // the one message carries the end-of-stream flag: no HALF_CLOSE follows it
            halfCloseSent = first != null;
            conn = connection;
            callInitialRequestN = toWire(demandBeforeCall);
            if (demandBeforeCall >= Integer.MAX_VALUE)
            {
                responsesGranted = Long.MAX_VALUE; // unbounded on the wire
            }
            demandBeforeCall = 0;
        }
        int bodyLength = 0;
        if (first != null)
        {
            try
            {
                callMessageLength = method.requestMarshaller().serializedSize(first);
                callMessageEncoded = compression.applies(callMessageLength) ?
                    compression.encode(method.requestMarshaller(), first, callMessageLength) : null;
            }
            catch (final Throwable t)
            {
                endStream(Status.INTERNAL.withDescription("failed to encode request: " + t).withCause(t), null, false);
                return;
            }
            callMessage = first;
            bodyLength = HEADER + (callMessageEncoded != null ? callMessageEncoded.length : callMessageLength);
        }
        callFrameLength = CallFlyweight.frameLength(method.fullMethodName(), metadata) + bodyLength;
        final int id = conn.startClientStream(this, this);
        if (id < 0)
        {
            endStream(notSent("connection to " + host.uri() + " takes no new calls"), null, false);
            return;
        }
        if (first != null)
        {
            host.metrics().messageSent(method, callMessageLength);
        }
        final long delta;
        final boolean cancelNow;
        synchronized (this)
        {
            callSent = true;
            cancelNow = ended; // ended here while CALL was on its way: the server must hear of it
            delta = demandBeforeCall;
            if (delta >= Integer.MAX_VALUE)
            {
                responsesGranted = Long.MAX_VALUE; // unbounded on the wire
            }
            demandBeforeCall = 0;
        }
        if (cancelNow)
        {
            if (!conn.unqueue(this))
            {
                conn.write(new OutboundFrame.Control(FrameType.CANCEL, 0, id, endCode()));
            }
            conn.remove(id);
            return;
        }
        if (delta > 0)
        {
            conn.write(new OutboundFrame.Control(FrameType.REQUEST_N, 0, id, toWire(delta)));
        }
        // messages written while CALL was on its way, and a HALF_CLOSE behind them (or for a one-message method
        // half-closed without its message: the server then ends the call for the missing request)
        drain();
    }

    private synchronized int endCode()
    {
        return endStatus.code().value();
    }

    @Override
    public int length()
    {
        return callFrameLength;
    }

    @Override
    public void encode(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
    {
        // the time left now, as the CALL goes into the transport (it may have waited behind back-pressure)
        final long timeoutNanos = deadline == null ? -1 : Math.max(0, deadline.timeRemainingNanos());
        final int end = encoder.call(buffer, offset, streamId, method.fullMethodName(), timeoutNanos,
            callInitialRequestN, metadata);
        final Req message = callMessage;
        if (message == null)
        {
            return;
        }
        if (callMessageEncoded != null)
        {
            encoder.message(buffer, end, streamId, true, EncodedMessage.MARSHALLER, callMessageEncoded,
                callMessageEncoded.length);
        }
        else
        {
            encoder.message(buffer, end, streamId, true, method.requestMarshaller(), message, callMessageLength);
        }
    }

    @Override
    public void failed(final Status status)
    {
        onWriteFailed(status);
    }

    // ---------------------------------------------------------------- messages

    private void sendMessage(final ClientWireConnection conn, final Req message)
    {
        final OutboundFrame.Message<?> frame;
        try
        {
            final int length = method.requestMarshaller().serializedSize(message);
            final EncodedMessage encoded = compression.applies(length) ?
                compression.encode(method.requestMarshaller(), message, length) : null;
            frame = encoded == null ?
                new OutboundFrame.Message<>(streamId, false, method.requestMarshaller(), message, length, this) :
                new OutboundFrame.Message<>(streamId, false, EncodedMessage.MARSHALLER, encoded, encoded.length, this);
        }
        catch (final Throwable t)
        {
            endStream(Status.INTERNAL.withDescription("failed to encode request: " + t).withCause(t), null, true);
            return;
        }
        host.metrics().messageSent(method, frame.payloadLength());
        conn.write(frame);
    }

    /** Sends the messages that waited for credit (and a HALF_CLOSE that waited behind them); one thread at a time. */
    private void drain()
    {
        final ClientWireConnection conn;
        synchronized (this)
        {
            if (draining || !callSent || ended)
            {
                return;
            }
            draining = true;
            conn = connection;
        }
        while (true)
        {
            final Req next;
            final boolean sendHalfClose;
            synchronized (this)
            {
                if (!ended && credit > 0 && waiting != null && !waiting.isEmpty())
                {
                    credit--;
                    next = waiting.poll();
                    sendHalfClose = false;
                }
                else
                {
                    next = null;
                    draining = false;
                    sendHalfClose = !ended && halfClosed && (waiting == null || waiting.isEmpty()) &&
                        takeHalfCloseLocked() != null;
                }
            }
            if (next == null)
            {
                if (sendHalfClose)
                {
                    conn.write(new OutboundFrame.Control(FrameType.HALF_CLOSE, 0, streamId, 0));
                }
                return;
            }
            sendMessage(conn, next);
        }
    }

    // ---------------------------------------------------------------- frames from the server

    /** Marks a transport callback running; false if the stream ended (no callback then). */
    private synchronized boolean enterCallback()
    {
        if (ended)
        {
            return false;
        }
        inCallback = true;
        return true;
    }

    /** The transport callback returned: delivers an end decided meanwhile on another thread. */
    private void exitCallback()
    {
        final Status status;
        final Metadata trailers;
        final boolean fromServer;
        synchronized (this)
        {
            inCallback = false;
            if (!ended || closeDelivered)
            {
                return;
            }
            closeDelivered = true;
            status = endStatus;
            trailers = endTrailers;
            fromServer = endFromServer;
        }
        listener.closed(status, trailers, fromServer);
    }

    @Override
    void onHeaders(final Metadata headers)
    {
        if (!enterCallback())
        {
            return;
        }
        try
        {
            listener.headersRead(headers);
        }
        catch (final RuntimeException e)
        {
            listenerFailed(e);
        }
        finally
        {
            exitCallback();
        }
    }

    @Override
    void onMessage(final ByteBuffer payload, final boolean endOfStream)
    {
        if (!enterCallback())
        {
            return;
        }
        try
        {
            host.metrics().messageReceived(method, payload.remaining());
            listener.messageRead(payload);
        }
        catch (final RuntimeException e)
        {
            listenerFailed(e);
        }
        finally
        {
            exitCallback();
        }
    }

    private void listenerFailed(final RuntimeException e)
    {
        endStream(Status.INTERNAL.withDescription("the stream's listener failed: " + e).withCause(e), null, true);
    }

    @Override
    void onRequestN(final int n)
    {
        final boolean becameReady;
        synchronized (this)
        {
            if (ended || halfCloseSent)
            {
                return;
            }
            becameReady = credit == 0 && !oneMessage;
            credit = addCap(credit, fromWire(n));
        }
        drain();
        if (becameReady && isReady() && enterCallback())
        {
            try
            {
                listener.onReady();
            }
            catch (final RuntimeException e)
            {
                listenerFailed(e);
            }
            finally
            {
                exitCallback();
            }
        }
    }

    @Override
    void onStatus(final Status status, final Metadata trailers)
    {
        removed = true; // the connection removed it before this call: no second removal on the unary path
        endStream(status, trailers, false, true);
    }

    @Override
    void onOversizedMessage(final int length, final int limit)
    {
        endStream(Status.RESOURCE_EXHAUSTED.withDescription(
            "response message of " + length + " bytes exceeds the limit of " + limit + " bytes"), null, true);
    }

    @Override
    void onUndecodableMessage(final Status status)
    {
        endStream(status, null, true);
    }

    @Override
    void onConnectionClosed(final Status status)
    {
        endStream(status, null, false);
    }

    @Override
    void onWriteFailed(final Status status)
    {
        endStream(status, null, true);
    }

    private void onDeadline()
    {
        final String late = deadline == null ? "" : " (" + (-deadline.timeRemainingNanos() / 1000) + " us late)";
        endStream(Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded" + late), null, true);
    }

    // ---------------------------------------------------------------- the one end

    /**
     * Ends the stream once: records the end, tells the server (CANCEL, or takes back a CALL still queued) when asked
     * and it has not ended there, releases the registration and the timer, and closes the listener unless a transport
     * callback runs (that callback's thread closes it when it returns).
     *
     * @param status     how it ended.
     * @param trailers   the server's trailers, or null.
     * @param tellServer the end is decided here: the server must hear of it.
     */
    private void endStream(final Status status, final Metadata trailers, final boolean tellServer)
    {
        endStream(status, trailers, tellServer, false);
    }

    /**
     * As {@link #endStream(Status, Metadata, boolean)}.
     *
     * @param fromServer the status is the server's STATUS frame.
     */
    private void endStream(final Status status, final Metadata trailers, final boolean tellServer,
        final boolean fromServer)
    {
        final ClientWireConnection conn;
        final boolean sent;
        final boolean deliver;
        final Disposable timer;
        synchronized (this)
        {
            if (ended)
            {
                return;
            }
            ended = true;
            endStatus = status;
            endTrailers = trailers; // null for none: no object per call for the usual empty trailers
            endFromServer = fromServer;
            waiting = null;
            firstMessage = null;
            sent = callSent;
            conn = connection;
            timer = deadlineTimer;
            deadlineTimer = null;
            deliver = !inCallback;
            closeDelivered = deliver;
        }
        if (timer != null)
        {
            timer.dispose();
        }
        if (!sent && oneMessage && conn != null)
        {
            conn.removeUnsent(this); // ended before its CALL left (cancel, deadline): off the connection's list
        }
        if (sent && conn != null)
        {
            if (tellServer && !conn.unqueue(this))
            {
                // the reason travels, so that the server ends its side with the same code (e.g. DEADLINE_EXCEEDED)
                conn.write(new OutboundFrame.Control(FrameType.CANCEL, 0, streamId, status.code().value()));
            }
            if (!removed)
            {
                conn.remove(streamId);
            }
        }
        host.metrics().callEnded(method, status, startNanos);
        if (deliver)
        {
            listener.closed(status, endTrailers, fromServer);
        }
    }
}
