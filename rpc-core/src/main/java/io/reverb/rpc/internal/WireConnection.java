package io.reverb.rpc.internal;

import io.reverb.rpc.Metadata;
import io.reverb.rpc.Status;
import io.reverb.rpc.compression.Codec;
import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.wire.FrameCodec;
import io.reverb.rpc.wire.FrameHeaderFlyweight;
import io.reverb.rpc.wire.FrameType;
import io.reverb.rpc.wire.ProtocolException;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * Reverb's wire protocol over one transport connection, the part both sides ({@link ClientWireConnection},
 * {@link ServerWireConnection}) share: writing frames ({@link WireWriter}: at once into a claimed buffer, or queued in
 * order while the transport is back-pressured), parsing inbound frames and dispatching them to streams, PING answers
 * and protocol errors.
 */
abstract class WireConnection extends WireWriter
{
    private static final Status CONNECTION_CLOSED = Status.UNAVAILABLE.withDescription("connection closed")
        .withCause(CallFailureCause.of(CallFailureCause.Reason.CONNECTION_LOST));
    final int maxInboundMessageSize;
    /** Decompresses COMPRESSED messages: the channel's or the server's codecs. */
    final CodecRegistry codecs;
    private final FrameHeaderFlyweight inHeader = new FrameHeaderFlyweight();

    WireConnection(final int maxInboundMessageSize, final CodecRegistry codecs)
    {
        this.maxInboundMessageSize = maxInboundMessageSize;
        this.codecs = codecs;
    }

    // ---------------------------------------------------------------- inbound

    @Override
    public final void onMessage(final Connection connection, final ByteBuffer message)
    {
        if (closed)
        {
            return;
        }
        beforeMessage();
        FrameCodec.le(message);
        final int end = message.limit();
        int at = message.position();
        try
        {
            while (at < end)
            {
                // checks build their messages only on failure: this loop runs for every frame
                if (end - at < FrameHeaderFlyweight.HEADER_LENGTH)
                {
                    throw new ProtocolException("truncated frame header");
                }
                inHeader.wrap(message, at);
                final int frameLength = inHeader.frameLength();
                if (frameLength < FrameHeaderFlyweight.HEADER_LENGTH || frameLength > end - at)
                {
                    throw new ProtocolException("bad frame length " + frameLength);
                }
                if (inHeader.version() != FrameHeaderFlyweight.CURRENT_VERSION)
                {
                    throw new ProtocolException("unsupported protocol version " + inHeader.version());
                }
                final FrameType type = FrameType.fromValue(inHeader.type());
                if (type == null)
                {
                    throw new ProtocolException("unknown frame type " + inHeader.type());
                }
                final int flags = inHeader.flags();
                if ((flags & ~type.allowedFlags()) != 0)
                {
                    throw new ProtocolException("bad flags " + flags + " on " + type);
                }
                final int streamId = inHeader.streamId();
                final int bodyStart = at + FrameHeaderFlyweight.HEADER_LENGTH;
                final int frameEnd = at + frameLength;
                onFrame(type, flags, streamId, message, bodyStart, frameEnd);
                message.limit(end);
                at = frameEnd;
            }
        }
        catch (final ProtocolException e)
        {
            protocolError(e.getMessage());
        }
        finally
        {
            afterMessage();
        }
    }

    /** On the transport's thread, after every frame of one transport message was handled. The default does nothing. */
    void afterMessage()
    {
    }

    /**
     * Frames for a stream or the connection. Subclasses handle what is specific to their side and call
     * {@link #onCommonFrame} for the rest.
     */
    abstract void onFrame(FrameType type, int flags, int streamId, ByteBuffer buffer, int start, int end)
        throws ProtocolException;

    final void onCommonFrame(final FrameType type, final int flags, final int streamId, final ByteBuffer buffer,
        final int start, final int end) throws ProtocolException
    {
        switch (type)
        {
            case MESSAGE:
            {
                final RpcStream stream = messageTarget(streamId);
                if (stream == null)
                {
                    return; // the call already ended here (cancel, deadline): late frames are expected
                }
                if (!stream.takeCredit())
                {
                    // counted before anything is copied or inflated: what a peer sends beyond the credit would
                    // otherwise queue without bound
                    if (serverSide())
                    {
                        throw new ProtocolException("MESSAGE on stream " + streamId + " beyond the " +
                            stream.creditGranted() + " message(s) granted by REQUEST_N");
                    }
                    // a server's handler that ignores back-pressure: that call fails, and the connection's others go
                    // on (what follows for it is dropped as late)
                    stream.onUndecodableMessage(Status.RESOURCE_EXHAUSTED.withDescription("the server sent more than " +
                        "the " + stream.creditGranted() + " response(s) asked for"));
                    return;
                }
                if ((flags & FrameType.Flags.COMPRESSED) != 0)
                {
                    onCompressedMessage(stream, (flags & FrameType.Flags.END_STREAM) != 0, buffer, start, end);
                    return;
                }
                final int length = end - start;
                if (length > maxInboundMessageSize)
                {
                    stream.onOversizedMessage(length, maxInboundMessageSize);
                    return;
                }
                if (stream.inflationPending != 0 &&
                    deferBehindInflation(stream, (flags & FrameType.Flags.END_STREAM) != 0, buffer, start, end))
                {
                    return; // compressed requests of this call wait for the inflater: this one goes after them
                }
                buffer.limit(end).position(start);
                stream.onMessage(buffer, (flags & FrameType.Flags.END_STREAM) != 0);
                return;
            }
            case REQUEST_N:
            {
                FrameCodec.check(end - start >= 4, "REQUEST_N truncated");
                final int n = buffer.getInt(start);
                if (n <= 0)
                {
                    throw new ProtocolException("REQUEST_N must be positive: " + n);
                }
                final RpcStream stream = streams.get(streamId);
                if (stream != null)
                {
                    stream.onRequestN(n);
                }
                return;
            }
            case PING:
            {
                FrameCodec.check(end - start >= 8 && streamId == 0, "bad PING");
                final long payload = buffer.getLong(start);
                if ((flags & FrameType.Flags.ACK) == 0)
                {
                    if (acceptPing())
                    {
                        writeReply(new OutboundFrame.Control(FrameType.PING, FrameType.Flags.ACK, 0, payload));
                    }
                }
                else
                {
                    onPingAck(payload);
                }
                return;
            }
            case GOAWAY:
            {
                FrameCodec.check(end - start >= 8 && streamId == 0, "bad GOAWAY");
                final int lastStreamId = buffer.getInt(start);
                final int code = buffer.getInt(start + 4);
                final String[] description = new String[1];
                FrameCodec.getString(buffer, start + 8, end, description);
                onGoAway(lastStreamId, Status.fromCodeValue(code).withDescription(description[0]));
                return;
            }
            default:
                throw new ProtocolException("unexpected " + type + " frame");
        }
    }

    /**
     * On the transport's thread: the open stream a MESSAGE is for.
     *
     * @param streamId the frame's stream id.
     * @return the stream, or null if none is open under that id.
     */
    RpcStream messageTarget(final int streamId)
    {
        return streams.get(streamId);
    }

    /**
     * A COMPRESSED MESSAGE: decompressed (see {@link #inflate}) into a heap buffer of at most the inbound limit. A
     * codec this side does not have, a message that inflates past the limit or bytes the codec cannot read fail that
     * call only (the frame was well formed, the connection goes on); a malformed codec name is a protocol
     * error like any malformed frame.
     */
    private void onCompressedMessage(final RpcStream stream, final boolean endOfStream, final ByteBuffer buffer,
        final int start, final int end) throws ProtocolException
    {
        FrameCodec.check(end - start >= 1, "compressed MESSAGE truncated");
        final int nameLength = buffer.get(start) & 0xFF;
        FrameCodec.check(nameLength > 0 && nameLength <= end - start - 1, "bad codec name length " + nameLength);
        final String name = FrameCodec.ascii(buffer, start + 1, nameLength);
        try
        {
            CodecRegistry.checkName(name);
        }
        catch (final IllegalArgumentException e)
        {
            throw new ProtocolException("invalid codec name in a compressed MESSAGE");
        }
        final String kind = serverSide() ? "request" : "response";
        final Codec codec = codecs.lookup(name);
        if (codec == null)
        {
            // grpc-java's words and codes: the server answers UNIMPLEMENTED, the client fails INTERNAL
            stream.onUndecodableMessage((serverSide() ? Status.UNIMPLEMENTED : Status.INTERNAL).withDescription(
                "Can't find decompressor for " + name + " (the " + kind + " was compressed with it; this side has " +
                    codecs.names() + ")"));
            return;
        }
        final int compressedStart = start + 1 + nameLength;
        inflate(stream, codec, name, endOfStream, buffer, compressedStart, end);
    }

    /**
     * Inflates a compressed message and delivers it. Here on the transport's thread (the client's side: its transport
     * serves its own calls); the server overrides it to inflate on its inflater lane.
     *
     * @param stream      the call.
     * @param codec       the codec named in the frame.
     * @param name        its name.
     * @param endOfStream the peer sends no more.
     * @param buffer      the frame's buffer.
     * @param start       where the compressed bytes start.
     * @param end         where they end.
     */
    void inflate(final RpcStream stream, final Codec codec, final String name, final boolean endOfStream,
        final ByteBuffer buffer, final int start, final int end)
    {
        final byte[][] out = new byte[1][];
        final int length;
        try
        {
            length = InboundDecompression.decompress(codec, buffer, start, end, maxInboundMessageSize, out);
        }
        catch (final IOException | RuntimeException e)
        {
            stream.onUndecodableMessage(undecodable(serverSide(), name, end - start, e));
            return;
        }
        if (length == InboundDecompression.TOO_LARGE)
        {
            stream.onUndecodableMessage(tooLarge(serverSide(), name, end - start, maxInboundMessageSize));
            return;
        }
        stream.onMessage(ByteBuffer.wrap(out[0], 0, length), endOfStream);
    }

    /**
     * An uncompressed message of a call whose compressed messages still wait to be inflated: it must follow them.
     *
     * @return true if it was queued behind them (or its call failed for lack of room); false to deliver it now.
     */
    boolean deferBehindInflation(final RpcStream stream, final boolean endOfStream, final ByteBuffer buffer,
        final int start, final int end)
    {
        return false;
    }

    /** @return the status of a call whose compressed message the codec could not read. */
    static Status undecodable(final boolean serverSide, final String name, final int compressedLength,
        final Exception e)
    {
        return Status.INTERNAL.withDescription("failed to decompress the " + (serverSide ? "request" : "response") +
            " message (" + name + ", " + compressedLength + " bytes): " + e).withCause(e);
    }

    /** @return the status of a call whose compressed message inflates past the limit. */
    static Status tooLarge(final boolean serverSide, final String name, final int compressedLength, final int limit)
    {
        return Status.RESOURCE_EXHAUSTED.withDescription("decompressed " + (serverSide ? "request" : "response") +
            " message exceeds the limit of " + limit + " bytes (" + name + ", " + compressedLength +
            " bytes compressed; maxInboundMessageSize)");
    }

    static Metadata readMetadata(final ByteBuffer buffer, final int start, final int end) throws ProtocolException
    {
        final Metadata metadata = new Metadata();
        FrameCodec.getMetadata(buffer, start, end, metadata);
        return metadata;
    }

    /** Like {@link #readMetadata} but null for an empty block, which is the common case. */
    static Metadata readMetadataOrNull(final ByteBuffer buffer, final int start, final int end) throws ProtocolException
    {
        if (end - start >= 2 && buffer.getShort(start) == 0)
        {
            return null;
        }
        return readMetadata(buffer, start, end);
    }

    void onPingAck(final long payload)
    {
    }

    abstract void onGoAway(int lastStreamId, Status status);

    /**
     * A PING arrived: answer it? A server refuses clients that ping too often (and closes the connection).
     *
     * @return true to answer.
     */
    boolean acceptPing()
    {
        return true;
    }

    /**
     * Writes a reply the peer provoked (a PING's ACK, the STATUS of a call refused or not found). A peer that keeps
     * provoking them and reads none would queue them behind back-pressure without end: once
     * {@link WireWriter#MAX_QUEUED_REPLIES} wait, the connection is closed instead (its calls fail UNAVAILABLE).
     *
     * @param frame the reply.
     */
    final void writeReply(final OutboundFrame frame)
    {
        if (mayQueueReply())
        {
            write(new Reply(frame));
            return;
        }
        PEER_LOG.log("replies not read", "peer " + peer() + " sends faster than it reads: " + MAX_QUEUED_REPLIES +
            " replies wait unread; closing the connection", null);
        closeWithError(Status.UNAVAILABLE.withDescription("the peer did not read its replies (" + MAX_QUEUED_REPLIES +
            " waiting); connection closed"));
    }

    /**
     * The peer broke the protocol: tell it (best effort), fail our calls, close the connection.
     */
    void protocolError(final String message)
    {
        PEER_LOG.log("protocol error", "protocol error from " + peer() + ": " + message + "; closing the connection", null);
        write(new OutboundFrame.GoAway(0, Status.INTERNAL.withDescription("protocol error: " + message)));
        closeWithError(Status.INTERNAL.withDescription("protocol error: " + message));
    }

    /**
     * Fails every call with the status at once (without waiting for the transport) and closes the connection.
     *
     * @param status what the calls end with.
     */
    void closeWithError(final Status status)
    {
        final Connection c = connection;
        failStreams(status);
        closed = true;
        dropPending();
        if (c != null)
        {
            c.close();
        }
    }

    final void failStreams(final Status status)
    {
        // first, so that no stream registers after the sweep below (a client assigns no id once this has run)
        failUnregistered(status);
        for (final RpcStream stream : streams.clear())
        {
            try
            {
                failStream(stream, status);
            }
            catch (final Throwable t)
            {
                PEER_LOG.log("failing a call threw", "failing a call on " + peer() + " threw", t);
            }
        }
    }

    /**
     * The connection ends: ends the streams that were started but hold no stream id yet, and takes no new ones. The
     * default has none.
     *
     * @param status why.
     */
    void failUnregistered(final Status status)
    {
    }

    /**
     * The connection ended under a stream that was still open.
     *
     * @param stream the stream, already removed.
     * @param status why.
     */
    void failStream(final RpcStream stream, final Status status)
    {
        stream.onConnectionClosed(status);
    }

    @Override
    public void onClose(final Connection connection, final Throwable cause)
    {
        closed = true;
        dropPending();
        failStreams(cause == null ?
            CONNECTION_CLOSED :
            Status.UNAVAILABLE.withDescription("connection lost: " + cause.getMessage())
                .withCause(CallFailureCause.of(CallFailureCause.Reason.CONNECTION_LOST, cause)));
        connectionClosed(cause);
    }

    abstract void connectionClosed(Throwable cause);
}
