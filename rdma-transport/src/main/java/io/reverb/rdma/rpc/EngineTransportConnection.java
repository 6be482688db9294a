package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.MessageClaim;
import io.reverb.rdma.engine.MessageHandler;
import io.reverb.rdma.engine.MessageRefusedException;
import io.reverb.rdma.engine.SendErrorHandler;
import io.reverb.rpc.transport.ClaimResult;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.WriteClaim;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicBoolean;
import org.agrona.DirectBuffer;

/**
 * rpc-core's transport {@link Connection} over one engine connection. Claims go straight into the
 * engine's registered send ring or rendezvous buffer; inbound messages are handed over as a
 * {@link ByteBuffer} view of the receive slot or rendezvous buffer (reused, not copied).
 */
final class EngineTransportConnection
    implements Connection, WriteClaim.Committer, MessageHandler, ResourceUsage, SendErrorHandler
{
    // CHECKSTYLE.OFF: InlineFullyQualifiedName - two Connection types: rpc-core's is imported, the engine's is spelled out
    private final io.reverb.rdma.engine.Connection engine;
    // CHECKSTYLE.ON: InlineFullyQualifiedName
    private final String localAddress;
    private final String remoteAddress;
    private final int maxOutboundMessageSize;
    private final AtomicBoolean writableArmed = new AtomicBoolean();
    private final Runnable onWritable = this::fireWritable;
    private volatile ConnectionHandler handler;
    private DirectBuffer viewSource;
    private ByteBuffer view;

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - the engine's Connection (see the field)
    EngineTransportConnection(
        final io.reverb.rdma.engine.Connection engine,
        final String localAddress,
        final String remoteAddress,
        final int maxOutboundMessageSize)
    {
        this.engine = engine;
        this.localAddress = localAddress;
        this.remoteAddress = remoteAddress;
        this.maxOutboundMessageSize = maxOutboundMessageSize;
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName

    /** Starts delivery to the handler (before any event of this connection). */
    void bind(final ConnectionHandler handler)
    {
        this.handler = handler;
        engine.onClose(cause -> handler.onClose(this, cause));
        engine.setSendErrorHandler(this);
        engine.setHandler(this);
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - the engine's Connection (see the field)
    io.reverb.rdma.engine.Connection engineConnection()
    // CHECKSTYLE.ON: InlineFullyQualifiedName
    {
        return engine;
    }

    /**
     * Claims straight into the engine: the engine's claim rides in the caller's {@link WriteClaim} (its
     * {@link WriteClaim#transportState() transport state}, created once per claim object), and the engine's result
     * codes are rpc-core's, passed through.
     */
    @Override
    public int tryClaim(final int length, final WriteClaim writeClaim)
    {
        if (length > maxMessageLength())
        {
            return ClaimResult.TOO_LARGE;
        }
        final MessageClaim c = engineClaim(writeClaim);
        final int result = engine.tryClaim(length, c);
        if (result == ClaimResult.OK)
        {
            writeClaim.wrap(c.byteBuffer(), c.offset(), length, this, 0);
        }
        else if (result == ClaimResult.BACK_PRESSURED && writableArmed.compareAndSet(false, true))
        {
            engine.onWritable(onWritable);
        }
        return result;
    }

    private static MessageClaim engineClaim(final WriteClaim writeClaim)
    {
        final Object state = writeClaim.transportState();
        if (state instanceof MessageClaim)
        {
            return (MessageClaim)state;
        }
        final MessageClaim c = new MessageClaim();
        writeClaim.transportState(c);
        return c;
    }

    @Override
    public int commit(final WriteClaim writeClaim)
    {
        // CLOSED if the connection was closed before this commit (the message is lost). A close that follows the
        // commit, e.g. the peer reacting to this very message, does not unsend it: OK, as for any message sent
        // just before a close (checking afterwards reported CLOSED for a message the peer had received).
        final boolean closedBefore = engine.isClosed();
        final MessageClaim c = (MessageClaim)writeClaim.transportState();
        c.attachment(writeClaim.attachment());
        c.commit();
        return closedBefore ? ClaimResult.CLOSED : ClaimResult.OK;
    }

    @Override
    public void abort(final WriteClaim writeClaim)
    {
        ((MessageClaim)writeClaim.transportState()).abort();
    }

    @Override
    public void onSendFailed(final long messageId, final int length, final Throwable cause)
    {
        // Lost with the connection: onClose fails every call.
    }

    @Override
    public void onSendFailed(final long messageId, final int length, final Object attachment, final Throwable cause)
    {
        final ConnectionHandler h = handler;
        if (cause instanceof MessageRefusedException && attachment != null && h != null)
        {
            h.onMessageRefused(this, attachment, cause.getMessage());
        }
    }

    private void fireWritable()
    {
        writableArmed.set(false);
        final ConnectionHandler h = handler;
        if (h != null)
        {
            h.onWritable(this);
        }
    }

    @Override
    public void onMessage(final DirectBuffer buffer, final int offset, final int length)
    {
        final ByteBuffer source = buffer.byteBuffer();
        final ByteBuffer message;
        if (source != null)
        {
            if (buffer != viewSource)
            {
                viewSource = buffer;
                view = source.duplicate();
            }
            final int start = buffer.wrapAdjustment() + offset;
            view.clear();
            view.limit(start + length).position(start);
            view.order(ByteOrder.BIG_ENDIAN);
            message = view;
        }
        else
        {
            // A buffer over raw memory: copy (not the case for the shm provider).
            final byte[] bytes = new byte[length];
            buffer.getBytes(offset, bytes);
            message = ByteBuffer.wrap(bytes);
        }
        handler.onMessage(this, message);
    }

    @Override
    public int maxMessageLength()
    {
        return Math.min(engine.peerMaxInboundMessageSize(), maxOutboundMessageSize);
    }

    @Override
    public void close()
    {
        engine.closeAsync();
    }

    @Override
    public boolean isOpen()
    {
        return engine.isConnected();
    }

    @Override
    public String localAddress()
    {
        return localAddress;
    }

    @Override
    public String remoteAddress()
    {
        return remoteAddress;
    }

    @Override
    public ResourceUsage resourceUsage()
    {
        return this;
    }

    @Override
    public long buffersInUse()
    {
        return engine.isClosed() ? 0 : engine.poolBuffersInUse() + (engine.sendBytesInFlight() > 0 ? 1 : 0);
    }

    @Override
    public long bytesInUse()
    {
        return engine.isClosed() ? 0 : engine.poolBytesInUse() + engine.sendBytesInFlight();
    }

    @Override
    public String toString()
    {
        return "EngineTransportConnection{" + localAddress + " -> " + remoteAddress + ", " + engine + '}';
    }
}
