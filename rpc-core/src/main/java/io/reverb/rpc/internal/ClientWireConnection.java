package io.reverb.rpc.internal;

import io.reverb.rpc.Metadata;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.wire.FrameCodec;
import io.reverb.rpc.wire.StatusFlyweight;
import io.reverb.rpc.wire.FrameType;
import io.reverb.rpc.wire.ProtocolException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLSession;
import reactor.core.Disposable;

/**
 * The client side of one connection's wire protocol (under a {@link ClientTransportImpl}): allocates stream ids,
 * routes the server's frames to {@link ClientCall}s, keeps the connection alive with PINGs, and drains on GOAWAY.
 */
final class ClientWireConnection extends WireConnection
{
    /** Stream ids are positive ints: a connection that used them all takes no new calls (the channel opens another). */
    static final int LAST_STREAM_ID = Integer.MAX_VALUE;

    /** The one-connection API this is the protocol of: told when this takes no new calls and when it closed. */
    private final ClientTransportImpl channel;
    private final int lastStreamId;
    private int nextStreamId = 1;
    private volatile boolean draining;
    /** Most response metadata (headers, trailers) a call accepts, in bytes. */
    private final int maxInboundMetadataSize;
    /** A GOAWAY came (the transport's thread only). */
    private boolean goAwayReceived;
    /*
     * Started streams that hold no stream id yet: a one-message stream (unary, server-streaming) sends its CALL, with
     * its one message, only at halfClose, and only then gets its id (ids must leave in increasing order, so none can be
     * set aside earlier). Until then the connection must still reach it, to close it when the connection ends.
     *
     * An intrusive doubly-linked list through the streams themselves (TransportClientStream.unsentPrev/unsentNext),
     * guarded by the write lock that startStream already takes to assign ids: registering costs the unary hot path one
     * uncontended lock at start (which replaces the stream's own lock there) and no allocation; leaving the list costs
     * nothing extra, as assignStreamId unlinks the stream under the lock it already holds. Only a stream that ends
     * before its CALL (cancel, deadline) takes the lock once more to leave. failUnregistered sets streamsEnded and pops
     * the streams one at a time under the lock, closing each outside it; a stream popped there gets no id afterwards
     * (assignStreamId refuses once streamsEnded), and whichever of the sweep or its own halfClose ends it first is the
     * one close (TransportClientStream.endStream runs once).
     */
    /** Guarded by writeLock: the head of the started streams that hold no stream id yet. */
    private TransportClientStream<?> unsentHead;
    /** Guarded by writeLock: the connection ended its streams: none registers or gets an id from now on. */
    private boolean streamsEnded;
    /** The last stream id of the server's GOAWAY: the server never saw the calls above it. */
    private volatile int goAwayLastStreamId = Integer.MAX_VALUE;
    private volatile Disposable keepAlive;
    /** Keep-alive's PINGs and their timeouts (see {@link #keepAliveTick}). */
    private final KeepAlivePings keepAlivePings;
    private final StatusFlyweight inStatus = new StatusFlyweight(); // the transport's thread only
    /**
     * PINGs asked for by the owner ({@link #ping()}), by payload: negative payloads, apart from keep-alive's positive
     * ones. Each entry holds the time it left, in nanoseconds.
     */
    private final ConcurrentHashMap<Long, PendingPing> pings = new ConcurrentHashMap<>();
    private final AtomicLong pingPayloads = new AtomicLong();

    /** A PING the owner is waiting for. */
    private static final class PendingPing
    {
        final CompletableFuture<Long> result = new CompletableFuture<>();
        final long sentNanos = System.nanoTime();
    }

    ClientWireConnection(final ClientTransportImpl channel, final int maxInboundMessageSize, final int lastStreamId)
    {
        super(maxInboundMessageSize, channel.config().codecs);
        this.channel = channel;
        this.maxInboundMetadataSize = channel.config().maxInboundMetadataSize;
        this.lastStreamId = lastStreamId;
        this.keepAlivePings = new KeepAlivePings(this, channel.timer(), channel.config().keepAliveTimeout.toNanos(), () ->
        {
            LOG.warn("keep-alive PING to {} not answered within {}; closing the connection", peer(),
                channel.config().keepAliveTimeout);
            closeWithError(Status.UNAVAILABLE.withDescription(
                "keep-alive ping not answered within " + channel.config().keepAliveTimeout)
                .withCause(CallFailureCause.of(CallFailureCause.Reason.CONNECTION_LOST)));
        });
    }

    @Override
    boolean serverSide()
    {
        return false;
    }

    void attach(final Connection connection)
    {
        readBatchesSignalled(connection.signalsReadComplete());
        this.connection = connection;
        final long interval = channel.keepAliveNanos();
        if (interval > 0)
        {
            keepAlive = channel.timer().schedulePeriodically(this::keepAliveTick, interval, interval, TimeUnit.NANOSECONDS);
        }
    }

    boolean isUsable()
    {
        return !closed && !draining && connection != null;
    }

    /**
     * Registers the call under a new stream id and writes its CALL frame, atomically (under the connection's write
     * lock), so that CALL frames leave in stream id order (the server rejects ids that do not increase).
     *
     * @return the stream id, or -1 if the connection takes no new calls.
     */
    int startCall(final ClientCall<?, ?> call)
    {
        return startClientStream(call, call);
    }

    /**
     * {@link #startCall} for any client stream: registers it and writes its first frame (CALL) in one step.
     *
     * @param stream the stream.
     * @param call   its CALL frame (with what travels in the same transport message).
     * @return the stream id, or -1 if the connection takes no new calls.
     */
    int startClientStream(final ClientSideStream stream, final OutboundFrame call)
    {
        final int id = startStream(stream, call);
        if (id > 0 && id == lastStreamId)
        {
            channel.timer().schedule(() -> channel.connectionUnusable(this,
                Status.UNAVAILABLE.withDescription("stream ids used up")));
        }
        return id;
    }

    /**
     * Registers a started stream whose CALL waits (for halfClose), so that the connection's end reaches it.
     *
     * @param stream the stream.
     * @return false if the connection has ended or is closing: the stream must end at once, as never sent.
     */
    boolean addUnsent(final TransportClientStream<?> stream)
    {
        synchronized (writeLock)
        {
            if (streamsEnded || closed || connection == null)
            {
                return false;
            }
            final TransportClientStream<?> head = unsentHead;
            stream.unsentNext = head;
            stream.unsentPrev = null;
            if (head != null)
            {
                head.unsentPrev = stream;
            }
            unsentHead = stream;
            stream.unsentLinked = true;
            return true;
        }
    }

    /**
     * A stream registered by {@link #addUnsent} ended before its CALL left: forgets it (nothing if it is not there).
     *
     * @param stream the stream.
     */
    void removeUnsent(final TransportClientStream<?> stream)
    {
        synchronized (writeLock)
        {
            unlinkUnsentLocked(stream);
        }
    }

    /** Guarded by writeLock. */
    private void unlinkUnsentLocked(final TransportClientStream<?> stream)
    {
        if (!stream.unsentLinked)
        {
            return;
        }
        final TransportClientStream<?> prev = stream.unsentPrev;
        final TransportClientStream<?> next = stream.unsentNext;
        if (prev == null)
        {
            unsentHead = next;
        }
        else
        {
            prev.unsentNext = next;
        }
        if (next != null)
        {
            next.unsentPrev = prev;
        }
        stream.unsentPrev = null;
        stream.unsentNext = null;
        stream.unsentLinked = false;
    }

    /** @return how many started streams wait for their CALL to leave (for tests). */
    int unsentCount()
    {
        synchronized (writeLock)
        {
            int n = 0;
            for (TransportClientStream<?> s = unsentHead; s != null; s = s.unsentNext)
            {
                n++;
            }
            return n;
        }
    }

    /**
     * Ends the streams whose CALL has not left. Whatever ended the connection (the server closing it after its GOAWAY,
     * a lost peer, a protocol error), none of them was sent: each fails as not sent (a transparent retry resends it,
     * on grpc-java's channel too), never as lost with the connection (a call the server may have run).
     */
    @Override
    void failUnregistered(final Status status)
    {
        Status notSent = null;
        while (true)
        {
            final TransportClientStream<?> stream;
            synchronized (writeLock)
            {
                streamsEnded = true;
                stream = unsentHead;
                if (stream == null)
                {
                    return;
                }
                unlinkUnsentLocked(stream);
            }
            if (notSent == null)
            {
                final Throwable cause = status.cause() instanceof CallFailureCause ? status.cause().getCause() :
                    status.cause();
                notSent = Status.UNAVAILABLE.withDescription(status.description() + " before the call was sent")
                    .withCause(CallFailureCause.of(CallFailureCause.Reason.CHANNEL_CLOSED, cause));
            }
            try
            {
                stream.onConnectionClosed(notSent); // outside the lock: it runs the listener's closed()
            }
            catch (final Throwable t)
            {
                PEER_LOG.log("failing a call threw", "failing a call on " + peer() + " threw", t);
            }
        }
    }

    @Override
    int assignStreamId(final RpcStream call)
    {
        if (call instanceof TransportClientStream)
        {
            unlinkUnsentLocked((TransportClientStream<?>)call); // it leaves the unsent list here, under the same lock
        }
        if (streamsEnded || !isUsable())
        {
            return -1;
        }
        final int id = nextStreamId;
        if (id == lastStreamId)
        {
            // The last id: this connection drains (no new calls) and the channel connects anew; calls waiting
            // for an id go there. Not an error: at a million calls a second ids run out after about 36 minutes.
            draining = true;
        }
        else
        {
            nextStreamId = id + 1;
        }
        streams.put(id, call);
        if (closed)
        {
            // closed between the check and the put: onClose may already have swept the streams, so back out
            streams.remove(id);
            return -1;
        }
        call.streamId = id;
        return id;
    }

    /**
     * Takes no new calls from now on, and closes the connection once the calls running on it have ended (a graceful
     * shutdown by this side).
     */
    void drain()
    {
        draining = true;
        if (streams.isEmpty())
        {
            closeWhenFlushed();
        }
    }

    void remove(final int streamId)
    {
        streams.remove(streamId);
        if (draining && streams.isEmpty())
        {
            closeWhenFlushed();
        }
    }

    @Override
    void onFrame(final FrameType type, final int flags, final int streamId, final ByteBuffer buffer, final int start,
        final int end) throws ProtocolException
    {
        keepAlivePings.frameReceived();
        switch (type)
        {
            case HEADERS:
            {
                final RpcStream stream = streams.get(streamId);
                if (stream == null)
                {
                    FrameCodec.metadataSize(buffer, start, end); // checked all the same: malformed is a protocol error
                    return;
                }
                final long size = FrameCodec.metadataSize(buffer, start, end);
                if (size > maxInboundMetadataSize)
                {
                    // refused before anything of it is made (a call holds its headers)
                    stream.onUndecodableMessage(Status.RESOURCE_EXHAUSTED.withDescription("response headers of " + size +
                        " bytes are over the client's limit of " + maxInboundMetadataSize +
                        " (RpcChannel.Builder.maxInboundMetadataSize)"));
                    return;
                }
                ((ClientSideStream)stream).onHeaders(readMetadata(buffer, start, end));
                return;
            }
            case STATUS:
            {
                final StatusFlyweight status = inStatus.wrap(buffer, start).validate(end);
                final int code = status.code();
                final String description = status.description(end); // null, without allocating, when absent
                final long trailersSize = FrameCodec.metadataSize(buffer, status.trailersOffset(end), end);
                final boolean trailersTooLarge = trailersSize > maxInboundMetadataSize;
                final Metadata trailers = trailersTooLarge ? null :
                    readMetadataOrNull(buffer, status.trailersOffset(end), end);
                final RpcStream stream = streams.remove(streamId);
                if (stream != null)
                {
                    streamEnded(); // from the batch's second end on, what its callbacks write is corked
                    final Status received = trailersTooLarge ? Status.RESOURCE_EXHAUSTED.withDescription(
                        "response trailers of " + trailersSize + " bytes are over the client's limit of " +
                        maxInboundMetadataSize + " (RpcChannel.Builder.maxInboundMetadataSize)") :
                        Status.fromCodeValue(code).withDescription(description);
                    final boolean refused = (flags & FrameType.Flags.REFUSED) != 0;
                    // refused while the server shuts down: no handler ran, the call may go to the server that follows
                    if (!refused || code != StatusCode.UNAVAILABLE.value() || !((ClientSideStream)stream).retryRefused())
                    {
                        // the server flags a call it refused before any handler ran: safe to retry elsewhere
                        ((ClientSideStream)stream).onStatus(refused ?
                            received.withCause(CallFailureCause.of(CallFailureCause.Reason.REFUSED_BY_SERVER)) :
                            received, trailers);
                    }
                }
                if (draining && streams.isEmpty())
                {
                    remove(streamId);
                }
                return;
            }
            case CALL:
            case HALF_CLOSE:
            case CANCEL:
                throw new ProtocolException("unexpected " + type + " frame from a server");
            default:
                onCommonFrame(type, flags, streamId, buffer, start, end);
        }
    }

    /** @return this end of the transport connection, or null (not attached yet). */
    String transportLocalAddress()
    {
        final Connection c = connection;
        return c == null ? null : c.localAddress();
    }

    /** @return the transport connection's TLS session, or null (none, or not attached yet). */
    SSLSession transportSslSession()
    {
        final Connection c = connection;
        return c == null ? null : c.sslSession();
    }

    @Override
    void onGoAway(final int lastStreamId, final Status status)
    {
        final boolean first = !goAwayReceived;
        goAwayReceived = true;
        if (!first && lastStreamId >= goAwayLastStreamId)
        {
            return; // a later GOAWAY may only exclude more calls: one that excludes none changes nothing
        }
        goAwayLastStreamId = Math.min(goAwayLastStreamId, lastStreamId);
        draining = true;
        if (first)
        {
            channel.connectionUnusable(this, Status.UNAVAILABLE.withDescription("server going away: " +
                status.description()).withCause(CallFailureCause.of(CallFailureCause.Reason.GOAWAY)));
        }
        // calls the server never saw can fail at once (they were not processed)
        for (final int id : streams.ids())
        {
            if (id > lastStreamId)
            {
                final RpcStream stream = streams.remove(id);
                // never processed: resent on a new connection (transparent retry) where the call allows it
                if (stream != null && !((ClientSideStream)stream).retryRefused())
                {
                    stream.onConnectionClosed(Status.UNAVAILABLE.withDescription(
                        "server going away: " + status.description())
                        .withCause(CallFailureCause.of(CallFailureCause.Reason.GOAWAY)));
                }
            }
        }
        if (status.code() != StatusCode.OK)
        {
            LOG.debug("GOAWAY from {}: {}", peer(), status);
        }
        if (first && status.code() == StatusCode.RESOURCE_EXHAUSTED &&
            KeepAliveEnforcer.TOO_MANY_PINGS.equals(status.description()))
        {
            // as grpc-java: the next connections PING half as often; once per connection, however many GOAWAYs
            // the server repeats (each one doubled the interval, until keep-alive was off for good)
            channel.keepAliveTooFrequent();
        }
        if (streams.isEmpty())
        {
            closeWhenFlushed();
        }
    }

    /**
     * Every keep-alive interval: PINGs the server if calls are open (or always, with keep-alive without calls), unless
     * a PING is still unanswered ({@link KeepAlivePings}).
     */
    private void keepAliveTick()
    {
        if (closed)
        {
            disposeKeepAlive();
            return;
        }
        if (streams.isEmpty() && !channel.config().keepAliveWithoutCalls)
        {
            return;
        }
        keepAlivePings.ping();
    }

    /**
     * Sends a PING now.
     *
     * @return completes with the round trip in nanoseconds when the ACK arrives; fails with UNAVAILABLE if the
     * connection closes first. No timeout of its own: the owner bounds the wait (keep-alive has its own).
     */
    CompletableFuture<Long> ping()
    {
        final long payload = -pingPayloads.incrementAndGet();
        final PendingPing pending = new PendingPing();
        pings.put(payload, pending);
        if (closed || !write(new OutboundFrame.Control(FrameType.PING, 0, 0, payload)))
        {
            failPings();
        }
        return pending.result;
    }

    private void failPings()
    {
        for (final Long payload : pings.keySet())
        {
            final PendingPing pending = pings.remove(payload);
            if (pending != null)
            {
                pending.result.completeExceptionally(Status.UNAVAILABLE.withDescription("connection closed before " +
                    "the PING was answered").withCause(CallFailureCause.of(CallFailureCause.Reason.CONNECTION_LOST))
                    .asException());
            }
        }
    }

    @Override
    void onPingAck(final long payload)
    {
        if (payload < 0)
        {
            final PendingPing pending = pings.remove(payload);
            if (pending != null)
            {
                pending.result.complete(System.nanoTime() - pending.sentNanos);
            }
            return;
        }
        keepAlivePings.onAck(payload);
    }

    private void disposeKeepAlive()
    {
        final Disposable k = keepAlive;
        if (k != null)
        {
            k.dispose();
        }
        keepAlivePings.stop();
    }

    /**
     * A call registered above the GOAWAY's last stream id while the GOAWAY was being handled, still open when the
     * server closed the connection, was never seen by the server: it is refused (resent, or failed as refused), not
     * lost with the connection.
     */
    @Override
    void failStream(final RpcStream stream, final Status status)
    {
        if (stream.streamId > goAwayLastStreamId && stream instanceof ClientSideStream)
        {
            if (!((ClientSideStream)stream).retryRefused())
            {
                stream.onConnectionClosed(Status.UNAVAILABLE.withDescription("server going away")
                    .withCause(CallFailureCause.of(CallFailureCause.Reason.GOAWAY)));
            }
            return;
        }
        stream.onConnectionClosed(status);
    }

    @Override
    void closeWithError(final Status status)
    {
        super.closeWithError(status);
        channel.connectionUnusable(this, status);
    }

    @Override
    void connectionClosed(final Throwable cause)
    {
        disposeKeepAlive();
        failPings();
        channel.connectionUnusable(this, Status.UNAVAILABLE.withDescription("connection closed" +
            (cause != null ? ": " + cause.getMessage() : ""))
            .withCause(CallFailureCause.of(CallFailureCause.Reason.CONNECTION_LOST, cause)));
        channel.connectionClosed(this);
    }
}
