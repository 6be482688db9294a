package io.reverb.rpc.internal;

import io.reverb.rpc.Metadata;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import org.reactivestreams.Publisher;

/**
 * A unary call on the server without interceptors: the handler is invoked with the request itself when it
 * arrives, no request {@code Flux} (fewer objects per call).
 *
 * @param <Req>  request type.
 * @param <Resp> response type.
 */
final class UnaryServerCall<Req, Resp> extends ReactorServerCall<Req, Resp>
{
    private final ServerCallHandler.Unary<Req, Resp> unaryHandler;
    // guarded by this
    private boolean requestSeen;
    // guarded by this: begin() ran; before it, the request (read in the same batch as the CALL) waits in heldRequest
    private boolean begun;
    private Req heldRequest;
    // MESSAGE frames seen, counted on the transport's thread: a unary call grants the client one
    private int messagesReceived;

    @SuppressWarnings("unchecked")
    UnaryServerCall(final ServerWireConnection connection, final ServerRuntime server, final int streamId,
        final ServiceDefinition.ServerMethodDefinition<?, ?> definition, final Metadata metadata, final long timeoutNanos,
        final int initialRequestN)
    {
        super(connection, server, streamId, definition, metadata, timeoutNanos, initialRequestN);
        this.unaryHandler = (ServerCallHandler.Unary<Req, Resp>)definition.handler();
    }

    @Override
    boolean takeCredit()
    {
        return ++messagesReceived <= 1;
    }

    @Override
    long creditGranted()
    {
        return 1;
    }

    @Override
    void begin()
    {
        // the handler runs when the request arrives, or now if it came before the start (the start was held back to
        // the end of the transport's read batch: see ServerWireConnection.onCall)
        final Req held;
        synchronized (this)
        {
            if (closed)
            {
                return; // ended before its start (e.g. its CANCEL came in the same read batch): no handler runs
            }
            begun = true;
            held = heldRequest;
            heldRequest = null;
        }
        if (held != null)
        {
            dispatch(held);
        }
    }

    @Override
    void onRequest(final Req value, final boolean endOfStream)
    {
        final boolean second;
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            second = requestSeen;
            requestSeen = true;
            if (!second && !begun)
            {
                heldRequest = value;
                return;
            }
        }
        if (second)
        {
            // the protocol allows one message for a unary call; the client broke it
            cancelCall(Status.INTERNAL.withDescription("Too many requests for a unary call"), null);
            return;
        }
        dispatch(value);
    }

    /** Runs the handler; the caller found the call open under the monitor just before, on this thread. */
    private void dispatch(final Req value)
    {
        if (worker == null)
        {
            // open a moment ago on this thread: only the deadline is checked again (another thread may still end
            // the call at any time; the end's frames then win, as they would a moment later)
            if (endIfExpired())
            {
                return;
            }
            invoke(value);
        }
        else
        {
            execute(() ->
            {
                if (!endIfClosedOrExpired()) // it waited for the executor: it may have ended meanwhile
                {
                    invoke(value);
                }
            });
        }
    }

    private void invoke(final Req request)
    {
        final ServerCallScope.Slot scope = ServerCallScope.enter();
        final ServerCall<?, ?> previous = scope.swap(this);
        try
        {
            final Publisher<Resp> response;
            try
            {
                response = unaryHandler.invoke(request);
            }
            catch (final Throwable t)
            {
                onError(t);
                return;
            }
            subscribeTo(response);
        }
        finally
        {
            scope.swap(previous);
        }
    }

    @Override
    void onHalfClose()
    {
        synchronized (this)
        {
            if (requestSeen || closed)
            {
                return;
            }
            requestSeen = true;
        }
        onError(Status.INTERNAL.withDescription("Half-closed without a request").asException());
    }

    @Override
    void requestsAborted()
    {
        final Req held;
        synchronized (this)
        {
            held = heldRequest;
            heldRequest = null;
        }
        if (held != null)
        {
            releaseSingleRequest(); // ended before its start: no handler saw the request, no response references it
        }
    }

    @Override
    void responsesEnded()
    {
    }
}
