package io.reverb.grpc;

import io.grpc.Attributes;
import io.grpc.Compressor;
import io.grpc.Decompressor;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.internal.ServerStream;
import io.grpc.internal.ServerStreamListener;
import io.grpc.internal.StatsTraceContext;
import io.grpc.internal.StreamListener;
import io.reverb.rpc.compression.Codec;

import java.io.InputStream;

/**
 * The server side of one call over Reverb, seen by grpc-java's server as a stream: directly on the call's Reverb
 * stream of the stream-level SPI ({@link io.reverb.rpc.transport.stream.ServerStream}), one state machine under
 * grpc-java's own and no Reactor. grpc-java's requests, writes, flushes, close and cancel go to the Reverb stream
 * (whose held response travels with the status: grpc-java flushes every response but a one-response method's); the
 * Reverb stream's callbacks, which never run concurrently, go to grpc-java's listener as they come.
 */
// CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's and Reverb's stream types share their names
final class ReverbServerStream implements ServerStream,
    io.reverb.rpc.transport.stream.ServerStreamListener<InputStream>, StreamListener.MessageProducer
{
    private final io.reverb.rpc.transport.stream.ServerStream<InputStream> call;
    private final Attributes attributes;
    private final StatsTraceContext statsTraceContext;
    private final String authority;
    /** grpc-java's listener: set in streamCreated, before the Reverb stream reports anything. */
    private ServerStreamListener listener;
    /** The codec grpc-java set, or null for identity. */
    private Codec compressor;
    private boolean messageCompression = true;
    /**
     * The first request, until grpc-java's listener takes it: this stream is its producer (most calls have one
     * request, which then costs no object of its own); later ones get one each ({@link Delivery}).
     */
    private InputStream firstRequest;
    /** The sequence number the tracers get for the next response written (grpc-java's framer counts from 0). */
    private int outboundSeqNo;
    /** The sequence number the tracers get for the next request received, in the Reverb call's callbacks. */
    private int inboundSeqNo;
    /**
     * The status grpc-java's server closed the call with, for the tracers at the end (as its own server streams report
     * it: the listener hears OK, the tracers how the call ended). Written by close, read by closed after it.
     */
    private volatile Status closedWith;
    private boolean firstDelivered;

    /**
     * @param call              the Reverb stream.
     * @param attributes        its transport's (one Reverb connection's) stream attributes.
     * @param statsTraceContext the stream's tracers.
     * @param authority         the call's authority: the client's, else the server's (see {@link ReverbServer}).
     */
    ReverbServerStream(final io.reverb.rpc.transport.stream.ServerStream<InputStream> call,
        final Attributes attributes, final StatsTraceContext statsTraceContext, final String authority)
    {
        this.call = call;
        this.attributes = attributes;
        this.statsTraceContext = statsTraceContext;
        this.authority = authority;
    }

    // ---------------------------------------------------------------- grpc-java -> Reverb

    @Override
    public void setListener(final ServerStreamListener serverListener)
    {
        this.listener = serverListener;
    }

    @Override
    public void request(final int numMessages)
    {
        if (numMessages > 0)
        {
            call.request(numMessages);
        }
    }

    @Override
    public void writeHeaders(final Metadata headers, final boolean flush)
    {
        final io.reverb.rpc.Metadata converted = GrpcBridge.toReverb(headers);
        if (converted == null)
        {
            return; // none of the application's: they go with the first response or the status (no frame of their own)
        }
        if (flush)
        {
            // a streaming method's headers leave now, as over Netty: its client may wait for them before it sends
            call.sendHeaders(converted);
        }
        else
        {
            call.writeHeaders(converted);
        }
    }

    @Override
    public void writeMessage(final InputStream message)
    {
        final InputStream payload = Payload.outbound(message); // protobuf's stream itself: no object of its own
        final int length = Payload.lengthOf(payload);
        final int seqNo = outboundSeqNo++; // grpc-java writes a call's messages one at a time
        statsTraceContext.outboundMessage(seqNo);
        statsTraceContext.outboundUncompressedSize(length);
        statsTraceContext.outboundWireSize(length);
        statsTraceContext.outboundMessageSent(seqNo, length, length);
        call.writeMessage(payload);
    }

    @Override
    public void flush()
    {
        call.flush();
    }

    @Override
    public boolean isReady()
    {
        return call.isReady();
    }

    @Override
    public void close(final Status status, final Metadata trailers)
    {
        closedWith = status;
        call.close(GrpcBridge.toReverb(status), GrpcBridge.toReverb(trailers));
    }

    @Override
    public void cancel(final Status status)
    {
        // grpc-java's server gave up on the call (its deadline): the client gets the status, the listener is closed
        // with it (not OK: grpc-java tells the handler onCancel)
        call.cancel(GrpcBridge.toReverb(status.isOk() ? Status.CANCELLED.withDescription("stream cancelled") : status));
    }

    @Override
    public void optimizeForDirectExecutor()
    {
    }

    /**
     * grpc-java's codec for the responses (identity unless the call asked for compression): rpc-core compresses them
     * into its MESSAGE frames with it (the COMPRESSED flag), once.
     */
    @Override
    public void setCompressor(final Compressor grpcCompressor)
    {
        this.compressor = GrpcCodecs.of(grpcCompressor);
        compressionChanged();
    }

    /** grpc-java's per-message switch: rpc-core compresses a call's responses alike, from now on. */
    @Override
    public void setMessageCompression(final boolean enable)
    {
        this.messageCompression = enable;
        compressionChanged();
    }

    private void compressionChanged()
    {
        call.setCompression(messageCompression ? compressor : null);
    }

    @Override
    public void setDecompressor(final Decompressor decompressor)
    {
        // rpc-core decompressed the requests already (the server's codec registry, see ReverbServerBuilder)
    }

    @Override
    public Attributes getAttributes()
    {
        return attributes;
    }

    @Override
    public String getAuthority()
    {
        return authority;
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
        return call.streamId(); // the id on the wire, per connection (as Netty's HTTP/2 stream ids)
    }

    @Override
    public void setOnReadyThreshold(final int numBytes)
    {
    }

    // ---------------------------------------------------------------- Reverb -> grpc-java

    @Override
    public void messageRead(final InputStream message)
    {
        final int length = Payload.lengthOf(message);
        final int seqNo = inboundSeqNo++;
        statsTraceContext.inboundMessage(seqNo);
        statsTraceContext.inboundWireSize(length);
        statsTraceContext.inboundUncompressedSize(length);
        statsTraceContext.inboundMessageRead(seqNo, length, length);
        if (!firstDelivered)
        {
            firstDelivered = true;
            firstRequest = message;
            listener.messagesAvailable(this);
        }
        else
        {
            // grpc-java's server may take a message later, on its executor: each has a producer of its own
            listener.messagesAvailable(new Delivery(message));
        }
    }

    @Override
    public void halfClosed()
    {
        listener.halfClosed();
    }

    @Override
    public void onReady()
    {
        listener.onReady();
    }

    @Override
    public void closed(final io.reverb.rpc.Status status)
    {
        final Status grpcStatus = status.isOk() ? Status.OK : GrpcBridge.toGrpc(status);
        final Status sent = closedWith;
        statsTraceContext.streamClosed(status.isOk() && sent != null ? sent : grpcStatus);
        listener.closed(grpcStatus);
    }

    /** The first request's producer: gives it once. */
    @Override
    public InputStream next()
    {
        final InputStream m = firstRequest;
        firstRequest = null;
        return m;
    }

    /** A later request's producer: gives it once. */
    private static final class Delivery implements StreamListener.MessageProducer
    {
        private InputStream message;

        Delivery(final InputStream message)
        {
            this.message = message;
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
// CHECKSTYLE.ON: InlineFullyQualifiedName
