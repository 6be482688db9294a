package io.reverb.rpc.internal;

import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.wire.CallFlyweight;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * The client side of one call, all roles in one object: the {@link Subscription} given to the subscriber of the
 * responses (its demand becomes REQUEST_N), the subscriber of the request publisher (pulled only as far as the
 * server's REQUEST_N allow), and the stream the connection routes the server's frames to.
 *
 * <p>State is guarded by {@code this}, and no frame is written while holding it: a method decides under the monitor
 * what to send, then writes after releasing it. CALL is written before {@code callSent} is set, so a CANCEL or
 * REQUEST_N (sent only once {@code callSent}) always follows its CALL. Signals to the subscriber go through a
 * work-in-progress drain loop, so they are serial whatever thread produced them.
 */
final class ClientCall<Req, Resp> extends RpcStream implements OutboundFrame, Subscription, CoreSubscriber<Req>
{
    private static final AtomicIntegerFieldUpdater<ClientCall> WIP =
        AtomicIntegerFieldUpdater.newUpdater(ClientCall.class, "wip");

    private final ChannelRuntime channel;
    private final MethodDescriptor<Req, Resp> method;
    private final Publisher<Req> requests;
    private final ClientCallContext context;
    private final Metadata requestMetadata;
    private final Deadline deadline;
    final boolean waitForReady;
    private final Req requestValue;
    private final boolean unaryResponse;
    private CoreSubscriber<? super Resp> actual;
    private boolean receivedValue;

    private ClientConnection connection;
    private boolean registered;
    // the CALL frame (and the single request travelling with it), encoded by this object
    private long callTimeoutNanos;
    private int callInitialRequestN;
    private int requestPayloadLength = -1;
    private int callFrameLength;
    private boolean callSent;
    private boolean statusReceived;
    private boolean cancelled;
    private boolean delivered;
    private boolean outboundDone;
    private boolean discardQueued;
    private long requested;
    private long demandTotal;
    private long granted;
    private long upstreamDemandBeforeSubscribe;
    private ArrayDeque<Resp> queue;
    private Resp single;
    private Status terminalStatus;
    private Metadata terminalTrailers;
    private Subscription upstream;
    private Disposable deadlineTimer;
    private long startNanos;
    private volatile int wip;

    /**
     * @param requests      the request publisher, or null when {@code requestValue} is the only request.
     * @param requestValue  the single request of a unary-style call (sent with the CALL frame), or null.
     * @param unaryResponse true if the subscriber expects exactly one response (a Mono).
     */
    ClientCall(final ChannelRuntime channel, final MethodDescriptor<Req, Resp> method, final Publisher<Req> requests,
        final Req requestValue, final boolean unaryResponse,
        final ClientCallContext context, final Metadata requestMetadata, final Deadline deadline, final boolean waitForReady)
    {
        this.requestValue = requestValue;
        this.unaryResponse = unaryResponse;
        this.channel = channel;
        this.method = method;
        this.requests = requests;
        this.context = context;
        this.requestMetadata = requestMetadata;
        this.deadline = deadline;
        this.waitForReady = waitForReady;
    }

    void start(final CoreSubscriber<? super Resp> actual)
    {
        this.actual = actual;
        startNanos = channel.metrics().callStarted();
        actual.onSubscribe(this);
        if (deadline != null)
        {
            final long remaining = deadline.timeRemainingNanos();
            if (remaining <= 0)
            {
                failLocally(Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded before the call started"), false);
                return;
            }
            final Disposable timer = channel.timer().schedule(this::onDeadline, remaining, TimeUnit.NANOSECONDS);
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
        channel.acquire(this);
    }

    /**
     * The channel has a connection for this call: send CALL, then start pulling requests.
     */
    void onConnection(final ClientConnection conn)
    {
        if (requestValue != null && requestPayloadLength < 0)
        {
            try
            {
                requestPayloadLength = method.requestMarshaller().serializedSize(requestValue);
            }
            catch (final Throwable t)
            {
                failLocally(Status.INTERNAL.withDescription("failed to size request: " + t).withCause(t), false);
                return;
            }
        }
        synchronized (this)
        {
            if (cancelled || terminalStatus != null)
            {
                return;
            }
            callTimeoutNanos = deadline == null ? -1 : Math.max(1, deadline.timeRemainingNanos());
            callInitialRequestN = toWire(demandTotal);
            granted = demandTotal;
            callFrameLength = CallFlyweight.frameLength(method.fullMethodName(), requestMetadata) +
                (requestValue != null ? HEADER + requestPayloadLength : 0);
        }
        // registers the stream and writes CALL (in stream id order), outside this call's monitor
        final int id = conn.startCall(this);
        if (id < 0)
        {
            // lost a race with GOAWAY or a failure: try again, the channel makes a new connection
            channel.reacquireLater(this);
            return;
        }
        if (requestValue != null)
        {
            channel.metrics().messageSent(method, requestPayloadLength);
        }
        long delta = 0;
        int cancelCode = -1;
        final boolean done;
        synchronized (this)
        {
            connection = conn;
            callSent = true;
            if (terminalStatus == null && !cancelled)
            {
                registered = true;
                if (demandTotal > granted)
                {
                    // asked for more while CALL was on its way
                    delta = demandTotal == Long.MAX_VALUE ? Long.MAX_VALUE : demandTotal - granted;
                    granted = demandTotal;
                }
            }
            else if (!statusReceived)
            {
                // cancelled or failed here while CALL was on its way: the server must hear of it
                cancelCode = terminalStatus.code().value();
            }
            if (requestValue != null)
            {
                outboundDone = true;
            }
            done = terminalStatus != null || cancelled;
        }
        if (cancelCode >= 0)
        {
            conn.write(new OutboundFrame.Control(FrameType.CANCEL, 0, id, cancelCode));
            conn.remove(id);
            return;
        }
        if (done)
        {
            return; // the server answered already (its STATUS removed the stream)
        }
        if (delta > 0)
        {
            conn.write(new OutboundFrame.Control(FrameType.REQUEST_N, 0, id, toWire(delta)));
        }
        if (requestValue == null)
        {
            requests.subscribe(this);
        }
    }

    // ------------------------------------------------------------ OutboundFrame (CALL, with the unary request)

    @Override
    public int length()
    {
        return callFrameLength;
    }

    @Override
    public void encode(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
    {
        final int end = encoder.call(buffer, offset, streamId, method.fullMethodName(), callTimeoutNanos,
            callInitialRequestN, requestMetadata);
        if (requestValue != null)
        {
            encoder.message(buffer, end, streamId, true, method.requestMarshaller(), requestValue, requestPayloadLength);
        }
    }

    @Override
    public void failed(final Status status)
    {
        onWriteFailed(status);
    }

    boolean isDone()
    {
        synchronized (this)
        {
            return cancelled || terminalStatus != null;
        }
    }

    // ------------------------------------------------------------ Subscription (responses subscriber)

    @Override
    public void request(final long n)
    {
        if (n <= 0)
        {
            failLocally(Status.INTERNAL.withDescription("request(" + n + "): demand must be positive (rule 3.9)"), true);
            return;
        }
        long delta = 0;
        final ClientConnection conn;
        synchronized (this)
        {
            requested = addCap(requested, n);
            demandTotal = addCap(demandTotal, n);
            conn = connection;
            if (callSent && terminalStatus == null && !cancelled && demandTotal > granted)
            {
                delta = demandTotal == Long.MAX_VALUE ? Long.MAX_VALUE : demandTotal - granted;
                granted = demandTotal;
            }
        }
        if (delta > 0)
        {
            conn.write(new OutboundFrame.Control(FrameType.REQUEST_N, 0, streamId, toWire(delta)));
        }
        drain();
    }

    @Override
    public void cancel()
    {
        ClientConnection sendCancel = null;
        synchronized (this)
        {
            if (cancelled || delivered)
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
        }
        if (sendCancel != null)
        {
            sendCancel.write(new OutboundFrame.Control(FrameType.CANCEL, 0, streamId, Status.CANCELLED.code().value()));
        }
        cleanup();
        drain();
    }

    // ------------------------------------------------------------ CoreSubscriber (request publisher)

    @Override
    public Context currentContext()
    {
        return actual.currentContext();
    }

    @Override
    public void onSubscribe(final Subscription s)
    {
        final long n;
        synchronized (this)
        {
            if (upstream != null || cancelled || terminalStatus != null)
            {
                s.cancel();
                return;
            }
            upstream = s;
            // the server may buffer one message before it asks: saves a round trip for unary calls
            n = addCap(1, upstreamDemandBeforeSubscribe);
            upstreamDemandBeforeSubscribe = 0;
        }
        s.request(n);
    }

    @Override
    public void onNext(final Req value)
    {
        final boolean last = method.type().clientSendsOneMessage();
        final ClientConnection conn;
        synchronized (this)
        {
            if (outboundDone || cancelled || terminalStatus != null)
            {
                Operators.onDiscard(value, actual.currentContext());
                return;
            }
            if (last)
            {
                outboundDone = true;
            }
            conn = connection;
        }
        // requests arrive one at a time (Reactive Streams), so writing outside the monitor keeps their order
        final OutboundFrame.Message<Req> frame;
        try
        {
            frame = new OutboundFrame.Message<>(streamId, last, method.requestMarshaller(), value, this);
        }
        catch (final Throwable t)
        {
            failLocally(Status.INTERNAL.withDescription("failed to size request: " + t).withCause(t), true);
            return;
        }
        channel.metrics().messageSent(method, frame.payloadLength());
        conn.write(frame);
    }

    @Override
    public void onError(final Throwable t)
    {
        final Status status = t instanceof RpcException ? ((RpcException)t).status() :
            Status.CANCELLED.withDescription("request stream failed: " + t).withCause(t);
        failLocally(status, true);
    }

    @Override
    public void onComplete()
    {
        final ClientConnection conn;
        synchronized (this)
        {
            if (outboundDone || cancelled || terminalStatus != null)
            {
                return;
            }
            outboundDone = true;
            conn = connection;
        }
        conn.write(new OutboundFrame.Control(FrameType.HALF_CLOSE, 0, streamId, 0));
    }

    // ------------------------------------------------------------ RpcStream (frames from the server)

    void onHeaders(final Metadata headers)
    {
        if (context != null)
        {
            context.responseHeaders(headers);
        }
    }

    @Override
    void onMessage(final ByteBuffer payload, final boolean endOfStream)
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
        ClientConnection sendCancel = null;
        synchronized (this)
        {
            if (cancelled || terminalStatus != null)
            {
                return;
            }
            if (unaryResponse && receivedValue)
            {
                terminalStatus = Status.INTERNAL.withDescription("More than one value received for unary call");
                terminalTrailers = new Metadata();
                discardQueued = true;
                sendCancel = connection;
            }
            receivedValue = true;
            if (terminalStatus != null)
            {
                // fall through to cleanup below
            }
            else if (single == null && (queue == null || queue.isEmpty()))
            {
                single = value;
            }
            else
            {
                if (queue == null)
                {
                    queue = new ArrayDeque<>();
                }
                queue.addLast(value);
            }
        }
        if (sendCancel != null)
        {
            sendCancel.write(new OutboundFrame.Control(FrameType.CANCEL, 0, streamId, StatusCode.INTERNAL.value()));
        }
        if (discardQueuedNow())
        {
            cleanup();
        }
        drain();
    }

    private synchronized boolean discardQueuedNow()
    {
        return discardQueued && terminalStatus != null && !delivered;
    }

    @Override
    void onOversizedMessage(final int length, final int limit)
    {
        failLocally(Status.RESOURCE_EXHAUSTED.withDescription(
            "response message of " + length + " bytes exceeds the limit of " + limit + " bytes"), true);
    }

    @Override
    void onRequestN(final int n)
    {
        final Subscription s;
        final long demand = fromWire(n);
        synchronized (this)
        {
            if (outboundDone)
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

    void onStatus(final Status status, final Metadata trailers)
    {
        synchronized (this)
        {
            if (terminalStatus != null || cancelled)
            {
                return;
            }
            terminalStatus = status;
            terminalTrailers = trailers;
            statusReceived = true;
            registered = false; // removed from the connection by the caller
        }
        cleanup();
        drain();
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
            terminalTrailers = new Metadata();
        }
        cleanup();
        drain();
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

    private void failLocally(final Status status, final boolean sendCancel)
    {
        ClientConnection cancelOn = null;
        synchronized (this)
        {
            if (terminalStatus != null || cancelled)
            {
                return;
            }
            terminalStatus = status;
            terminalTrailers = new Metadata();
            discardQueued = true;
            if (sendCancel && callSent)
            {
                cancelOn = connection;
            }
        }
        if (cancelOn != null)
        {
            // the reason travels, so that the server ends its side with the same code (e.g. DEADLINE_EXCEEDED)
            cancelOn.write(new OutboundFrame.Control(FrameType.CANCEL, 0, streamId, status.code().value()));
        }
        cleanup();
        drain();
    }

    /** Releases what the call holds: timer, stream registration, request subscription, channel wait. */
    private void cleanup()
    {
        final Disposable timer;
        final Subscription s;
        final ClientConnection conn;
        final int id;
        synchronized (this)
        {
            timer = deadlineTimer;
            deadlineTimer = null;
            s = upstream;
            upstream = null;
            conn = connection;
            id = registered ? streamId : -1;
            registered = false;
        }
        if (timer != null)
        {
            timer.dispose();
        }
        if (conn != null && id > 0)
        {
            conn.remove(id);
        }
        if (s != null)
        {
            s.cancel();
        }
        if (conn == null)
        {
            channel.removeWaiter(this);
        }
    }

    private void drain()
    {
        if (WIP.getAndIncrement(this) != 0)
        {
            return;
        }
        int missed = 1;
        while (true)
        {
            while (true)
            {
                Resp value = null;
                Status status = null;
                Metadata trailers = null;
                synchronized (this)
                {
                    if (delivered)
                    {
                        return;
                    }
                    if (cancelled || discardQueued)
                    {
                        single = null;
                        if (queue != null)
                        {
                            queue.clear();
                        }
                    }
                    if (unaryResponse && single != null && terminalStatus != null && !terminalStatus.isOk())
                    {
                        // A unary response counts only with its OK status: the call failed, the value goes.
                        single = null;
                    }
                    if (cancelled)
                    {
                        delivered = true;
                        status = terminalStatus;
                        trailers = terminalTrailers;
                    }
                    else if (requested > 0 && single != null && (!unaryResponse || terminalStatus != null))
                    {
                        value = single;
                        single = queue == null ? null : queue.pollFirst();
                        if (requested != Long.MAX_VALUE)
                        {
                            requested--;
                        }
                    }
                    else if (single == null && terminalStatus != null)
                    {
                        delivered = true;
                        status = terminalStatus;
                        trailers = terminalTrailers;
                        if (status.isOk() && unaryResponse && !receivedValue)
                        {
                            status = Status.INTERNAL.withDescription("No value received for " + method.fullMethodName());
                        }
                    }
                    else
                    {
                        break;
                    }
                }
                if (value != null)
                {
                    actual.onNext(value);
                    continue;
                }
                terminate(status, trailers);
                return;
            }
            missed = WIP.addAndGet(this, -missed);
            if (missed == 0)
            {
                return;
            }
        }
    }

    private void terminate(final Status status, final Metadata trailers)
    {
        channel.metrics().callEnded(method, status, startNanos);
        if (context != null)
        {
            context.closed(status, trailers != null ? trailers : new Metadata());
        }
        if (cancelled)
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
