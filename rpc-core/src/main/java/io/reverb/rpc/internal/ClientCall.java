package io.reverb.rpc.internal;

import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.Status;
import io.reverb.rpc.wire.CallFlyweight;
import io.reverb.rpc.wire.FrameType;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;

/**
 * The client side of one call, the part every kind shares: the deadline, getting a connection from the channel,
 * the CALL frame (the call is its own first frame), cancellation and the call's end (STATUS, a local failure, the
 * connection closing). {@link UnaryClientCall} and {@link StreamingClientCall} add how requests go out and how
 * responses reach the subscriber.
 *
 * <p>State is guarded by {@code this}, and no frame is written while holding it: a method decides under the monitor
 * what to send, then writes after releasing it. CALL is written before {@code callSent} is set, so a CANCEL or
 * REQUEST_N (sent only once {@code callSent}) always follows its CALL.
 *
 * @param <Req>  request type.
 * @param <Resp> response type.
 */
abstract class ClientCall<Req, Resp> extends ClientSideStream implements OutboundFrame, Subscription
{
    final ClientCallStarter channel;
    final MethodDescriptor<Req, Resp> method;
    final ClientCallContext context;
    final Metadata requestMetadata;
    final Deadline deadline;
    final boolean waitForReady;
    CoreSubscriber<? super Resp> actual;
    /**
     * The thread that runs the subscriber's {@code onSubscribe} in {@link #start}, while it runs; null otherwise. Until
     * {@code onSubscribe} returns no other thread can reach the call (nothing has it yet: no connection, timer or
     * parent call), so what that thread does to the call meanwhile needs no monitor: it is published to the others with
     * the call itself (under the locks that hand it to them).
     */
    Thread subscribingThread;
    /** What requests are compressed with; set before start. */
    OutboundCompression compression = OutboundCompression.NONE;
    private long startNanos;

    // guarded by this
    ClientWireConnection connection;
    private boolean registered;
    private int transparentRetries;
    boolean callSent;
    private boolean statusReceived;
    boolean cancelled;
    Status terminalStatus;
    private Disposable deadlineTimer;
    private Disposable parentRegistration;
    // the handled call this call was made in: it is cancelled with it (set before start)
    private RpcContext parent;
    // the CALL frame, encoded by this object (its timeout is taken when it is encoded: see encode)
    private int callInitialRequestN;
    private int callFrameLength;

    ClientCall(final ClientCallStarter channel, final MethodDescriptor<Req, Resp> method, final ClientCallContext context,
        final Metadata requestMetadata, final Deadline deadline, final boolean waitForReady)
    {
        this.channel = channel;
        this.method = method;
        this.context = context;
        this.requestMetadata = requestMetadata;
        this.deadline = deadline;
        this.waitForReady = waitForReady;
    }

    /**
     * @param handled the context of the call being handled where this call was made, or null.
     * @return this.
     */
    final ClientCall<Req, Resp> inheritCancellation(final RpcContext handled)
    {
        this.parent = handled;
        return this;
    }

    /**
     * @param compression what this call's requests are compressed with (set before start).
     * @return this.
     */
    final ClientCall<Req, Resp> compressWith(final OutboundCompression compression)
    {
        this.compression = compression;
        return this;
    }

    /**
     * @param value         a request.
     * @param payloadLength its serialized size.
     * @return the request compressed (or serialized plain, when compressing did not shrink it) if this call compresses
     * messages of its size, else null: then it is written by the method's marshaller into the frame.
     * @throws IOException if the codec fails.
     */
    final EncodedMessage encodeRequest(final Req value, final int payloadLength) throws IOException
    {
        return compression.applies(payloadLength) ? compression.encode(method.requestMarshaller(), value, payloadLength) :
            null;
    }

    /**
     * @return a request MESSAGE frame: compressed when this call compresses messages of its size.
     * @throws IOException if the codec fails.
     */
    final OutboundFrame.Message<?> requestFrame(final int id, final boolean last, final Req value)
        throws IOException
    {
        final int payloadLength = method.requestMarshaller().serializedSize(value);
        final EncodedMessage encoded = encodeRequest(value, payloadLength);
        return encoded == null ? new OutboundFrame.Message<>(id, last, method.requestMarshaller(), value, payloadLength, this) :
            new OutboundFrame.Message<>(id, last, EncodedMessage.MARSHALLER, encoded, encoded.length, this);
    }

    /**
     * A MESSAGE from the server, parsed here for every kind of call: a payload the response marshaller cannot parse
     * fails the call with INTERNAL (and sends CANCEL); a parsed one is counted and handed to {@link #onResponse}.
     * The end-of-stream flag is not used on the client: STATUS ends a call.
     */
    @Override
    final void onMessage(final ByteBuffer payload, final boolean endOfStream)
    {
        final int size = payload.remaining();
        final Resp value;
        try
        {
            value = method.responseMarshaller().read(payload);
        }
        catch (final Throwable t)
        {
            failLocally(Status.INTERNAL.withDescription("failed to parse response: " + t.getMessage()).withCause(t), true);
            return;
        }
        channel.metrics().messageReceived(method, size);
        onResponse(value);
    }

    /**
     * @param value a response from the server, parsed and counted; null if the marshaller returned null, which each
     *              kind treats as it always did (a unary call ends INTERNAL "No value received" if that was its only
     *              value; a streaming call ends INTERNAL and cancels, as for a message that does not parse).
     */
    abstract void onResponse(Resp value);

    void start(final CoreSubscriber<? super Resp> actual)
    {
        this.actual = actual;
        startNanos = channel.metrics().callStarted();
        subscribingThread = Thread.currentThread();
        try
        {
            actual.onSubscribe(this);
        }
        finally
        {
            subscribingThread = null;
        }
        if (deadline != null)
        {
            final long remaining = deadline.timeRemainingNanos();
            if (remaining <= 0)
            {
                failLocally(Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded before the call started"), false);
                return;
            }
            final Disposable timer = channel.scheduleDeadline(this::onDeadline, remaining);
            synchronized (this)
            {
                if (terminalStatus == null && !cancelled)
                {
                    deadlineTimer = timer;
                }
                else
                {
                    timer.dispose();
                    return;
                }
            }
        }
        final RpcContext handled = parent;
        if (handled != null)
        {
            // runs at once if the handled call already ended early
            Disposable registration = handled.onCancel(this::onHandledCallCancelled);
            synchronized (this)
            {
                if (terminalStatus == null && !cancelled)
                {
                    parentRegistration = registration;
                    registration = null;
                }
            }
            if (registration != null)
            {
                registration.dispose();
                return;
            }
        }
        channel.acquire(this);
    }

    private void onHandledCallCancelled()
    {
        final Status why = parent.cancellationStatus();
        failLocally(Status.CANCELLED.withDescription("the call being handled ended early" +
            (why != null ? ": " + why.code() : "")), true);
    }

    // ------------------------------------------------------------ what the kinds add

    /**
     * Before the CALL is claimed: sizes what travels with it.
     *
     * @return the length of the frames written after the CALL in the same transport message (0 for none), or -1
     * if the call failed.
     */
    abstract int prepareFirstMessage();

    /**
     * @return the response demand granted with the CALL frame.
     */
    abstract int initialDemand();

    /**
     * Writes what travels with the CALL (after it, in the same transport message).
     */
    abstract void encodeFirstMessage(FrameEncoder encoder, ByteBuffer buffer, int offset);

    /**
     * The CALL is written and the call is live on the connection: start sending the rest.
     */
    abstract void onCallSent(ClientWireConnection conn, int id);

    /**
     * The call ended here (status, failure, cancel): hand the end to the subscriber side.
     *
     * @param status   how it ended.
     * @param trailers trailers, or null.
     * @param discard  drop responses not yet delivered.
     * @param silent   the subscriber cancelled: no signal.
     */
    abstract void ended(Status status, Metadata trailers, boolean discard, boolean silent);

    // ------------------------------------------------------------ connection and CALL

    /**
     * The channel has a connection for this call: send CALL, then what follows it.
     */
    void onConnection(final ClientWireConnection conn)
    {
        final int firstMessageLength = prepareFirstMessage();
        if (firstMessageLength < 0)
        {
            return;
        }
        // Read without the monitor: this only spares the connection a call that already ended here. A call that ends
        // meanwhile (or whose end this thread does not see yet) is sent, then cancelled below, under the monitor.
        if (cancelled || terminalStatus != null)
        {
            return;
        }
        // read by encode on this thread, or on the transport's after the write lock that queued the frame
        callInitialRequestN = initialDemand();
        callFrameLength = CallFlyweight.frameLength(method.fullMethodName(), requestMetadata) + firstMessageLength;
        // registers the stream and writes CALL (in stream id order), outside this call's monitor
        final int id = conn.startCall(this);
        if (id < 0)
        {
            // lost a race with GOAWAY or a failure: try again, the channel makes a new connection
            channel.reacquireLater(this);
            return;
        }
        int cancelCode = -1;
        final boolean done;
        synchronized (this)
        {
            connection = conn;
            callSent = true;
            if (terminalStatus == null && !cancelled)
            {
                registered = true;
            }
            else if (!statusReceived)
            {
                // cancelled or failed here while CALL was on its way: the server must hear of it
                cancelCode = terminalStatus.code().value();
            }
            done = terminalStatus != null || cancelled;
        }
        if (cancelCode >= 0)
        {
            conn.write(new OutboundFrame.Control(FrameType.CANCEL, 0, id, cancelCode));
            conn.remove(id);
            return;
        }
        if (!done)
        {
            onCallSent(conn, id);
        }
    }

    /**
     * The server refused this call before any handler ran (GOAWAY below its stream id, or refused while shutting
     * down): send it again on a new connection, as grpc-java's transparent retry does, if the channel allows it
     * ({@code RpcChannel.Builder.transparentRetry}), this kind of call can be resent ({@link #resendable()}), and it
     * has not used up {@link #MAX_TRANSPARENT_RETRIES}. The call keeps its deadline, subscriber and stream context.
     *
     * @return true if it will be resent (its stream was already removed from the refusing connection); false to end
     * it with the refusal.
     */
    @Override
    final boolean retryRefused()
    {
        if (!channel.config().transparentRetry || !resendable())
        {
            return false;
        }
        synchronized (this)
        {
            if (terminalStatus != null || cancelled || transparentRetries >= MAX_TRANSPARENT_RETRIES)
            {
                return false;
            }
            transparentRetries++;
            prepareResend(); // first: nothing may go to the refusing connection from now on
            connection = null;
            callSent = false;
            registered = false;
        }
        channel.reacquireLater(this); // on the timer, not on the transport thread that delivered the refusal
        return true;
    }

    /** Transparent retries one call may take: a server that keeps refusing does not keep a call looping. */
    static final int MAX_TRANSPARENT_RETRIES = 5;

    /**
     * @return true if this call can be sent again from scratch after a refusal (its requests are all still here).
     */
    boolean resendable()
    {
        return false;
    }

    /**
     * Under this call's monitor: the call will be sent again ({@link #retryRefused}); nothing may go to the refusing
     * connection from now on.
     */
    void prepareResend()
    {
    }

    @Override
    public final int length()
    {
        return callFrameLength;
    }

    @Override
    public final void encode(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
    {
        // the time left now, as the CALL goes into the transport (it may have waited behind back-pressure); 0 when
        // none is left: the server ends the call DEADLINE_EXCEEDED without running a handler
        final long timeoutNanos = deadline == null ? -1 : Math.max(0, deadline.timeRemainingNanos());
        final int end = encoder.call(buffer, offset, streamId, method.fullMethodName(), timeoutNanos,
            callInitialRequestN, requestMetadata);
        encodeFirstMessage(encoder, buffer, end);
    }

    @Override
    public final void failed(final Status status)
    {
        onWriteFailed(status);
    }

    final synchronized boolean isDone()
    {
        return cancelled || terminalStatus != null;
    }

    // ------------------------------------------------------------ Subscription

    @Override
    public void cancel()
    {
        ClientWireConnection sendCancel = null;
        final Status status;
        synchronized (this)
        {
            if (cancelled)
            {
                return;
            }
            cancelled = true;
            if (callSent && terminalStatus == null)
            {
                sendCancel = connection;
            }
            if (terminalStatus == null)
            {
                terminalStatus = Status.CANCELLED.withDescription("cancelled by the client");
            }
            status = terminalStatus;
        }
        if (sendCancel != null && !sendCancel.unqueue(this))
        {
            sendCancel.write(new OutboundFrame.Control(FrameType.CANCEL, 0, streamId, Status.CANCELLED.code().value()));
        }
        cleanup();
        ended(status, new Metadata(), true, true);
    }

    // ------------------------------------------------------------ frames from the server

    @Override
    void onHeaders(final Metadata headers)
    {
        if (context != null)
        {
            context.responseHeaders(headers);
        }
    }

    @Override
    void onUndecodableMessage(final Status status)
    {
        failLocally(status, true);
    }

    @Override
    void onOversizedMessage(final int length, final int limit)
    {
        failLocally(Status.RESOURCE_EXHAUSTED.withDescription(
            "response message of " + length + " bytes exceeds the limit of " + limit + " bytes"), true);
    }

    /** {@link #endLocked}: the kind hands the end over after the monitor, in {@link #ended}. */
    static final int END_LATER = 0;
    /** {@link #endLocked}: the kind took the end under the monitor and delivers it now ({@link #deliverEnd}). */
    static final int END_DELIVER = 1;
    /** {@link #endLocked}: the kind took the end under the monitor; nothing to deliver yet (it waits for demand). */
    static final int END_TAKEN = 2;

    /**
     * Under this call's monitor, in the step that records the server's STATUS: a kind may take the end here (what
     * {@link #ended} would do under the monitor a moment later), saving a second monitor per call.
     *
     * @return {@link #END_LATER} (the default), {@link #END_DELIVER} or {@link #END_TAKEN}.
     */
    int endLocked(final Status status, final Metadata trailers)
    {
        return END_LATER;
    }

    /** After {@link #endLocked} returned {@link #END_DELIVER}: signal the end to the subscriber. */
    void deliverEnd()
    {
    }

    @Override
    void onStatus(final Status status, final Metadata trailers)
    {
        final boolean holdsMore;
        final int end;
        synchronized (this)
        {
            if (terminalStatus != null || cancelled)
            {
                return;
            }
            terminalStatus = status;
            statusReceived = true;
            registered = false; // removed from the connection by the caller
            // what cleanup() would release besides the registration: for a unary call usually nothing (no deadline,
            // no parent call); a streaming call also holds its request subscription
            holdsMore = !cleanupIsTimerAndParentOnly() || deadlineTimer != null || parentRegistration != null ||
                connection == null;
            end = endLocked(status, trailers);
        }
        if (holdsMore)
        {
            cleanup();
        }
        if (end == END_LATER)
        {
            ended(status, trailers, false, false);
        }
        else if (end == END_DELIVER)
        {
            deliverEnd();
        }
    }

    @Override
    void onConnectionClosed(final Status status)
    {
        synchronized (this)
        {
            if (terminalStatus != null || cancelled)
            {
                return;
            }
            terminalStatus = status;
        }
        cleanup();
        ended(status, new Metadata(), false, false);
    }

    @Override
    void onWriteFailed(final Status status)
    {
        failLocally(status, true);
    }

    /** Fails the call before it reached a connection (e.g. UNAVAILABLE while the channel cannot connect). */
    void failBeforeStart(final Status status)
    {
        failLocally(status, false);
    }

    private void onDeadline()
    {
        final String remaining = deadline == null ? "" : " (" + (-deadline.timeRemainingNanos() / 1000) + " us late)";
        failLocally(Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded" + remaining), true);
    }

    final void failLocally(final Status status, final boolean sendCancel)
    {
        ClientWireConnection cancelOn = null;
        synchronized (this)
        {
            if (terminalStatus != null || cancelled)
            {
                return;
            }
            terminalStatus = status;
            if (sendCancel && callSent)
            {
                cancelOn = connection;
            }
        }
        if (cancelOn != null && !cancelOn.unqueue(this))
        {
            // the reason travels, so that the server ends its side with the same code (e.g. DEADLINE_EXCEEDED);
            // a CALL still queued behind back-pressure is taken back instead: the server never hears of the call
            cancelOn.write(new OutboundFrame.Control(FrameType.CANCEL, 0, streamId, status.code().value()));
        }
        cleanup();
        ended(status, new Metadata(), true, false);
    }

    /**
     * @return true if {@link #cleanup()} releases nothing but what this class holds (a kind that holds more, e.g.
     *         a request subscription, overrides both).
     */
    boolean cleanupIsTimerAndParentOnly()
    {
        return false;
    }

    /** Releases what the call holds: timer, stream registration, request subscription, channel wait. */
    void cleanup()
    {
        final Disposable timer;
        final ClientWireConnection conn;
        final int id;
        final Disposable registration;
        synchronized (this)
        {
            timer = deadlineTimer;
            deadlineTimer = null;
            registration = parentRegistration;
            parentRegistration = null;
            conn = connection;
            id = registered ? streamId : -1;
            registered = false;
        }
        if (timer != null)
        {
            timer.dispose();
        }
        if (registration != null)
        {
            registration.dispose();
        }
        if (conn != null && id > 0)
        {
            conn.remove(id);
        }
        if (conn == null)
        {
            channel.removeWaiter(this);
        }
    }

    /** Signals the end to the subscriber (unless it cancelled) and records it; once, from the delivery side. */
    final void terminate(final Status status, final Metadata trailers, final boolean silent)
    {
        channel.metrics().callEnded(method, status, startNanos);
        if (context != null)
        {
            context.closed(status, trailers); // an empty Metadata only if someone reads the trailers
        }
        if (silent)
        {
            return; // a cancelled subscriber gets no further signal
        }
        if (status.isOk())
        {
            actual.onComplete();
        }
        else
        {
            actual.onError(status.asException(trailers));
        }
    }
}
