package io.reverb.rpc.internal;

import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.ServerInterceptor;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.wire.FrameType;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Operators;

/**
 * A call whose handler gets its requests as a {@code Flux} (streaming methods, and every method behind server
 * interceptors). The handler's demand on that Flux travels to the client as REQUEST_N, through an
 * {@link InboundQueue}; the client may send one message before it is asked.
 *
 * @param <Req>  request type.
 * @param <Resp> response type.
 */
final class StreamingServerCall<Req, Resp> extends ReactorServerCall<Req, Resp> implements Subscription
{
    private final ServerCallHandler<Req, Resp> handler;
    private final InboundQueue<Req> requests;
    /** The handler's subscriber to its requests: set once, under this; dropped when it cancels or the requests end. */
    private volatile CoreSubscriber<? super Req> requestSubscriber;
    /** Whether the requests were subscribed to (under this): they can be only once. */
    private boolean requestsSubscribed;
    // MESSAGE frames seen, counted on the transport's thread against the credit granted (see takeCredit)
    private long messagesReceived;
    /** See {@link ReactorServerCall#outbox()}: null for a method with one response. */
    private final Outbox out;

    StreamingServerCall(final ServerWireConnection connection, final ServerRuntime server, final int streamId,
        final ServiceDefinition.ServerMethodDefinition<?, ?> definition, final Metadata metadata, final long timeoutNanos,
        final int initialRequestN)
    {
        super(connection, server, streamId, definition, metadata, timeoutNanos, initialRequestN);
        @SuppressWarnings("unchecked")
        final ServerCallHandler<Req, Resp> h = (ServerCallHandler<Req, Resp>)definition.handler();
        this.handler = h;
        this.out = definition.method().type().serverSendsOneMessage() ? null : new Outbox();
        this.requests = new InboundQueue<>(new InboundQueue.Sink<>()
        {
            @Override
            public void onValue(final Req value)
            {
                // what a server-streaming handler answers inside this delivery leaves in few writes when it returns
                final CoreSubscriber<? super Req> subscriber = requestSubscriber;
                if (subscriber == null)
                {
                    return; // it cancelled while this value was on its way (rule 3.13: it is not held any more)
                }
                final boolean collecting = beginCollecting();
                try
                {
                    subscriber.onNext(value);
                }
                finally
                {
                    if (collecting)
                    {
                        endCollecting();
                    }
                }
            }

            @Override
            public void onEnd(final Status status, final Metadata trailers, final boolean silent)
            {
                final CoreSubscriber<? super Req> subscriber = requestSubscriber;
                if (subscriber == null)
                {
                    return; // it cancelled
                }
                requestSubscriber = null; // nothing follows the end: the subscriber is not held any longer
                final boolean collecting = beginCollecting();
                try
                {
                    if (status.isOk())
                    {
                        subscriber.onComplete();
                    }
                    else
                    {
                        subscriber.onError(status.asException());
                    }
                }
                finally
                {
                    if (collecting)
                    {
                        endCollecting();
                    }
                }
            }

            @Override
            public void onRejected(final RuntimeException rejected)
            {
                cancelCall(Status.UNAVAILABLE.withDescription("handler executor rejected the call"), null);
            }
        }, worker, 1, false);
        if (!method.type().clientSendsOneMessage())
        {
            requests.openGrants();
        }
    }

    @Override
    Outbox outbox()
    {
        return out;
    }

    @Override
    boolean takeCredit()
    {
        // the queue raises its grant before the REQUEST_N leaves: a client within its credit is never refused
        return ++messagesReceived <= requests.granted();
    }

    @Override
    long creditGranted()
    {
        return requests.granted();
    }

    @Override
    void begin()
    {
        execute(this::invokeHandler);
    }

    private void invokeHandler()
    {
        if (endIfClosedOrExpired())
        {
            return;
        }
        final ServerCallScope.Slot scope = ServerCallScope.enter();
        final ServerCall<?, ?> previous = scope.swap(this);
        try
        {
            final Publisher<Resp> responses;
            try
            {
                responses = intercepted().handle(new RequestFlux());
            }
            catch (final Throwable t)
            {
                onError(t);
                return;
            }
            subscribeTo(responses);
        }
        finally
        {
            scope.swap(previous);
        }
    }

    private ServerCallHandler<Req, Resp> intercepted()
    {
        ServerCallHandler<Req, Resp> next = handler;
        final ServerInterceptor[] interceptors = server.interceptors();
        final RpcContext rpcContext = interceptors.length > 0 ? context() : null;
        for (int i = interceptors.length - 1; i >= 0; i--)
        {
            final ServerInterceptor interceptor = interceptors[i];
            final ServerCallHandler<Req, Resp> inner = next;
            next = requests -> interceptor.interceptCall(rpcContext, requests, inner);
        }
        return next;
    }

    @Override
    void onRequest(final Req value, final boolean endOfStream)
    {
        requests.offer(value);
        if (endOfStream)
        {
            requests.end(Status.OK, null, false, false);
        }
    }

    @Override
    void onHalfClose()
    {
        requests.end(Status.OK, null, false, false);
    }

    @Override
    void requestsAborted()
    {
        requests.end(Status.CANCELLED.withDescription("call cancelled"), null, true, false);
    }

    @Override
    void responsesEnded()
    {
        requests.closeInput();
    }

    // ------------------------------------------------------------ requests Flux given to the handler

    private final class RequestFlux extends Flux<Req>
    {
        @Override
        public void subscribe(final CoreSubscriber<? super Req> actual)
        {
            synchronized (StreamingServerCall.this)
            {
                if (requestsSubscribed)
                {
                    Operators.error(actual, new IllegalStateException("the request stream can be subscribed only once"));
                    return;
                }
                requestsSubscribed = true;
                requestSubscriber = actual;
            }
            actual.onSubscribe(StreamingServerCall.this);
            requests.ready();
        }
    }

    @Override
    public void request(final long n)
    {
        if (n <= 0)
        {
            return;
        }
        final long delta = requests.request(n);
        if (delta > 0)
        {
            connection.write(new OutboundFrame.Control(FrameType.REQUEST_N, 0, streamId, toWire(delta)));
        }
    }

    @Override
    public void cancel()
    {
        requestSubscriber = null; // rule 3.13: a cancelled subscriber is not held while the call goes on
        requests.stop();
    }
}
