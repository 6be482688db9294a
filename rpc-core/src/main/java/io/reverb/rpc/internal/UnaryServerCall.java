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
final class UnaryServerCall<Req, Resp> extends ServerCall<Req, Resp>
{
    private final ServerCallHandler.Unary<Req, Resp> unaryHandler;
    // guarded by this
    private boolean requestSeen;

    @SuppressWarnings("unchecked")
    UnaryServerCall(final ServerConnection connection, final ServerRuntime server, final int streamId,
        final ServiceDefinition.ServerMethodDefinition<?, ?> definition, final Metadata metadata, final long timeoutNanos,
        final int initialRequestN)
    {
        super(connection, server, streamId, definition, metadata, timeoutNanos, initialRequestN);
        this.unaryHandler = (ServerCallHandler.Unary<Req, Resp>)handler;
    }

    @Override
    void begin()
    {
        // the handler runs when the request arrives
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
        }
        if (second)
        {
            // the protocol allows one message for a unary call; the client broke it
            cancelCall(Status.INTERNAL.withDescription("Too many requests for a unary call"), null);
            return;
        }
        if (worker == null)
        {
            invoke(value);
        }
        else
        {
            execute(() -> invoke(value));
        }
    }

    private void invoke(final Req request)
    {
        if (endIfClosedOrExpired())
        {
            return;
        }
        final ServerCall<?, ?> previous = ServerCallScope.enter(this);
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
            ServerCallScope.exit(previous);
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
    }

    @Override
    void responsesEnded()
    {
    }
}
