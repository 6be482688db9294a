package io.reverb.rpc.internal;

import io.reverb.rpc.AcceptedConnection;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.compression.Codec;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.wire.CallFlyweight;
import io.reverb.rpc.wire.FrameCodec;
import io.reverb.rpc.wire.FrameType;
import io.reverb.rpc.wire.ProtocolException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLSession;
import reactor.core.Disposable;

/**
 * The server transport: the server side of one connection's wire protocol. It opens a {@link ServerCall} per CALL
 * frame, routes the client's frames to it, and drains on shutdown (GOAWAY, then close once the last call ended). It
 * is the {@link AcceptedConnection} the server's connection listeners and the calls' contexts see.
 */
final class ServerWireConnection extends WireConnection implements AcceptedConnection
{
    private final ServerRuntime server;
    private volatile int lastStreamId;
    private volatile boolean draining;
    /**
     * Guarded by the drain lock, {@link #streams}' monitor, which orders call acceptance against GOAWAY (see onCall)
     * and is taken before the write lock, never inside it: the GOAWAY was handed to {@link #write}; a drained
     * connection may close after it.
     */
    private boolean goAwayWritten;
    /** Tests only: runs after the connection is marked draining and before its GOAWAY is written. */
    volatile Runnable beforeGoAwayWrite;
    private final CallFlyweight inCall = new CallFlyweight(); // the transport's thread only
    /** Start of the RESOURCE_EXHAUSTED description of a call over the limit; clients recognise it as a refusal. */
    static final String TOO_MANY_CALLS = "too many concurrent calls on this connection: limit ";
    /** Start of the RESOURCE_EXHAUSTED description of a call refused while the client reads nothing of the answers. */
    static final String NOT_READING = "the client is not reading its answers (";
    /**
     * Frames waiting behind back-pressure beyond which new calls are refused (their answers would wait as well). Far
     * above what calls within their limits queue while a client reads; calls already running go on.
     */
    static final int MAX_QUEUED_FOR_NEW_CALLS = 65_536;
    private final int maxConcurrentCalls;
    private final int maxInboundMetadataSize;
    private final KeepAliveEnforcer keepAlive;
    private static final Status SHUTTING_DOWN = Status.OK.withDescription("server shutting down");
    private volatile Disposable ageTimer;
    /**
     * Whether a call's handler waits for the end of the transport's read batch (see {@link #onCall}): only where
     * handlers run inline on the transport's thread and the transport says when a batch ends.
     */
    private final boolean deferStarts;
    /** Calls of the current read batch whose start waits for its end, in arrival order; the transport's thread only. */
    private final ArrayDeque<ServerCall<?, ?>> deferred = new ArrayDeque<>();
    /**
     * The call the last CALL of the current read batch opened (the transport's thread only; null between batches):
     * its MESSAGE, which travels in the same transport message, is routed without a lookup in {@link #streams}.
     */
    private ServerCall<?, ?> lastOpened;
    /**
     * Without deferred starts: the call the current transport message opened, counted as started at the message's end
     * (after a handler that answered at once has written its response); the transport's thread only.
     */
    private ServerCall<?, ?> uncounted;
    /** Whether the connection listeners were told of it (then they are told of its end). */
    private volatile boolean announced;
    private volatile Object attachment;
    /** Bytes this connection's compressed requests may hold (see {@link InflationBudget}). */
    final InflationBudget inflationBudget;
    /** Inflates its compressed requests off the transport's thread. */
    private final InflationLane inflationLane;
    /** The server's keep-alive: its periodic task (null when off), and its PINGs and their timeouts. */
    private volatile Disposable keepAliveTicks;
    private final KeepAlivePings keepAlivePings;
    /** The max-connection-idle check (null when off), and what it saw: the last stream id and since when it is idle. */
    private volatile Disposable idleCheck;
    private int idleSeenStreamId;
    private long idleSinceNanos;

    ServerWireConnection(final ServerRuntime server, final Connection connection)
    {
        super(server.config().maxInboundMessageSize, server.config().codecs);
        this.server = server;
        this.connection = connection;
        final ServerConfig config = server.config();
        this.deferStarts = server.handlerScheduler() == null && connection.signalsReadComplete();
        readBatchesSignalled(connection.signalsReadComplete());
        this.maxConcurrentCalls = config.maxConcurrentCallsPerConnection;
        this.maxInboundMetadataSize = config.maxInboundMetadataSize;
        this.inflationBudget = new InflationBudget(config.maxInflatedBytesPerConnection);
        this.inflationLane = new InflationLane(this, inflationBudget, config.maxInboundMessageSize, server.inflater());
        // enforcement is on when a minimum gap is set or PINGs without calls are refused
        final boolean enforce = config.keepAlivePermitNanos > 0 || !config.permitKeepAliveWithoutCalls;
        this.keepAlive = enforce ? new KeepAliveEnforcer(config.keepAlivePermitNanos,
            TimeUnit.NANOSECONDS, config.permitKeepAliveWithoutCalls, System.nanoTime()) : null;
        if (config.maxConnectionAgeNanos != Long.MAX_VALUE)
        {
            final long age = MaxConnectionAge.jitteredAgeNanos(config.maxConnectionAgeNanos,
                ThreadLocalRandom.current().nextDouble());
            ageTimer = server.timer().schedule(this::onMaxAge, age, TimeUnit.NANOSECONDS);
        }
        this.keepAlivePings = new KeepAlivePings(this, server.timer(), config.keepAliveTimeoutNanos, () ->
        {
            final Duration timeout = Duration.ofNanos(config.keepAliveTimeoutNanos);
            LOG.debug("keep-alive PING to {} not answered within {}; closing the connection", peer(), timeout);
            closeNow(Status.UNAVAILABLE.withDescription("the server's keep-alive ping was not answered within " +
                timeout));
        });
        if (config.keepAliveTimeNanos != Long.MAX_VALUE)
        {
            keepAliveTicks = server.timer().schedulePeriodically(this::keepAliveTick, config.keepAliveTimeNanos,
                config.keepAliveTimeNanos, TimeUnit.NANOSECONDS);
        }
        if (config.maxConnectionIdleNanos != Long.MAX_VALUE)
        {
            final long period = Math.max(1, config.maxConnectionIdleNanos / 4);
            idleSinceNanos = System.nanoTime();
            idleCheck = server.timer().schedulePeriodically(this::idleTick, period, period, TimeUnit.NANOSECONDS);
        }
    }

    /** Every keep-alive interval: PINGs the client unless a PING is still unanswered ({@link KeepAlivePings}). */
    private void keepAliveTick()
    {
        if (closed)
        {
            stopTimers();
            return;
        }
        keepAlivePings.ping();
    }

    @Override
    void onPingAck(final long payload)
    {
        keepAlivePings.onAck(payload);
    }

    /**
     * A quarter of the max idle time: a connection that had no call running at each check since the one that last saw
     * a call (or its start), and no new call, for the max idle time and one period more (so never early) is drained.
     */
    private void idleTick()
    {
        if (closed || draining)
        {
            final Disposable check = idleCheck;
            if (check != null)
            {
                check.dispose();
            }
            return;
        }
        final long now = System.nanoTime();
        final int seen = lastStreamId;
        if (seen != idleSeenStreamId || !streams.isEmpty())
        {
            idleSeenStreamId = seen; // a call ran since the last check: idle from here at the earliest
            idleSinceNanos = now;
            return;
        }
        final long idle = server.config().maxConnectionIdleNanos;
        if (now - idleSinceNanos >= idle + Math.max(1, idle / 4))
        {
            LOG.debug("connection from {} idle for {}: draining it", peer(), Duration.ofNanos(now - idleSinceNanos));
            goAway(Status.OK.withDescription("max connection idle reached"));
        }
    }

    private void stopTimers()
    {
        for (final Disposable timer : new Disposable[] {keepAliveTicks, idleCheck, ageTimer})
        {
            if (timer != null)
            {
                timer.dispose();
            }
        }
        keepAlivePings.stop();
    }

    @Override
    boolean serverSide()
    {
        return true;
    }

    /** The connection listeners were told of this connection: they are told of its end too. */
    void announced()
    {
        announced = true;
    }

    /** The server refused this connection before the transport handed it any event: nothing of it may stay. */
    void refused()
    {
        draining = true;
        stopTimers();
    }

    @Override
    public String remoteAddress()
    {
        return peer();
    }

    @Override
    public String localAddress()
    {
        final Connection c = connection;
        return c == null ? "unconnected" : c.localAddress();
    }

    @Override
    public SSLSession sslSession()
    {
        final Connection c = connection;
        return c == null ? null : c.sslSession();
    }

    @Override
    public boolean isOpen()
    {
        final Connection c = connection;
        return !draining && !closed && c != null && c.isOpen();
    }

    @Override
    public void attach(final Object attachment)
    {
        this.attachment = attachment;
    }

    @Override
    public Object attachment()
    {
        return attachment;
    }

    private void onMaxAge()
    {
        // graceful: the client's next calls go through a new connection (maybe to another replica), these finish
        goAway(Status.OK.withDescription("max connection age reached"));
        final long grace = server.config().maxConnectionAgeGraceNanos;
        if (grace != Long.MAX_VALUE)
        {
            ageTimer = server.timer().schedule(() -> closeNow(Status.UNAVAILABLE
                .withDescription("max connection age reached and its grace period is over")), grace, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    boolean acceptPing()
    {
        final KeepAliveEnforcer enforcer = keepAlive;
        if (enforcer == null)
        {
            return true;
        }
        // no lock: the enforcer is touched only here and in onCall, both on the transport's thread, which delivers
        // one message at a time per connection (the transport SPI's contract)
        final boolean accepted = enforcer.onPing(System.nanoTime(), !streams.isEmpty());
        if (!accepted)
        {
            LOG.debug("closing the connection from {}: {}", peer(), KeepAliveEnforcer.TOO_MANY_PINGS);
            write(new OutboundFrame.GoAway(lastStreamIdSeen(), Status.RESOURCE_EXHAUSTED
                .withDescription(KeepAliveEnforcer.TOO_MANY_PINGS)));
            closeNow(Status.UNAVAILABLE.withDescription("connection closed by the server: client sent " +
                KeepAliveEnforcer.TOO_MANY_PINGS));
        }
        return accepted;
    }

    @Override
    void onFrame(final FrameType type, final int flags, final int streamId, final ByteBuffer buffer, final int start,
        final int end) throws ProtocolException
    {
        keepAlivePings.frameReceived();
        switch (type)
        {
            case CALL:
                onCall(streamId, buffer, start, end);
                return;
            case HALF_CLOSE:
            {
                final RpcStream stream = messageTarget(streamId);
                if (stream != null)
                {
                    if (stream.inflationPending != 0)
                    {
                        // after its requests still inflating
                        if (!inflationLane.halfClose((ServerCall<?, ?>)stream))
                        {
                            stream.onUndecodableMessage(InflationLane.overBudget(inflationBudget.limit()));
                        }
                    }
                    else
                    {
                        ((ServerCall<?, ?>)stream).onHalfClose();
                    }
                }
                return;
            }
            case CANCEL:
            {
                lastOpened = null;
                final int code = end - start >= 4 ? buffer.getInt(start) : Status.CANCELLED.code().value();
                final RpcStream stream = streams.get(streamId);
                if (stream != null)
                {
                    // the code is the client's word and becomes the call's recorded outcome: CANCELLED, or
                    // DEADLINE_EXCEEDED (the client's deadline, which the server's own timer would end it with);
                    // anything else (OK included) is recorded as CANCELLED, the client's reason kept in the text
                    final StatusCode said = Status.fromCodeValue(code).code();
                    ((ServerCall<?, ?>)stream).onCancel(said == StatusCode.CANCELLED ||
                        said == StatusCode.DEADLINE_EXCEEDED ? Status.fromCode(said).withDescription(
                        "cancelled by the client") : Status.CANCELLED.withDescription(
                        "cancelled by the client (its reason: " + said + ")"));
                }
                return;
            }
            case HEADERS:
            case STATUS:
                throw new ProtocolException("unexpected " + type + " frame from a client");
            default:
                onCommonFrame(type, flags, streamId, buffer, start, end);
        }
    }

    /**
     * The name of a method no service lists, read from the CALL: it goes into statuses, meters and log lines, so a byte
     * outside printable ASCII (a line break, an escape sequence) is a protocol error. Listed methods are matched on the
     * frame's bytes and never read as text.
     */
    private static String methodName(final CallFlyweight call) throws ProtocolException
    {
        final String name = call.method();
        for (int i = 0; i < name.length(); i++)
        {
            final char c = name.charAt(i);
            FrameCodec.check(c > ' ' && c < 0x7F, "method name with a byte outside printable ASCII");
        }
        return name;
    }

    private void onCall(final int streamId, final ByteBuffer buffer, final int start, final int end)
        throws ProtocolException
    {
        if (streamId <= lastStreamId)
        {
            throw new ProtocolException("stream id " + streamId + " not above " + lastStreamId);
        }
        final KeepAliveEnforcer enforcer = keepAlive;
        if (enforcer != null)
        {
            enforcer.onDataSent(); // an active client pings legitimately
        }
        final CallFlyweight call = inCall.wrap(buffer, start).validate(end);
        final long timeoutNanos = call.timeoutNanos();
        final int initialRequestN = call.initialRequestN();
        final long metadataSize = FrameCodec.metadataSize(buffer, call.metadataOffset(), end);
        // refused before anything of it is made (a peer's metadata is held for the whole call)
        final Status metadataTooLarge = metadataSize <= maxInboundMetadataSize ? null : Status.RESOURCE_EXHAUSTED
            .withDescription("request metadata of " + metadataSize + " bytes is over the server's limit of " +
            maxInboundMetadataSize + " (RpcServer.Builder.maxInboundMetadataSize)");
        final Metadata metadata = metadataTooLarge != null ? null : readMetadataOrNull(buffer, call.metadataOffset(), end);
        ServiceDefinition.ServerMethodDefinition<?, ?> definition = metadataTooLarge != null ? null :
            server.methods().find(buffer, call.methodOffset(), call.methodLength());
        Status notFound = metadataTooLarge;
        MethodDescriptor<Object, Object> streamMethod = null;
        String streamMethodName = null;
        if (definition == null && notFound == null)
        {
            // the services first, then the fallback registry (user code: asked outside the stream map's monitor),
            // then the stream handler
            String method = null;
            if (server.hasFallback())
            {
                method = methodName(call);
                try
                {
                    definition = server.fallbackMethod(method);
                }
                catch (final RuntimeException e)
                {
                    notFound = Status.INTERNAL.withDescription("the fallback handler registry failed to look up " +
                        method + ": " + e);
                }
            }
            if (definition == null && notFound == null && server.streamHandler() != null)
            {
                streamMethod = server.streamMethod(buffer, call.methodOffset(), call.methodLength());
                // a listed method's name is its descriptor's (no String per call); another's is read from the frame
                streamMethodName = !RpcServer.Builder.OTHER_METHOD.equals(streamMethod.fullMethodName()) ?
                    streamMethod.fullMethodName() : method != null ? method : methodName(call);
            }
            else if (definition == null && notFound == null)
            {
                if (method == null)
                {
                    method = methodName(call);
                }
                final int slash = method.lastIndexOf('/');
                final String service = slash > 0 ? method.substring(0, slash) : method;
                notFound = server.hasService(service) ?
                    Status.UNIMPLEMENTED.withDescription("Method not found: " + method) :
                    Status.UNIMPLEMENTED.withDescription("Service not found: " + service);
            }
        }
        final ServerCall<?, ?> serverCall;
        // one decision against a graceful shutdown: a call is either registered before the GOAWAY is written (and
        // runs to its end) or refused after it (and the client, having read the GOAWAY first, resends it elsewhere).
        // The drain lock is the stream map's own monitor: the decision and the registration are one monitor.
        synchronized (streams)
        {
            if (!draining && server.isShutdown())
            {
                goAwayLocked(SHUTTING_DOWN); // the shutdown has not reached this connection yet: GOAWAY goes first
            }
            lastStreamId = streamId;
            if (draining)
            {
                writeReply(new OutboundFrame.StatusFrame(streamId, FrameType.Flags.REFUSED,
                    Status.UNAVAILABLE.withDescription("server is shutting down"), null));
                return;
            }
            if (maxConcurrentCalls != Integer.MAX_VALUE && streams.size() >= maxConcurrentCalls)
            {
                // refused before any handler ran: a balancing client retries it on another replica
                writeReply(new OutboundFrame.StatusFrame(streamId, FrameType.Flags.REFUSED, Status.RESOURCE_EXHAUSTED
                    .withDescription(TOO_MANY_CALLS + maxConcurrentCalls +
                    " (RpcServer.Builder.maxConcurrentCallsPerConnection)"), null));
                return;
            }
            if (queuedFrames() >= MAX_QUEUED_FOR_NEW_CALLS)
            {
                // a call ends (and leaves the stream map) when its last frames are queued, not when they leave: a
                // client that sends calls and reads nothing would queue their answers without end
                writeReply(new OutboundFrame.StatusFrame(streamId, FrameType.Flags.REFUSED, Status.RESOURCE_EXHAUSTED
                    .withDescription(NOT_READING + MAX_QUEUED_FOR_NEW_CALLS + " frames wait to be sent)"), null));
                return;
            }
            if (notFound != null)
            {
                writeReply(new OutboundFrame.StatusFrame(streamId, notFound, null));
                return;
            }
            serverCall = streamMethod != null ?
                new TransportServerStream<>(this, server, streamId, streamMethod, streamMethodName, metadata, timeoutNanos,
                    initialRequestN) :
                ReactorServerCall.create(this, server, streamId, definition, metadata, timeoutNanos, initialRequestN);
            streams.putHeld(streamId, serverCall);
        }
        if (deferStarts)
        {
            lastOpened = serverCall; // nothing on this thread can end it before the batch's end, which forgets it
            // A handler on the transport's thread would run right now, before the rest of the batch is read. After a
            // stall (a frozen process, a long GC) the batch may hold this call's CANCEL too, sent when the caller's
            // deadline passed: started at the batch's end, a call cancelled meanwhile never runs its handler. Its
            // MESSAGE and HALF_CLOSE frames are taken meanwhile and wait for the start (see UnaryServerCall.begin).
            deferred.add(serverCall);
            return;
        }
        // its request is usually in the same transport message: counted at the message's end, after the response
        countUncounted();
        uncounted = serverCall;
        serverCall.start();
    }

    @Override
    void afterMessage()
    {
        countUncounted();
    }

    private void countUncounted()
    {
        final ServerCall<?, ?> call = uncounted;
        if (call != null)
        {
            uncounted = null;
            call.countStarted();
        }
    }

    /** Starts a call, then counts it as started: after a handler that answers at once has written its response. */
    private static void startAndCount(final ServerCall<?, ?> call)
    {
        try
        {
            call.start();
        }
        finally
        {
            call.countStarted();
        }
    }

    /** Compressed requests go to the inflater lane: the transport's thread only copies them. */
    @Override
    void inflate(final RpcStream stream, final Codec codec, final String name, final boolean endOfStream,
        final ByteBuffer buffer, final int start, final int end)
    {
        if (!inflationLane.compressed((ServerCall<?, ?>)stream, codec, name, endOfStream, buffer, start, end))
        {
            stream.onUndecodableMessage(InflationLane.overBudget(inflationBudget.limit()));
        }
    }

    @Override
    boolean deferBehindInflation(final RpcStream stream, final boolean endOfStream, final ByteBuffer buffer,
        final int start, final int end)
    {
        if (!inflationLane.plain((ServerCall<?, ?>)stream, endOfStream, buffer, start, end))
        {
            stream.onUndecodableMessage(InflationLane.overBudget(inflationBudget.limit()));
        }
        return true;
    }

    @Override
    RpcStream messageTarget(final int streamId)
    {
        final ServerCall<?, ?> opened = lastOpened;
        // the call was registered in this batch and no CANCEL came since: it is in the map unless another thread
        // ended it meanwhile, and an ended call ignores its request as it would had the lookup missed
        return opened != null && opened.streamId == streamId ? opened : streams.get(streamId);
    }

    /**
     * The end of a read batch: starts the calls it opened, in order, except those it already ended; with several, what
     * their handlers answer on this thread is corked and leaves together, in few transport messages, when the last
     * one has started.
     */
    @Override
    public void onReadComplete(final Connection readConnection)
    {
        lastOpened = null;
        if (deferred.size() > 1)
        {
            cork();
        }
        try
        {
            ServerCall<?, ?> call;
            while ((call = deferred.poll()) != null)
            {
                // a call the batch already ended runs no handler: start() and begin() check, under its monitor
                startAndCount(call);
            }
        }
        finally
        {
            super.onReadComplete(readConnection);
        }
    }

    void remove(final int streamId)
    {
        streams.remove(streamId);
        if (draining && drainedEmpty())
        {
            closeWhenFlushed();
        }
    }

    /**
     * A draining connection closes when its last call ends, but never before its GOAWAY is written: the GOAWAY (and
     * the REFUSED status of a call that arrives while it is being written) go out under the drain lock, and a call
     * ending on another thread in that instant would otherwise close the connection under it. The client then never
     * learns which calls the server did not see, and fails them all as lost with the connection.
     *
     * @return true once the GOAWAY is written and no call is running.
     */
    private boolean drainedEmpty()
    {
        synchronized (streams)
        {
            return goAwayWritten && streams.isEmpty();
        }
    }

    /**
     * Graceful shutdown: no new calls, running ones finish, then the connection closes.
     */
    @Override
    public void goAway()
    {
        goAway(SHUTTING_DOWN);
    }

    private void goAway(final Status status)
    {
        synchronized (streams)
        {
            goAwayLocked(status);
        }
    }

    // guarded by the drain lock (streams' monitor): no call is registered or refused while the GOAWAY and its last
    // stream id go out
    private void goAwayLocked(final Status status)
    {
        if (draining)
        {
            return;
        }
        draining = true;
        final Runnable hook = beforeGoAwayWrite;
        if (hook != null)
        {
            hook.run();
        }
        write(new OutboundFrame.GoAway(lastStreamIdSeen(), status));
        goAwayWritten = true;
        if (streams.isEmpty())
        {
            closeWhenFlushed();
        }
    }

    private int lastStreamIdSeen()
    {
        return lastStreamId;
    }

    /**
     * Ends every call with the status (sending it to the client) and closes the connection.
     */
    @Override
    public void closeNow(final Status status)
    {
        if (status.isOk())
        {
            throw new IllegalArgumentException("closeNow needs a status that is not OK: " + status);
        }
        draining = true;
        for (final int id : streams.ids())
        {
            final RpcStream stream = streams.get(id);
            if (stream != null)
            {
                try
                {
                    ((ServerCall<?, ?>)stream).cancelCall(status, status);
                }
                catch (final RuntimeException e)
                {
                    // one call's end failing must not keep the others, or the connection, open
                    PEER_LOG.log("failing a call threw", "ending a call on " + peer() + " threw", e);
                }
            }
        }
        connection.close();
    }

    @Override
    void onGoAway(final int lastStreamId, final Status status)
    {
        // a client going away simply stops making calls; its connection closes when it is done
    }

    @Override
    void connectionClosed(final Throwable cause)
    {
        if (cause != null)
        {
            LOG.debug("connection from {} lost: {}", peer(), cause.toString());
        }
        stopTimers();
        countUncounted();
        ServerCall<?, ?> notStarted;
        while ((notStarted = deferred.poll()) != null)
        {
            // ended with the connection (failStreams), and counted as finished then: none starts, each is counted
            notStarted.countStarted();
        }
        lastOpened = null;
        server.connectionClosed(this);
        if (announced)
        {
            server.announceClosed(this, cause);
        }
    }
}
