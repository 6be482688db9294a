package io.reverb.rpc.internal;

import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.Status;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * A call with a request publisher and a response {@code Flux} (server-streaming, client-streaming, bidi, and any
 * call that goes through client interceptors). It subscribes to the requests only as far as the server's
 * REQUEST_N allow, and the subscriber's demand travels to the server as REQUEST_N (through an
 * {@link InboundQueue}).
 *
 * @param <Req>  request type.
 * @param <Resp> response type.
 */
final class StreamingClientCall<Req, Resp> extends ClientCall<Req, Resp> implements CoreSubscriber<Req>
{
    private final Publisher<Req> requests;
    private final InboundQueue<Resp> responses;
    // guarded by this
    private boolean outboundDone;
    private Subscription upstream;
    /**
     * Requests the server allowed (REQUEST_N, and the one it may buffer before it asks) not yet asked of the request
     * publisher; Long.MAX_VALUE: unbounded. The publisher is asked in steps of {@link ReactorServerCall#RESPONSE_WINDOW}
     * and only while the connection's queue of unsent frames is short, as the server asks its handlers: a server
     * that asks for everything (a handler that reduces or collects its requests) and then reads slowly, or not at
     * all, no longer makes the client pull a whole upload into frames it cannot send.
     */
    private long peerDemandLeft = 1;
    /** Requests asked of the publisher and not yet emitted. */
    private long upstreamAhead;
    /** Waiting for the connection's queue to drain before asking for more. */
    private boolean waitingForWrites;
    // the one request of a call whose client sends one message (server-streaming), kept until a response arrives so
    // that a call the server refused can be sent again (transparent retry); and whether it is being resent
    private Req heldRequest;
    // written under this; read without it on the response path, where it only ever goes from false to true
    private volatile boolean responded;
    /** Responses the server sent (the transport's thread only): see {@link #takeCredit}. */
    private long responsesReceived;
    private boolean resending;

    StreamingClientCall(final ClientCallStarter channel, final MethodDescriptor<Req, Resp> method,
        final Publisher<Req> requests, final ClientCallContext context, final Metadata requestMetadata,
        final Deadline deadline, final boolean waitForReady)
    {
        super(channel, method, context, requestMetadata, deadline, waitForReady);
        this.requests = requests;
        this.responses = new InboundQueue<>(new InboundQueue.Sink<>()
        {
            @Override
            public void onValue(final Resp value)
            {
                try
                {
                    actual.onNext(value);
                }
                finally
                {
                    // the response's lifetime (Marshaller#release): memory its marshaller lent may be reused now
                    method.responseMarshaller().release(value);
                }
            }

            @Override
            public void onEnd(final Status status, final Metadata trailers, final boolean silent)
            {
                terminate(status, trailers, silent);
            }
        }, null, 0, true);
    }

    @Override
    int prepareFirstMessage()
    {
        return 0;
    }

    @Override
    int initialDemand()
    {
        return responses.grantInitial();
    }

    @Override
    void encodeFirstMessage(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
    {
    }

    @Override
    void onCallSent(final ClientWireConnection conn, final int id)
    {
        final long delta = responses.openGrants(); // asked for more while CALL was on its way
        if (delta > 0)
        {
            conn.write(new OutboundFrame.Control(FrameType.REQUEST_N, 0, id, toWire(delta)));
        }
        final Req again;
        synchronized (this)
        {
            again = resending ? heldRequest : null;
            resending = false;
        }
        if (again != null)
        {
            // sent again after a refusal: the one request (already taken from the publisher) goes as it went
            final OutboundFrame.Message<?> frame;
            try
            {
                frame = requestFrame(id, true, again);
            }
            catch (final Throwable t)
            {
                failLocally(Status.INTERNAL.withDescription("failed to encode request: " + t).withCause(t), true);
                return;
            }
            conn.write(frame);
            return;
        }
        requests.subscribe(this);
    }

    /**
     * A server-streaming call whose one request went out, and to which no response came, can be sent again as it
     * was: the server refused it before any handler ran. Client- and bidi-streaming calls cannot (their requests
     * are gone with the publisher).
     */
    @Override
    synchronized boolean resendable()
    {
        return heldRequest != null && outboundDone && !responded;
    }

    @Override
    void prepareResend()
    {
        resending = true; // under this call's monitor (retryRefused)
        responses.pauseGrants(); // demand asked for meanwhile goes with the new CALL
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
        final long delta = responses.request(n);
        final ClientWireConnection conn = delta > 0 ? connection() : null;
        if (conn != null)
        {
            // grants open only once CALL is written and the connection set (happens-before through the queue); a
            // call being resent has them paused, and its new CALL carries all the demand (grantInitial)
            conn.write(new OutboundFrame.Control(FrameType.REQUEST_N, 0, streamId, toWire(delta)));
        }
    }

    private synchronized ClientWireConnection connection()
    {
        return connection;
    }

    /**
     * A server that streams responses sends no more than the subscriber's demand granted it (the queue raises its
     * grant before the CALL or REQUEST_N carrying it leaves): beyond it, what it sends would queue here without bound,
     * so the call fails RESOURCE_EXHAUSTED (WireConnection; the connection's other calls go on). A method that
     * answers once is not counted: a second response ends the call INTERNAL.
     */
    @Override
    boolean takeCredit()
    {
        return method.type().serverSendsOneMessage() || ++responsesReceived <= responses.granted();
    }

    @Override
    long creditGranted()
    {
        return responses.granted();
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
        if (s == null)
        {
            throw brokenPublisher("onSubscribe(null)", false);
        }
        final long n;
        synchronized (this)
        {
            if (upstream != null || cancelled || terminalStatus != null)
            {
                s.cancel();
                return;
            }
            upstream = s;
            // the server may buffer one message before it asks (peerDemandLeft starts at 1): saves a round trip for
            // unary calls
            n = topUpLocked();
        }
        if (n > 0)
        {
            s.request(n);
        }
    }

    @Override
    public void onNext(final Req value)
    {
        if (value == null)
        {
            throw brokenPublisher("onNext(null)", true);
        }
        final boolean last = method.type().clientSendsOneMessage();
        final ClientWireConnection conn;
        long more = 0;
        Subscription from = null;
        synchronized (this)
        {
            upstreamAhead--;
            if (outboundDone || cancelled || terminalStatus != null)
            {
                Operators.onDiscard(value, actual.currentContext());
                return;
            }
            if (last)
            {
                outboundDone = true;
                if (channel.config().transparentRetry)
                {
                    heldRequest = value; // for a resend after a refusal (see resendable)
                }
            }
            else if (upstreamAhead <= ReactorServerCall.RESPONSE_WINDOW / 2 && peerDemandLeft > 0)
            {
                // the window half spent: more is asked for once this request is written (in this monitor's step)
                from = upstream;
                more = from == null ? 0 : topUpLocked();
            }
            conn = connection;
        }
        // requests arrive one at a time (Reactive Streams), so writing outside the monitor keeps their order
        final OutboundFrame.Message<?> frame;
        try
        {
            frame = requestFrame(streamId, last, value);
        }
        catch (final Throwable t)
        {
            failLocally(Status.INTERNAL.withDescription("failed to size request: " + t).withCause(t), true);
            return;
        }
        channel.metrics().messageSent(method, frame.payloadLength());
        conn.write(frame);
        if (more > 0)
        {
            from.request(more); // within the publisher's own emission: Reactive Streams allows it (3.3)
        }
    }

    /**
     * The request publisher broke Reactive Streams rule 2.13 (a null signal): the call fails INTERNAL and forgets that
     * subscription (it counts as cancelled), and the publisher gets the NullPointerException the rule asks for.
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
            upstream = null;
        }
        final String what = "the request publisher signalled " + signal + " (Reactive Streams rule 2.13)";
        failLocally(Status.INTERNAL.withDescription(what), true);
        if (cancel && s != null)
        {
            s.cancel(); // it may go on emitting otherwise
        }
        return new NullPointerException(what);
    }

    /** Asks the request publisher for more if the window is half empty and the server allows it. */
    private void topUp()
    {
        final Subscription s;
        final long n;
        synchronized (this)
        {
            if (upstreamAhead > ReactorServerCall.RESPONSE_WINDOW / 2 || peerDemandLeft == 0)
            {
                return;
            }
            s = upstream;
            n = s == null ? 0 : topUpLocked();
        }
        if (n > 0)
        {
            s.request(n);
        }
    }

    /**
     * Guarded by this: how many more requests to ask of the publisher now, counted as asked; 0 when the window is
     * full, the server allows no more, or the connection's queue is long (then its drain resumes this call).
     */
    private long topUpLocked()
    {
        if (peerDemandLeft == 0 || outboundDone || cancelled || terminalStatus != null)
        {
            return 0;
        }
        final long ahead = Math.max(0, upstreamAhead);
        if (ahead > ReactorServerCall.RESPONSE_WINDOW / 2)
        {
            return 0;
        }
        final ClientWireConnection conn = connection;
        if (conn != null && conn.queuedFrames() >= ReactorServerCall.QUEUED_HIGH)
        {
            if (waitingForWrites)
            {
                return 0;
            }
            if (conn.whenDrained(this::resumeAfterWrites))
            {
                waitingForWrites = true;
                return 0;
            }
            // drained meanwhile: go on
        }
        final long n = Math.min(ReactorServerCall.RESPONSE_WINDOW - ahead, peerDemandLeft);
        if (peerDemandLeft != Long.MAX_VALUE)
        {
            peerDemandLeft -= n;
        }
        upstreamAhead = ahead + n;
        return n;
    }

    /** The connection's queue drained (its writer's thread): ask the publisher for more if the server wants more. */
    private void resumeAfterWrites()
    {
        synchronized (this)
        {
            waitingForWrites = false;
        }
        topUp();
    }

    @Override
    public void onError(final Throwable t)
    {
        if (t == null)
        {
            throw brokenPublisher("onError(null)", false);
        }
        synchronized (this)
        {
            upstream = null; // it ended: nothing is called on its subscription any more (rule 2.3)
        }
        final Status status = t instanceof RpcException ? ((RpcException)t).status() :
            Status.CANCELLED.withDescription("request stream failed: " + t).withCause(t);
        failLocally(status, true);
    }

    @Override
    public void onComplete()
    {
        final ClientWireConnection conn;
        synchronized (this)
        {
            upstream = null; // it ended: nothing is called on its subscription any more (rule 2.3)
            if (outboundDone || cancelled || terminalStatus != null)
            {
                return;
            }
            outboundDone = true;
            conn = connection;
        }
        conn.write(new OutboundFrame.Control(FrameType.HALF_CLOSE, 0, streamId, 0));
    }

    // ------------------------------------------------------------ frames from the server

    @Override
    void onResponse(final Resp value)
    {
        if (!responded)
        {
            // the first response only: no monitor per streamed message
            synchronized (this)
            {
                responded = true; // processed: never resent
                heldRequest = null;
            }
        }
        if (value == null)
        {
            // Reactive Streams forbid null signals: the call ends as a unary call's does without a value
            failLocally(Status.INTERNAL.withDescription("the response marshaller returned null for a streamed message"), true);
            return;
        }
        responses.offer(value);
    }

    @Override
    void onRequestN(final int n)
    {
        final Subscription s;
        final long more;
        final long demand = fromWire(n);
        synchronized (this)
        {
            if (outboundDone)
            {
                return;
            }
            peerDemandLeft = addCap(peerDemandLeft, demand);
            s = upstream;
            if (s == null)
            {
                return; // asked for at onSubscribe
            }
            more = topUpLocked();
        }
        if (more > 0)
        {
            s.request(more);
        }
    }

    @Override
    void ended(final Status status, final Metadata trailers, final boolean discard, final boolean silent)
    {
        responses.end(status, trailers, discard, silent);
    }

    @Override
    void cleanup()
    {
        super.cleanup();
        final Subscription s;
        synchronized (this)
        {
            heldRequest = null;
            s = upstream;
            upstream = null;
        }
        if (s != null)
        {
            s.cancel();
        }
    }
}
