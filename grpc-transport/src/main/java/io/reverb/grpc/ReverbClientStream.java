package io.reverb.grpc;

import io.grpc.Attributes;
import io.grpc.ClientStreamTracer;
import io.grpc.Compressor;
import io.grpc.Deadline;
import io.grpc.DecompressorRegistry;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.internal.ClientStream;
import io.grpc.internal.ClientStreamListener;
import io.grpc.internal.InsightBuilder;
import io.grpc.internal.StreamListener;
import io.grpc.stub.InternalClientCalls;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.compression.Codec;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Locale;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The client side of one grpc-java call over Reverb, directly on a Reverb stream of the stream SPI
 * ({@link io.reverb.rpc.transport.stream.ClientTransport#newStream}): what grpc-java writes goes to the Reverb stream
 * (a unary call's one message leaves with the CALL frame at {@code halfClose}), and what the server sends comes back
 * through the Reverb stream's listener (this object) to grpc-java's listener, one callback at a time on this stream's
 * {@link CallbackSerializer}. One call state machine (the Reverb stream's) under grpc-java's own, and no Reactor. A
 * unary response and its status arrive in one transport message and reach grpc-java's listener in one task; a
 * blocking stub's call (grpc-java's public stub-type option says so) gets that task on its waiting thread.
 *
 * <p>Frames on the wire are Reverb's (CALL, MESSAGE, HALF_CLOSE, REQUEST_N, CANCEL / HEADERS, MESSAGE, STATUS), so the
 * server may be a grpc-java server over Reverb or a native Reverb server.
 *
 * <p>Flow control, streaming responses: grpc-java's {@code request(n)} says how many messages its listener takes
 * ({@link #request}), not how many the server may send. grpc-java's stubs ask for one message at a time, and passed
 * on as REQUEST_N each would make a response stream a round trip per message (grpc-java over Netty has HTTP/2's byte
 * window instead: the server sends ahead). So this stream asks the server for a window of messages ahead of its
 * listener, up to {@link #WINDOW_BYTES} of the largest message seen so far and at most {@link #MAX_WINDOW_MESSAGES}
 * (none before the first message: its size is unknown), topped up once half of it arrived; what arrived ahead waits
 * here until grpc-java asks for it. A server's status waits behind those messages; an end decided here (cancel,
 * deadline, connection lost) drops them, as on grpc-java's own transports.
 */
// CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's stream types are imported, Reverb's are spelled out
final class ReverbClientStream extends CallbackSerializer
    implements ClientStream, io.reverb.rpc.transport.stream.ClientStreamListener, Runnable,
    StreamListener.MessageProducer
// CHECKSTYLE.ON: InlineFullyQualifiedName
{
    private final ReverbClientTransport transport;
    private final MethodDescriptor<InputStream, InputStream> method;
    private final Metadata headers;
    /** grpc-java's tracers of this stream, called here directly (as its StatsTraceContext would, without the object). */
    private final ClientStreamTracer[] tracers;
    /** A unary method: its response is held until its status, and both go to the listener in one task. */
    private final boolean unary;
    /**
     * A unary call's response, from its MESSAGE until its STATUS (the next frame of the same transport message), then
     * with the end ({@link #closed}; dropped there unless the status is OK) until grpc-java's listener takes it
     * ({@link #next}) or the end is delivered without it. Written and read in the Reverb stream's callbacks, which
     * never overlap, then by the end's task (the hand-over of which publishes it).
     */
    private volatile Payload heldResponse;
    /**
     * The executor of a blocking stub waiting for this unary call, or null: the call's end (response, status) is given
     * to it as one task, so that grpc-java's callbacks run on the waiting thread and wake it once per call.
     */
    private final Executor waitingCaller;
    /**
     * {@link #cancel} was called: the end goes to the listener from here, never to {@link #waitingCaller}, and it is the
     * cancel's ({@link #cancelReason}): nothing that comes after the cancel reaches the listener, as grpc-java's own
     * transports stop delivery when a call is cancelled (a message, or a server's OK that came first but waited).
     */
    private volatile boolean cancelling;
    /** Why the call was cancelled; written before {@link #cancelling}. */
    private volatile Status cancelReason;
    private Deadline deadline;
    /** The call's own authority ({@link #setAuthority}), or null for the channel's. */
    private String authority;
    /** The codec grpc-java set, or null for identity. */
    private Codec compressor;
    private boolean messageCompression = true;
    /** grpc-java's listener: set by {@link #start}, before the Reverb stream exists. */
    private volatile ClientStreamListener listener;
    /** CallOptions' maxOutboundMessageSize, or -1 for none. */
    private int maxOutboundMessageSize = -1;
    /** The sequence number the tracers get for the next message written (grpc-java's framer counts from 0). */
    private int outboundSeqNo;
    /** The sequence number the tracers get for the next message received; counted in the Reverb stream's callbacks. */
    private int inboundSeqNo;
    /**
     * CallOptions' maxInboundMessageSize, or -1 for none: checked per response here, below the channel's limit, which
     * the connection enforces (a larger per-call value cannot raise it: the connection refuses before this call sees it).
     */
    private int maxInboundMessageSize = -1;
    /** The Reverb stream: set by {@link #start} (grpc-java calls the other methods after it, on its threads). */
    // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's ClientStream is imported, Reverb's is spelled out
    private volatile io.reverb.rpc.transport.stream.ClientStream<InputStream> stream;
    // CHECKSTYLE.ON: InlineFullyQualifiedName
    /** The listener was closed: it gets no callback any more. Read and written on the serializer only. */
    private boolean closed;
    /** Headers went to the listener (the server's, or empty ones before a message that came without). Serializer. */
    private boolean headersDelivered;
    /**
     * The stream's end, from {@link #closed} until it reaches the listener: this stream is then the task that delivers
     * it ({@link #run}), handed to the waiting caller and then to the serializer, so that the end costs no objects of
     * its own. {@link #endStage} says where the task is; the fields are written before it is handed over and read
     * after, on the thread the hand-over makes them visible to.
     */
    private Status endStatus;
    private Metadata endTrailers;
    private ClientStreamListener.RpcProgress endProgress;
    /** The end is the server's status (messages that arrived before it are still delivered); written before hand-over. */
    private boolean endFromServer;
    /** {@link #END_AT_CALLER}: the task runs next on the waiting caller; {@link #END_ON_SERIALIZER}: on the serializer. */
    private int endStage;
    private static final int END_AT_CALLER = 1;
    private static final int END_ON_SERIALIZER = 2;
    /** Bytes of responses the server may send ahead of grpc-java's requests (HTTP/2's default window in grpc-java). */
    static final int WINDOW_BYTES = 1024 * 1024;
    /** The most responses the server may send ahead of grpc-java's requests. */
    static final int MAX_WINDOW_MESSAGES = 64;
    /** A streaming call's flow control toward the server (see the class comment); null for a unary call. */
    private final ResponseWindow window;
    /** The transport's list of open streams (guarded by the transport): linked in, and the neighbours. */
    boolean isLive;
    ReverbClientStream previousLive;
    ReverbClientStream nextLive;

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - Reverb's CallOptions is imported, grpc-java's is spelled out
    ReverbClientStream(
        final ReverbClientTransport transport, final MethodDescriptor<InputStream, InputStream> method, final Metadata headers,
        final io.grpc.CallOptions callOptions, final ClientStreamTracer[] tracers)
    // CHECKSTYLE.ON: InlineFullyQualifiedName
    {
        this.transport = transport;
        this.method = method;
        this.headers = headers;
        this.tracers = tracers;
        this.deadline = callOptions.getDeadline();
        this.unary = method.type() == MethodDescriptor.MethodType.UNARY;
        this.waitingCaller = unary ? waitingCaller(callOptions) : null;
        this.window = unary ? null : new ResponseWindow();
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's CallOptions (see the constructor)
    /**
     * @param callOptions a grpc-java call's options.
     * @return the executor a blocking stub waits in for this call (grpc-java marks its blocking stubs' calls with their
     * stub type, {@link InternalClientCalls}, and runs their callbacks in the call's executor, drained by the waiting
     * thread), or null for any other call.
     */
    static Executor waitingCaller(final io.grpc.CallOptions callOptions)
    {
        final Object stubType = callOptions.getOption(InternalClientCalls.getStubTypeOption());
        if (stubType == null)
        {
            return null;
        }
        final boolean blocking;
        if (stubType instanceof Enum)
        {
            // InternalClientCalls.getStubType maps the option by a search that copies its enum's values (32 bytes per
            // call): the answer is kept per constant of the option's own enum instead (a benign race: any thread
            // writes the same answer)
            final int ordinal = ((Enum<?>)stubType).ordinal();
            final byte[] known = STUB_TYPES_BLOCKING;
            byte answer = ordinal < known.length ? known[ordinal] : 0;
            if (answer == 0)
            {
                answer = InternalClientCalls.getStubType(callOptions) == InternalClientCalls.StubType.BLOCKING ?
                    STUB_TYPE_BLOCKING : STUB_TYPE_OTHER;
                if (ordinal < known.length)
                {
                    known[ordinal] = answer;
                }
            }
            blocking = answer == STUB_TYPE_BLOCKING;
        }
        else
        {
            blocking = InternalClientCalls.getStubType(callOptions) == InternalClientCalls.StubType.BLOCKING;
        }
        return blocking ? callOptions.getExecutor() : null;
    }

    /** By ordinal of grpc-java's stub type option: 0 not seen yet, else whether that stub type is the blocking one. */
    private static final byte[] STUB_TYPES_BLOCKING = new byte[16];
    private static final byte STUB_TYPE_BLOCKING = 1;
    private static final byte STUB_TYPE_OTHER = 2;
    // CHECKSTYLE.ON: InlineFullyQualifiedName

    @Override
    public void start(final ClientStreamListener listener)
    {
        this.listener = listener;
        if (cancelling)
        {
            // cancelled between newStream and start (the transport's shutdownNow): closed now, nothing sent
            close(cancelReason, new Metadata(), ClientStreamListener.RpcProgress.PROCESSED);
            return;
        }
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's Metadata and Deadline are imported, Reverb's are spelled out
        final io.reverb.rpc.Metadata metadata = GrpcBridge.requestHeaders(headers);
        // grpc-java's own headers (accept-encoding...) are dropped: most calls then carry none of their own, and share
        // the transport's (user-agent; the authority where the server cannot tell it)
        CallOptions options = transport.callOptions(metadata, authority);
        if (deadline != null)
        {
            // grpc-java computed the call's deadline (its ClientCallImpl); the Reverb stream only carries and keeps it
            options = options.withDeadline(io.reverb.rpc.Deadline.after(
                Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)), TimeUnit.NANOSECONDS,
                io.reverb.rpc.Deadline.Ticker.SYSTEM));
        }
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        final Codec codec = messageCompression ? compressor : null;
        if (codec != null)
        {
            options = options.withCompression(codec); // grpc-java's CallOptions.withCompression, as Reverb's flag
        }
        for (final ClientStreamTracer tracer : tracers)
        {
            tracer.outboundHeaders();
        }
        // may close this stream at once (no connection takes calls): the close goes through the serializer as any
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's ClientStream is imported, Reverb's is spelled out
        final io.reverb.rpc.transport.stream.ClientStream<InputStream> started =
            transport.streams().newStream(method, options, this);
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        stream = started;
        if (cancelling)
        {
            started.cancel(GrpcBridge.toReverb(cancelReason)); // a cancel that came while the stream was being made
            return;
        }
        if (!unary && started.isReady())
        {
            // as grpc-java's transports once the stream exists (Netty: allocated): a client that writes only from
            // onReady (grpc-java's manual flow control examples) starts; the Reverb stream reports later changes
            onReady();
        }
    }

    // ---------------------------------------------------------------- grpc-java -> Reverb

    @Override
    public void request(final int numMessages)
    {
        if (unary)
        {
            stream.request(numMessages); // one response, which comes with its status
            return;
        }
        if (numMessages <= 0)
        {
            throw new IllegalArgumentException("request(" + numMessages + "): must be positive");
        }
        window.add(numMessages);
        execute(window); // delivers what waits, as far as asked, then tops the window up
    }

    @Override
    public void writeMessage(final InputStream message)
    {
        final InputStream payload = Payload.outbound(message); // protobuf's stream itself: no object of its own
        final int length = Payload.lengthOf(payload);
        final int max = maxOutboundMessageSize;
        if (max >= 0 && length > max)
        {
            // grpc-java's framer refuses it with this status, and its ClientCallImpl cancels the call with CANCELLED
            // "Failed to stream message" caused by it. Thrown, it would be lost when grpc-java's DelayedStream replays
            // the write (a call made before the transport was ready): the call is cancelled here with that status
            cancel(Status.CANCELLED.withDescription("Failed to stream message").withCause(
                Status.RESOURCE_EXHAUSTED.withDescription(String.format(Locale.US, "message too large %d > %d", length,
                    max)).asRuntimeException()));
            return;
        }
        final int seqNo = outboundSeqNo++;
        for (final ClientStreamTracer tracer : tracers)
        {
            // the events and their order of grpc-java's framer
            tracer.outboundMessage(seqNo);
            tracer.outboundUncompressedSize(length);
            tracer.outboundWireSize(length);
            tracer.outboundMessageSent(seqNo, length, length);
        }
        stream.writeMessage(payload);
    }

    @Override
    public void flush()
    {
        // each frame is written when it is handed over
    }

    @Override
    public boolean isReady()
    {
        return stream != null && stream.isReady(); // set once, by start
    }

    @Override
    public void optimizeForDirectExecutor()
    {
    }

    @Override
    public void halfClose()
    {
        stream.halfClose();
    }

    @Override
    public void cancel(final Status reason)
    {
        cancelReason = reason;
        cancelling = true;
        if (stream != null) // set once, by start
        {
            stream.cancel(GrpcBridge.toReverb(reason)); // closes this stream's listener through closed(...)
            if (!unary)
            {
                // the server's status may have come already and wait behind messages grpc-java did not ask for: the
                // cancel ends the call now, and they are dropped (as grpc-java's own transports stop delivery)
                execute(() ->
                {
                    if (window.dropAhead())
                    {
                        closeNow(reason, new Metadata(), ClientStreamListener.RpcProgress.PROCESSED);
                    }
                });
            }
        }
        else if (listener != null)
        {
            // start is making the Reverb stream now: it cancels it when made; the listener is closed here
            close(reason, new Metadata(), ClientStreamListener.RpcProgress.PROCESSED);
        }
        else
        {
            // not started (grpc-java's listener does not exist yet; start closes it, if it comes): off the transport's
            // list now, as a closed stream, so that the transport's termination does not wait for a start that may
            // never come (grpc-java cancels a stream it made but will not start)
            transport.streamClosed(this);
        }
    }

    /**
     * grpc-java's codec for this call's messages (identity unless the call asked for compression): Reverb compresses
     * them into its MESSAGE frames with it (the COMPRESSED flag), once. Set before {@link #start}.
     */
    @Override
    public void setCompressor(final Compressor compressor)
    {
        this.compressor = GrpcCodecs.of(compressor);
    }

    @Override
    public void setMessageCompression(final boolean enable)
    {
        this.messageCompression = enable;
    }

    @Override
    public void setDeadline(final Deadline deadline)
    {
        this.deadline = deadline;
    }

    @Override
    public Attributes getAttributes()
    {
        return transport.getAttributes();
    }

    @Override
    public void appendTimeoutInsight(final InsightBuilder insight)
    {
        insight.appendKeyValue("remote_addr", transport.address());
    }

    /** grpc-java's {@code CallOptions.withAuthority}, set before {@link #start}: sent for the server's call. */
    @Override
    public void setAuthority(final String authority)
    {
        this.authority = authority;
    }

    @Override
    public void setFullStreamDecompression(final boolean fullStreamDecompression)
    {
    }

    @Override
    public void setDecompressorRegistry(final DecompressorRegistry decompressorRegistry)
    {
    }

    @Override
    public void setMaxInboundMessageSize(final int maxSize)
    {
        this.maxInboundMessageSize = maxSize; // set before start (grpc-java's ClientCallImpl)
    }

    @Override
    public void setMaxOutboundMessageSize(final int maxSize)
    {
        this.maxOutboundMessageSize = maxSize; // set before start (grpc-java's ClientCallImpl)
    }

    // ---------------------------------------------------------------- Reverb -> grpc-java (the Reverb stream's listener)

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - Reverb's Metadata and Status are spelled out (grpc-java's are imported)
    @Override
    public void headersRead(final io.reverb.rpc.Metadata received)
    {
        final Metadata grpc = GrpcBridge.toGrpc(received);
        execute(() ->
        {
            if (!closed && !headersDelivered)
            {
                headersDelivered = true;
                deliverHeaders(grpc);
            }
        });
    }

    @Override
    public void messageRead(final ByteBuffer message)
    {
        final int max = maxInboundMessageSize;
        if (max >= 0 && message.remaining() > max)
        {
            // grpc-java's deframer's status, for the call's own limit (the channel's is the connection's)
            cancel(Status.RESOURCE_EXHAUSTED.withDescription(String.format(Locale.US,
                "gRPC message exceeds maximum size %d: %d", max, message.remaining())));
            return;
        }
        // the bytes are the transport's only during this callback: copied out here, on the transport's thread
        final Payload payload = Payload.MARSHALLER.read(message);
        if (unary)
        {
            final Payload earlier = heldResponse;
            heldResponse = payload; // counted in the stats where it is delivered (see closed)
            if (earlier == null)
            {
                return;
            }
            countInbound(earlier);
            execute(new Delivery(earlier)); // a second response on a unary call: grpc-java's call layer refuses it
            return;
        }
        countInbound(payload);
        execute(new Delivery(payload));
    }

    private void countInbound(final Payload payload)
    {
        final int seqNo = inboundSeqNo++;
        final int length = payload.length();
        for (final ClientStreamTracer tracer : tracers)
        {
            // the events and their order of grpc-java's deframer
            tracer.inboundMessage(seqNo);
            tracer.inboundWireSize(length);
            tracer.inboundUncompressedSize(length);
            tracer.inboundMessageRead(seqNo, length, length);
        }
    }

    @Override
    public void onReady()
    {
        execute(() ->
        {
            if (!closed)
            {
                listener.onReady();
            }
        });
    }

    @Override
    public void closed(final io.reverb.rpc.Status status, final io.reverb.rpc.Metadata trailers)
    {
        closed(status, trailers, false);
    }

    @Override
    public void closed(final io.reverb.rpc.Status status, final io.reverb.rpc.Metadata trailers,
        final boolean fromServer)
    {
        endFromServer = fromServer;
        final Status grpcStatus = atDeadline(GrpcBridge.toGrpc(status));
        final Metadata grpcTrailers = GrpcBridge.toGrpc(trailers);
        final ClientStreamListener.RpcProgress progress = GrpcBridge.progressOf(status);
        if (progress == ClientStreamListener.RpcProgress.MISCARRIED)
        {
            // never left: the connection takes no new streams. grpc-java resends the call at once, so it must first
            // know this transport is shut down, or its subchannel gives the resent call this transport again
            transport.refusesStreams(grpcStatus);
        }
        if (!status.isOk())
        {
            heldResponse = null;
        }
        // A unary call's response and status reach grpc-java's listener back to back, in one task, from the transport
        // callback that read them (a unary response counts only with its OK status, as rpc-core's unary calls: with
        // any other it is dropped). A blocking stub's waiting thread runs that task itself (see waitingCaller), so
        // grpc-java's call layer, which hands each of its callbacks to that thread's executor, wakes it once. The task
        // is this stream (run), its inputs these fields: written here, before the hand-over that publishes them.
        endStatus = grpcStatus;
        endTrailers = grpcTrailers;
        endProgress = progress;
        final Executor caller = waitingCaller;
        if (caller == null || cancelling)
        {
            // a cancelled call ends here: its caller may have stopped draining its executor (interrupted)
            endStage = END_ON_SERIALIZER;
            execute(this);
            return;
        }
        endStage = END_AT_CALLER;
        try
        {
            caller.execute(this);
        }
        catch (final RejectedExecutionException e)
        {
            endStage = END_ON_SERIALIZER;
            execute(this); // shut down: the call is over for the caller, and its stream ends here
        }
    }

    /**
     * The end's task ({@link #closed}): on the waiting caller it moves itself to the serializer; on the serializer it
     * gives the listener a unary response (with empty headers first if none came) and then the end.
     */
    @Override
    public void run()
    {
        if (endStage == END_AT_CALLER)
        {
            endStage = END_ON_SERIALIZER;
            execute(this); // runs it here now unless another callback of this stream runs: then right after that one
            return;
        }
        if (cancelling && !closed)
        {
            // the call was cancelled: whatever ended it (the cancel, or the server's end that raced it), what waits is
            // dropped and the listener hears the cancel
            if (window != null)
            {
                window.dropAhead();
            }
            heldResponse = null;
            closeNow(cancelReason, new Metadata(), ClientStreamListener.RpcProgress.PROCESSED);
            return;
        }
        if (window != null && !closed && window.holdsEnd(endFromServer))
        {
            return; // the server's status follows the messages that came before it, as grpc-java asks for them
        }
        final Payload response = heldResponse;
        if (response != null && !closed)
        {
            countInbound(response);
            deliverHeadersIfNone();
            listener.messagesAvailable(this); // its task takes the response through next(), maybe later
        }
        else
        {
            heldResponse = null; // none, or the listener is closed: dropped
        }
        closeNow(endStatus, endTrailers, endProgress);
    }

    /**
     * A call that ends DEADLINE_EXCEEDED at its deadline without grpc-java's own timer having cancelled it: the
     * server's timer fired first (it gave up on the call), or the Reverb stream's own (the same deadline, a moment
     * earlier than grpc-java's). Over grpc-java's own transports the first is a reset stream, which its call layer
     * reports as DEADLINE_EXCEEDED "ClientCall was cancelled at or after deadline", and the second does not exist: both
     * are handed to it as that reset (CANCELLED), so that a caller sees one of grpc-java's two descriptions of an
     * expired deadline, whichever timer won.
     *
     * @param status how the Reverb stream ended.
     * @return the status for grpc-java's listener.
     */
    private Status atDeadline(final Status status)
    {
        final Deadline d = deadline;
        if (status.getCode() != Status.Code.DEADLINE_EXCEEDED || cancelling || d == null || !d.isExpired())
        {
            return status;
        }
        return Status.CANCELLED.withDescription("ended at the call's deadline: " + status.getDescription());
    }

    /** The unary response's stream, once (grpc-java's message producer for {@link #run}'s delivery). */
    @Override
    public InputStream next()
    {
        final InputStream m = heldResponse;
        heldResponse = null;
        return m;
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName

    // ---------------------------------------------------------------- internals

    private void close(final Status status, final Metadata trailers, final ClientStreamListener.RpcProgress progress)
    {
        execute(() -> closeNow(status, trailers, progress));
    }

    // on the serializer
    private void closeNow(final Status status, final Metadata trailers, final ClientStreamListener.RpcProgress progress)
    {
        if (closed)
        {
            return;
        }
        closed = true;
        try
        {
            for (final ClientStreamTracer tracer : tracers)
            {
                tracer.inboundTrailers(trailers);
            }
            for (final ClientStreamTracer tracer : tracers)
            {
                tracer.streamClosed(status);
            }
            // REFUSED / MISCARRIED: the server never saw the call, and grpc-java may resend it (transparent retry)
            listener.closed(status, progress, trailers);
        }
        finally
        {
            transport.streamClosed(this);
        }
    }

    /**
     * A streaming call's flow control toward the server: grpc-java's requests (any thread), and on the serializer the
     * messages that came ahead of them and the REQUEST_N asked for (see the class comment). As the serializer's task,
     * it delivers what grpc-java asked for and tops the window up.
     */
    private final class ResponseWindow implements Runnable
    {
        /** Messages grpc-java asked for in all (any thread; capped, never wraps). */
        private final AtomicLong requested = new AtomicLong();
        /** On the serializer: messages given to the listener, received, asked of the server. */
        private long delivered;
        private long received;
        private long askedOfServer;
        /** The largest message so far, at least 1 once one came (sizes the window; 0: none yet). */
        private int largest;
        /** What arrived ahead of grpc-java's requests, oldest first, and its bytes. */
        private final ArrayDeque<Delivery> ahead = new ArrayDeque<>();
        private long aheadBytes;
        /** The server's status came while messages waited here: it follows the last of them. */
        private boolean endWaits;

        /** grpc-java asked for {@code n} more (any thread). */
        void add(final int n)
        {
            long now;
            do
            {
                now = requested.get();
            }
            while (!requested.compareAndSet(now, Math.min(now + n, Long.MAX_VALUE / 2)));
        }

        /** A response arrived: to the listener if asked for and nothing waits before it, else it waits. */
        void arrived(final Delivery delivery, final int length)
        {
            received++;
            largest = Math.max(largest, Math.max(length, 1)); // an empty message opens the window too
            if (ahead.isEmpty() && delivered < requested.get())
            {
                delivered++;
                delivery.deliver();
            }
            else
            {
                ahead.add(delivery);
                aheadBytes += length;
            }
            askServer();
        }

        /** grpc-java asked for more: what waits here, as far as asked, then the end if it waited, or the window. */
        @Override
        public void run()
        {
            if (closed || cancelling)
            {
                return; // after a cancel nothing more is delivered (its own task drops what waits)
            }
            Delivery next;
            while (delivered < requested.get() && (next = ahead.poll()) != null)
            {
                delivered++;
                aheadBytes -= next.length;
                next.deliver();
                if (closed || cancelling)
                {
                    return;
                }
            }
            if (endWaits && ahead.isEmpty())
            {
                endWaits = false;
                ReverbClientStream.this.run(); // the server's status, after its messages
                return;
            }
            askServer();
        }

        /**
         * The stream ended while messages wait here: the end waits behind them if it is the server's, else they go.
         *
         * @return true if the end waits.
         */
        boolean holdsEnd(final boolean serversEnd)
        {
            if (ahead.isEmpty())
            {
                return false;
            }
            if (serversEnd)
            {
                endWaits = true;
                return true;
            }
            dropAhead();
            return false;
        }

        /** @return true if an end waited (it is the caller's to deliver now); what waited is dropped either way. */
        boolean dropAhead()
        {
            ahead.clear();
            aheadBytes = 0;
            final boolean waited = endWaits;
            endWaits = false;
            return waited;
        }

        /**
         * Asks the server for more messages once those it may still send and those waiting here, beyond what
         * grpc-java still wants, are half the window or fewer; then up to the window. The window is
         * {@link #WINDOW_BYTES} of the largest message so far (at most {@link #MAX_WINDOW_MESSAGES}), and none while
         * that many bytes wait here already.
         */
        private void askServer()
        {
            if (closed)
            {
                return; // (after the server's status the Reverb stream ignores requests)
            }
            final long coming = askedOfServer - received + ahead.size();
            final long wanted = requested.get() - delivered;
            final long size = largest == 0 || aheadBytes >= WINDOW_BYTES ? 0 :
                Math.max(1, Math.min(MAX_WINDOW_MESSAGES, WINDOW_BYTES / largest));
            if (coming >= wanted && coming - wanted > size / 2)
            {
                return;
            }
            final long more = Math.min(wanted + size - coming, Integer.MAX_VALUE);
            if (more > 0)
            {
                askedOfServer += more;
                stream.request((int)more);
            }
        }
    }

    /** On the serializer: empty headers for a message that came without any (grpc-java's listener expects them). */
    private void deliverHeadersIfNone()
    {
        if (!headersDelivered)
        {
            headersDelivered = true;
            deliverHeaders(new Metadata());
        }
    }

    private void deliverHeaders(final Metadata headers)
    {
        for (final ClientStreamTracer tracer : tracers)
        {
            tracer.inboundHeaders(headers);
        }
        listener.headersRead(headers);
    }

    /**
     * One response on its way to the listener: the serializer's task and grpc-java's message producer in one object
     * (the producer gives the message once). A message that came without headers before it gets empty ones first.
     */
    private final class Delivery implements Runnable, StreamListener.MessageProducer
    {
        private InputStream message;
        private final int length;

        Delivery(final Payload payload)
        {
            this.message = payload;
            this.length = payload.length();
        }

        @Override
        public void run()
        {
            if (closed || cancelling)
            {
                return; // a response that comes after the call was cancelled is dropped
            }
            if (unary)
            {
                deliver(); // a second response on a unary call: grpc-java's call layer refuses it
            }
            else
            {
                window.arrived(this, length);
            }
        }

        /** To the listener, with empty headers first if none came. */
        void deliver()
        {
            deliverHeadersIfNone();
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
