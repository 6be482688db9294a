package io.reverb.grpc;

import io.grpc.Attributes;
import io.grpc.Decompressor;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.internal.ServerStream;
import io.grpc.internal.ServerStreamListener;
import io.grpc.internal.StatsTraceContext;
import io.grpc.internal.StreamListener;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.compression.Codec;
import io.reverb.rpc.compression.CodecRegistry;
import reactor.util.context.Context;

import java.io.InputStream;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

/**
 * The server side of one call over Reverb, seen by grpc-java's server as a stream: the client's messages come from
 * rpc-core's request Flux (demand travels back as REQUEST_N), the messages grpc-java writes are the handler's
 * response publisher ({@link OutboundMessages}), response headers and trailers go into the call's
 * {@link RpcContext}, and the status ends the publisher.
 */
final class ReverbServerStream extends ReverbStream<ServerStreamListener>
    implements ServerStream, Runnable, StreamListener.MessageProducer
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final AtomicReferenceFieldUpdater<ReverbServerStream, Status> CLOSING =
        AtomicReferenceFieldUpdater.newUpdater(ReverbServerStream.class, Status.class, "closing");
    private static final AtomicIntegerFieldUpdater<ReverbServerStream> OWED =
        AtomicIntegerFieldUpdater.newUpdater(ReverbServerStream.class, "owed");
    private static final AtomicIntegerFieldUpdater<ReverbServerStream> UNARY =
        AtomicIntegerFieldUpdater.newUpdater(ReverbServerStream.class, "unaryState");
    /** {@link #owed}: the listener is owed {@code onReady()}. */
    private static final int OWED_READY = 1;
    /** {@link #owed}: the listener is owed the unary request and the end of requests. */
    private static final int OWED_REQUEST = 2;
    /** {@link #unaryState}: grpc-java asked for the request. */
    private static final int ASKED = 1;
    /** {@link #unaryState}: rpc-core subscribed to the responses (a response written now goes straight to it). */
    private static final int SUBSCRIBED = 2;

    /** The Reverb call: its {@link RpcContext} is made only when this stream needs it (headers, trailers...). */
    private final RpcContext.Carrier call;
    private final Attributes attributes;
    private Context reactorContext;
    private final OutboundMessages responses = new OutboundMessages(this);
    private final int id = IDS.incrementAndGet();
    /** The status of grpc-java's {@link #cancel(Status)}, once called: the listener is closed with it. */
    private volatile Status cancelStatus;
    /** The status the listener is closed with, once {@link #closeListener} was called. */
    private volatile Status closing;
    /**
     * What the serializer owes the listener besides its close ({@link #OWED_READY}, {@link #OWED_REQUEST}): this
     * stream is the serializer's one task ({@link #run}), which delivers what is owed, so that a call's callbacks cost
     * no task object each.
     */
    private volatile int owed;
    /** A unary call's one request (given by rpc-core with the call), or null: a streaming call's come as a Flux. */
    private final InputStream unaryRequest;
    /** {@link #ASKED} and {@link #SUBSCRIBED}: the request is delivered once both happened, once. */
    private volatile int unaryState;
    /** The unary request's stream while grpc-java's listener may take it ({@link #next}). */
    private InputStream requestMessage;

    /**
     * @param attributes        its transport's (one Reverb connection's) stream attributes.
     * @param call              the Reverb call (its context is asked for only when needed).
     * @param statsTraceContext the stream's tracers.
     * @param unaryRequest      a unary call's request, or null (a streaming call's requests are subscribed to).
     */
    ReverbServerStream(final Attributes attributes, final RpcContext.Carrier call,
        final StatsTraceContext statsTraceContext, final InputStream unaryRequest)
    {
        super(statsTraceContext);
        this.call = call;
        this.attributes = attributes;
        this.unaryRequest = unaryRequest;
    }

    OutboundMessages responses()
    {
        return responses;
    }

    // ---------------------------------------------------------------- grpc-java -> Reverb

    @Override
    public void setListener(final ServerStreamListener listener)
    {
        this.listener = listener;
    }

    @Override
    public void writeHeaders(final Metadata headers, final boolean flush)
    {
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's Metadata is imported, Reverb's is spelled out
        final io.reverb.rpc.Metadata converted = GrpcBridge.toReverb(headers);
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        if (converted != null)
        {
            call.rpcContext().responseHeaders().merge(converted);
        }
    }

    @Override
    public void writeMessage(final InputStream message)
    {
        responses.offer(outbound(message));
    }

    @Override
    public boolean isReady()
    {
        return responses.isReady();
    }

    @Override
    public void close(final Status status, final Metadata trailers)
    {
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - Reverb's Metadata (see writeHeaders)
        final io.reverb.rpc.Metadata converted = GrpcBridge.toReverb(trailers);
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        if (status.isOk())
        {
            if (converted != null)
            {
                call.rpcContext().responseTrailers().merge(converted);
            }
            responses.complete();
        }
        else
        {
            responses.fail(new RpcException(GrpcBridge.toReverb(status), converted));
        }
    }

    @Override
    public void cancel(final Status status)
    {
        // grpc-java's server gave up on the call (its deadline): the client gets the status, and the listener is
        // closed with it, not OK: grpc-java tells the handler onCancel only for a status that is not OK. Recorded
        // before the responses end, as their end (onTerminated) and a CANCEL racing in (onCancel) close the
        // listener with it too, whichever comes first.
        final Status reason = status.isOk() ? Status.CANCELLED.withDescription("stream cancelled") : status;
        cancelStatus = reason;
        closeListener(reason);
        responses.fail(new RpcException(GrpcBridge.toReverb(reason)));
        cancelInbound();
    }

    @Override
    public void setDecompressor(final Decompressor decompressor)
    {
        // rpc-core decompressed the messages already (the server's codec registry, see ReverbServerBuilder)
    }

    /** grpc-java's {@code ServerCall.setCompression} (or the switch): this call's responses from now on. */
    @Override
    void compressionChanged()
    {
        final Codec codec = outboundCodec();
        if (codec == null)
        {
            call.responseCompression(CodecRegistry.IDENTITY); // grpc-java sets it on every call: no context for it
        }
        else
        {
            call.rpcContext().responseCompression(codec);
        }
    }

    @Override
    public Attributes getAttributes()
    {
        return attributes;
    }

    @Override
    public String getAuthority()
    {
        return null;
    }

    @Override
    public void triggerEvent(final Object event)
    {
    }

    @Override
    public StatsTraceContext statsTraceContext()
    {
        return statsTraceContext;
    }

    @Override
    public int streamId()
    {
        return id;
    }

    @Override
    public void setOnReadyThreshold(final int numBytes)
    {
    }

    // ---------------------------------------------------------------- Reverb -> grpc-java (requests)

    @Override
    public Context currentContext()
    {
        // asked for by the request Flux of streaming calls only (unary calls hand over their request directly)
        Context c = reactorContext;
        if (c == null)
        {
            reactorContext = c = Context.of(RpcContext.CONTEXT_KEY, call.rpcContext());
        }
        return c;
    }

    @Override
    public void onError(final Throwable t)
    {
        // the request side failed (e.g. a request over the size limit): the call is over
        closeListener(GrpcBridge.statusOf(t));
    }

    @Override
    public void onComplete()
    {
        execute(() ->
        {
            if (!isClosed())
            {
                listener.halfClosed();
            }
        });
    }

    /**
     * grpc-java asks for requests: a unary call's one request is delivered once rpc-core also subscribed to the
     * responses (so that the handler's response, written from within the delivery with {@code directExecutor()}, goes
     * straight to rpc-core instead of waiting in a queue made for it).
     */
    @Override
    public void request(final int numMessages)
    {
        if (unaryRequest == null)
        {
            super.request(numMessages);
        }
        else if (numMessages > 0)
        {
            unaryStep(ASKED);
        }
    }

    /**
     * A unary call: rpc-core subscribed to the responses; the request goes to the listener once grpc-java asked for it.
     */
    void requestsReady()
    {
        unaryStep(SUBSCRIBED);
    }

    private void unaryStep(final int step)
    {
        int state;
        do
        {
            state = unaryState;
            if ((state & step) != 0)
            {
                return;
            }
        }
        while (!UNARY.compareAndSet(this, state, state | step));
        if ((state | step) == (ASKED | SUBSCRIBED))
        {
            countInbound(unaryRequest);
            owe(OWED_REQUEST);
        }
    }

    @Override
    public void onDemand()
    {
        owe(OWED_READY);
    }

    private void owe(final int what)
    {
        int current;
        do
        {
            current = owed;
        }
        while (!OWED.compareAndSet(this, current, current | what));
        execute(this);
    }

    /** The unary request's stream, once (grpc-java's message producer). */
    @Override
    public InputStream next()
    {
        final InputStream m = requestMessage;
        requestMessage = null;
        return m;
    }

    // ---------------------------------------------------------------- rpc-core's end of the responses

    @Override
    public void onCancel()
    {
        // rpc-core ended the call before its status was sent: the client cancelled, a deadline passed, the
        // connection was lost or the server is shutting down; the listener is closed with that reason (never OK:
        // the status did not go out, so grpc-java must tell the handler onCancel)
        cancelInbound();
        closeListener(endedEarly());
    }

    @Override
    public void onTerminated()
    {
        // the status went to rpc-core, which sends it: the stream is done (unless grpc-java cancelled it)
        cancelInbound();
        final Status cancelled = cancelStatus;
        closeListener(cancelled != null ? cancelled : Status.OK);
    }

    private Status endedEarly()
    {
        final Status cancelled = cancelStatus;
        if (cancelled != null)
        {
            return cancelled;
        }
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - Reverb's Status (grpc-java's is imported)
        // set by rpc-core before it cancels (a context made only now is made cancelled with it)
        final io.reverb.rpc.Status why = call.rpcContext().cancellationStatus();
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        if (why != null && !why.isOk())
        {
            return GrpcBridge.toGrpc(why);
        }
        return Status.CANCELLED.withDescription("call cancelled by the client");
    }

    /**
     * Closes the listener with the status, on the serializer; the first status given wins (the listener is closed
     * once).
     */
    private void closeListener(final Status status)
    {
        if (CLOSING.compareAndSet(this, null, status))
        {
            execute(this);
        }
    }

    /**
     * On the serializer, the stream's one task: gives the listener what it is owed ({@code onReady()}, then a unary
     * call's request and the end of requests) unless the call is closing, then closes the listener with the status
     * {@link #closeListener} was first given, if it was. Submitted once per thing owed; a run that finds nothing left
     * (an earlier run delivered it) does nothing.
     */
    @Override
    public void run()
    {
        final int work = OWED.getAndSet(this, 0);
        if (work != 0 && closing == null && !isClosed())
        {
            if ((work & OWED_READY) != 0)
            {
                listener.onReady();
            }
            if ((work & OWED_REQUEST) != 0 && !isClosed())
            {
                requestMessage = unaryRequest;
                listener.messagesAvailable(this);
                if (!isClosed())
                {
                    listener.halfClosed();
                }
            }
        }
        final Status status = closing;
        if (status == null || !markClosed())
        {
            return;
        }
        statsTraceContext.streamClosed(status);
        listener.closed(status);
    }
}
