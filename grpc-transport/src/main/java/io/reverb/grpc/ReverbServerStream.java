package io.reverb.grpc;

import io.grpc.Attributes;
import io.grpc.Compressor;
import io.grpc.Decompressor;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.internal.ServerStream;
import io.grpc.internal.ServerStreamListener;
import io.grpc.internal.StatsTraceContext;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcException;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.util.context.Context;

import java.io.InputStream;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The server side of one call over Reverb, seen by grpc-java's server as a stream: the client's messages come from
 * rpc-core's request Flux (demand travels back as REQUEST_N), the messages grpc-java writes are the handler's
 * response publisher ({@link OutboundMessages}), response headers and trailers go into the call's
 * {@link RpcContext}, and the status ends the publisher.
 */
final class ReverbServerStream implements ServerStream, CoreSubscriber<Payload>, OutboundMessages.Events
{
    private static final AtomicInteger IDS = new AtomicInteger();

    private final RpcContext context;
    private final StatsTraceContext statsTraceContext;
    private final Attributes attributes;
    private Context reactorContext;
    private final OutboundMessages responses = new OutboundMessages(this);
    private final CallbackSerializer serializer = new CallbackSerializer();
    private final int id = IDS.incrementAndGet();
    private ServerStreamListener listener;
    private volatile Subscription requests;
    private long pendingRequests;
    private boolean closedListener;
    private volatile boolean closeCalled;

    ReverbServerStream(
        final ReverbServerTransport transport, final RpcContext context, final StatsTraceContext statsTraceContext)
    {
        this.context = context;
        this.statsTraceContext = statsTraceContext;
        this.attributes = transport.attributesFor(context.peer());
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
    public void request(final int numMessages)
    {
        final Subscription s;
        synchronized (this)
        {
            s = requests;
            if (s == null)
            {
                pendingRequests += numMessages;
                return;
            }
        }
        s.request(numMessages);
    }

    @Override
    public void writeHeaders(final Metadata headers, final boolean flush)
    {
        final io.reverb.rpc.Metadata converted = GrpcBridge.toReverb(headers);
        if (!converted.isEmpty())
        {
            context.responseHeaders().merge(converted);
        }
    }

    @Override
    public void writeMessage(final InputStream message)
    {
        final Payload payload = Payload.outbound(message);
        statsTraceContext.outboundMessage(0);
        statsTraceContext.outboundWireSize(payload.length());
        statsTraceContext.outboundUncompressedSize(payload.length());
        responses.offer(payload);
    }

    @Override
    public void flush()
    {
    }

    @Override
    public boolean isReady()
    {
        return responses.isReady();
    }

    @Override
    public void close(final Status status, final Metadata trailers)
    {
        closeCalled = true;
        final io.reverb.rpc.Metadata converted = GrpcBridge.toReverb(trailers);
        if (status.isOk())
        {
            if (!converted.isEmpty())
            {
                context.responseTrailers().merge(converted);
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
        // grpc-java's server gave up on the call (deadline): the client gets the status
        closeCalled = true;
        responses.fail(new RpcException(GrpcBridge.toReverb(status)));
        cancelRequests();
        closeListener(status);
    }

    @Override
    public void setDecompressor(final Decompressor decompressor)
    {
    }

    @Override
    public void setCompressor(final Compressor compressor)
    {
    }

    @Override
    public void setMessageCompression(final boolean enable)
    {
    }

    @Override
    public void optimizeForDirectExecutor()
    {
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
            reactorContext = c = Context.of(RpcContext.CONTEXT_KEY, context);
        }
        return c;
    }

    @Override
    public void onSubscribe(final Subscription s)
    {
        final long pending;
        synchronized (this)
        {
            requests = s;
            pending = pendingRequests;
            pendingRequests = 0;
        }
        if (pending > 0)
        {
            s.request(pending);
        }
    }

    @Override
    public void onNext(final Payload payload)
    {
        statsTraceContext.inboundMessage(0);
        statsTraceContext.inboundWireSize(payload.length());
        statsTraceContext.inboundUncompressedSize(payload.length());
        serializer.execute(() ->
        {
            if (closedListener)
            {
                return;
            }
            final InputStream[] next = {payload.stream()};
            listener.messagesAvailable(() ->
            {
                final InputStream m = next[0];
                next[0] = null;
                return m;
            });
        });
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
        serializer.execute(() ->
        {
            if (!closedListener)
            {
                listener.halfClosed();
            }
        });
    }

    // ---------------------------------------------------------------- rpc-core's demand for responses

    @Override
    public void onDemand()
    {
        serializer.execute(() ->
        {
            if (!closedListener)
            {
                listener.onReady();
            }
        });
    }

    @Override
    public void onCancel()
    {
        // the client cancelled, its deadline passed, or the server is shutting down
        cancelRequests();
        closeListener(closeCalled ? Status.OK : Status.CANCELLED.withDescription("call cancelled by the client"));
    }

    @Override
    public void onTerminated()
    {
        // the status went to rpc-core, which sends it: the stream is done
        cancelRequests();
        closeListener(Status.OK);
    }

    private void cancelRequests()
    {
        final Subscription s = requests;
        if (s != null)
        {
            s.cancel();
        }
    }

    private void closeListener(final Status status)
    {
        serializer.execute(() ->
        {
            if (closedListener)
            {
                return;
            }
            closedListener = true;
            statsTraceContext.streamClosed(status);
            listener.closed(status);
        });
    }
}
