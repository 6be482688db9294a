package io.reverb.rpc.internal;

import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.Status;
import java.nio.ByteBuffer;

/**
 * A unary call as the client makes it (a {@code Mono}): the request travels in the CALL's transport message, the
 * server may send its one response at once (the CALL grants it), and the response reaches the subscriber only
 * together with its OK status, so that a call that fails after its response never emits a value and then an error.
 *
 * @param <Req>  request type.
 * @param <Resp> response type.
 */
final class UnaryClientCall<Req, Resp> extends ClientCall<Req, Resp>
{
    private final Req request;
    private int requestPayloadLength = -1;
    /** The request compressed (see {@link #encodeRequest}), or null when it is written by its marshaller. */
    private EncodedMessage encodedRequest;
    // guarded by this
    private boolean requested;
    private Resp response;
    private boolean receivedValue;
    private Status end;
    private Metadata endTrailers;
    private boolean endSilent;
    private boolean delivered;

    UnaryClientCall(final ClientCallStarter channel, final MethodDescriptor<Req, Resp> method, final Req request,
        final ClientCallContext context, final Metadata requestMetadata, final Deadline deadline,
        final boolean waitForReady)
    {
        super(channel, method, context, requestMetadata, deadline, waitForReady);
        this.request = request;
    }

    @Override
    int prepareFirstMessage()
    {
        if (requestPayloadLength < 0)
        {
            try
            {
                requestPayloadLength = method.requestMarshaller().serializedSize(request);
                encodedRequest = encodeRequest(request, requestPayloadLength);
            }
            catch (final Throwable t)
            {
                failLocally(Status.INTERNAL.withDescription("failed to size request: " + t).withCause(t), false);
                return -1;
            }
        }
        return HEADER + (encodedRequest != null ? encodedRequest.length : requestPayloadLength);
    }

    @Override
    boolean resendable()
    {
        return true; // the request is held here and travels with the CALL
    }

    @Override
    boolean cleanupIsTimerAndParentOnly()
    {
        return true; // the request travelled with the CALL: nothing subscribed to release
    }

    @Override
    int initialDemand()
    {
        return 1; // one response: it may come at once, the subscriber gets it with the status
    }

    @Override
    void encodeFirstMessage(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
    {
        if (encodedRequest != null)
        {
            encoder.message(buffer, offset, streamId, true, EncodedMessage.MARSHALLER, encodedRequest,
                encodedRequest.length);
            return;
        }
        encoder.message(buffer, offset, streamId, true, method.requestMarshaller(), request, requestPayloadLength);
    }

    @Override
    void onCallSent(final ClientWireConnection conn, final int id)
    {
        channel.metrics().messageSent(method, requestPayloadLength);
    }

    @Override
    public void request(final long n)
    {
        if (n <= 0)
        {
            failLocally(Status.INTERNAL.withDescription("request(" + n + "): demand must be positive (rule 3.9)"), true);
            return;
        }
        if (subscribingThread == Thread.currentThread() && end == null)
        {
            // the common request, from onSubscribe: the call is this thread's alone (see subscribingThread), and
            // nothing can be delivered before its end
            requested = true;
            return;
        }
        final boolean deliver;
        synchronized (this)
        {
            requested = true;
            deliver = takeDeliveryLocked();
        }
        if (deliver)
        {
            deliver();
        }
    }

    @Override
    void onResponse(final Resp value)
    {
        final boolean second;
        synchronized (this)
        {
            if (end != null)
            {
                return;
            }
            second = receivedValue;
            receivedValue = true;
            if (!second)
            {
                response = value;
            }
        }
        if (second)
        {
            failLocally(Status.INTERNAL.withDescription("More than one value received for unary call"), true);
        }
    }

    @Override
    void onRequestN(final int n)
    {
        // the request went with the CALL: nothing more to send
    }

    @Override
    void ended(final Status status, final Metadata trailers, final boolean discard, final boolean silent)
    {
        final boolean deliver;
        synchronized (this)
        {
            if (delivered || (end != null && !discard))
            {
                return;
            }
            end = status;
            endTrailers = trailers;
            endSilent = silent;
            deliver = takeDeliveryLocked();
        }
        if (deliver)
        {
            deliver();
        }
    }

    @Override
    int endLocked(final Status status, final Metadata trailers)
    {
        // what ended(status, trailers, false, false) does under the monitor
        if (delivered || end != null)
        {
            return END_TAKEN;
        }
        end = status;
        endTrailers = trailers;
        endSilent = false;
        return takeDeliveryLocked() ? END_DELIVER : END_TAKEN;
    }

    @Override
    void deliverEnd()
    {
        deliver();
    }

    /**
     * Guarded by this. The end is delivered once, by the thread that finds it deliverable here (the response counts
     * only with its OK status, and is delivered only when asked for): the decision and the state it reads are taken
     * under the monitor in the same step as the change that made it possible (demand, or the end), so no signal is
     * missed and none is given twice, without a work-in-progress counter.
     *
     * @return true if the caller delivers now ({@link #deliver}); nothing of the end changes any more.
     */
    private boolean takeDeliveryLocked()
    {
        if (delivered || end == null || (!endSilent && end.isOk() && !requested))
        {
            return false;
        }
        delivered = true;
        return true;
    }

    /** After {@link #takeDeliveryLocked} returned true: the end's fields are final from then on. */
    private void deliver()
    {
        Status status = end;
        final Metadata trailers = endTrailers;
        final boolean silent = endSilent;
        Resp value = null;
        if (status.isOk())
        {
            value = response;
            if (value == null)
            {
                status = Status.INTERNAL.withDescription("No value received for " + method.fullMethodName());
            }
        }
        response = null;
        if (value != null && !silent)
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
        terminate(status, trailers, silent);
    }
}
