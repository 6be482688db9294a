package io.reverb.grpc;

import io.grpc.Compressor;
import io.grpc.internal.StatsTraceContext;
import io.grpc.internal.Stream;
import io.grpc.internal.StreamListener;
import io.reverb.rpc.compression.Codec;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;

import java.io.InputStream;

/**
 * The server side's grpc-java stream over a Reverb server call ({@link ReverbServerStream} adds how the call starts
 * and ends): the inbound messages are a Reactive Streams subscription whose demand is grpc-java's {@code request(n)}
 * (asked for before the subscription exists too), each goes to grpc-java's listener on the stream's
 * {@link CallbackSerializer}, a rise of outbound demand is the listener's {@code onReady()}, and outbound messages are
 * counted in the stream's stats. The client side ({@link ReverbClientStream}) no longer shares it: it runs directly
 * on a Reverb stream of the stream SPI, without Reactor; the server side moves there once the SPI has its server half.
 *
 * @param <L> grpc-java's listener of this side.
 */
abstract class ReverbStream<L extends StreamListener> extends CallbackSerializer
    implements Stream, CoreSubscriber<InputStream>, OutboundMessages.Events
{
    final StatsTraceContext statsTraceContext;
    /** grpc-java's listener: set when the stream starts, before any message arrives. */
    L listener;
    /** The inbound messages: the client's responses, the server's requests. */
    private volatile Subscription inbound;
    /** Demand grpc-java asked for before {@link #inbound} arrived; guarded by this. */
    private long pendingRequests;
    /** The codec grpc-java set, or null for identity. */
    private volatile Codec compressor;
    private volatile boolean messageCompression = true;
    /** The listener was closed: it gets no callback any more. Written on the serializer only. */
    private volatile boolean closed;

    ReverbStream(final StatsTraceContext statsTraceContext)
    {
        this.statsTraceContext = statsTraceContext;
    }

    // ---------------------------------------------------------------- grpc-java -> Reverb

    @Override
    public void request(final int numMessages)
    {
        final Subscription s;
        synchronized (this)
        {
            s = inbound;
            if (s == null)
            {
                pendingRequests += numMessages;
                return;
            }
        }
        s.request(numMessages);
    }

    @Override
    public void flush()
    {
        // each committed claim is sent at once
    }

    @Override
    public void optimizeForDirectExecutor()
    {
    }

    /**
     * grpc-java's codec for this stream's outbound messages (identity unless the call or the server call asked for
     * compression): the messages go to rpc-core uncompressed and rpc-core compresses them into its MESSAGE frames
     * with it (the COMPRESSED flag), once.
     */
    @Override
    public void setCompressor(final Compressor compressor)
    {
        this.compressor = GrpcCodecs.of(compressor);
        compressionChanged();
    }

    /**
     * grpc-java's per-message switch: rpc-core compresses a call's messages alike, so it applies to the messages that
     * follow (on the client: only before the call starts).
     */
    @Override
    public void setMessageCompression(final boolean enable)
    {
        this.messageCompression = enable;
        compressionChanged();
    }

    /**
     * @return the codec the outbound messages are compressed with, or null for none.
     */
    final Codec outboundCodec()
    {
        return messageCompression ? compressor : null;
    }

    /**
     * The codec or the switch changed.
     */
    void compressionChanged()
    {
    }

    /**
     * @param message what grpc-java writes.
     * @return it as the payload to send, counted in the stream's stats.
     */
    final InputStream outbound(final InputStream message)
    {
        final InputStream payload = Payload.outbound(message); // protobuf's stream itself: no object of its own
        final int length = Payload.lengthOf(payload);
        statsTraceContext.outboundMessage(0);
        statsTraceContext.outboundWireSize(length);
        statsTraceContext.outboundUncompressedSize(length);
        return payload;
    }

    // ---------------------------------------------------------------- Reverb -> grpc-java (inbound messages)

    @Override
    public final void onSubscribe(final Subscription s)
    {
        final long pending;
        synchronized (this)
        {
            inbound = s;
            pending = pendingRequests;
            pendingRequests = 0;
        }
        if (refusesInbound())
        {
            s.cancel();
            return;
        }
        if (pending > 0)
        {
            s.request(pending);
        }
    }

    @Override
    public void onNext(final InputStream payload)
    {
        deliver(payload);
    }

    /**
     * Counts an inbound message in the stream's stats and gives it to the listener on the serializer.
     *
     * @param payload the message.
     */
    final void deliver(final InputStream payload)
    {
        countInbound(payload);
        execute(new Delivery(payload));
    }

    /**
     * Counts an inbound message in the stream's stats.
     *
     * @param payload the message.
     */
    final void countInbound(final InputStream payload)
    {
        final int length = Payload.lengthOf(payload);
        statsTraceContext.inboundMessage(0);
        statsTraceContext.inboundWireSize(length);
        statsTraceContext.inboundUncompressedSize(length);
    }

    // ---------------------------------------------------------------- rpc-core's demand for outbound messages

    @Override
    public void onDemand()
    {
        execute(() ->
        {
            if (!closed)
            {
                listener.onReady();
            }
        });
    }

    // ---------------------------------------------------------------- for the two sides

    /**
     * @return whether the inbound messages, subscribed to just now, are cancelled at once instead of requested.
     */
    boolean refusesInbound()
    {
        return false;
    }

    /**
     * On the serializer, before each inbound message goes to the listener.
     */
    void beforeMessage()
    {
    }

    /**
     * @return whether the listener was closed.
     */
    final boolean isClosed()
    {
        return closed;
    }

    /**
     * On the serializer: marks the listener closed.
     *
     * @return false if it already was (then the caller does not close it again).
     */
    final boolean markClosed()
    {
        if (closed)
        {
            return false;
        }
        closed = true;
        return true;
    }

    /**
     * Cancels the inbound messages, if subscribed to.
     */
    final void cancelInbound()
    {
        final Subscription s = inbound;
        if (s != null)
        {
            s.cancel();
        }
    }

    /**
     * One inbound message on its way to the listener: the serializer's task and grpc-java's message producer in one
     * object (the producer gives the message once).
     */
    private final class Delivery implements Runnable, StreamListener.MessageProducer
    {
        private InputStream message;

        Delivery(final InputStream payload)
        {
            this.message = payload;
        }

        @Override
        public void run()
        {
            if (closed)
            {
                return;
            }
            beforeMessage();
            listener.messagesAvailable(this);
        }

        @Override
        public InputStream next()
        {
            final InputStream m = message;
            message = null;
            return m;
        }
    }
}
