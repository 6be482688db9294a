package io.reverb.rpc.internal;

import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.Status;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

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
    private static final AtomicIntegerFieldUpdater<UnaryClientCall> WIP =
        AtomicIntegerFieldUpdater.newUpdater(UnaryClientCall.class, "wip");

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
    private volatile int wip;

    UnaryClientCall(final ClientCallHost channel, final MethodDescriptor<Req, Resp> method, final Req request,
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
    void onCallSent(final ClientConnection conn, final int id)
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
        synchronized (this)
        {
            requested = true;
        }
        drain();
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
        synchronized (this)
        {
            if (delivered || (end != null && !discard))
            {
                return;
            }
            end = status;
            endTrailers = trailers;
            endSilent = silent;
        }
        drain();
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
            Resp value = null;
            Status status = null;
            Metadata trailers = null;
            boolean silent = false;
            synchronized (this)
            {
                // the response counts only with its OK status, and is delivered only when asked for
                if (!delivered && end != null && (endSilent || !end.isOk() || requested))
                {
                    delivered = true;
                    status = end;
                    trailers = endTrailers;
                    silent = endSilent;
                    if (status.isOk())
                    {
                        value = response;
                        if (value == null)
                        {
                            status = Status.INTERNAL.withDescription("No value received for " + method.fullMethodName());
                        }
                    }
                    response = null;
                }
            }
            if (status != null)
            {
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
                return;
            }
            missed = WIP.addAndGet(this, -missed);
            if (missed == 0)
            {
                return;
            }
        }
    }
}
