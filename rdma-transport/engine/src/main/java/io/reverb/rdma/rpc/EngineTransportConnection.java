package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.MessageHandler;
import io.reverb.rdma.engine.MessageRefusedException;
import io.reverb.rdma.engine.SendErrorHandler;
import io.reverb.common.ClaimResult;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.common.WriteClaim;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.net.ssl.SSLSession;
import org.agrona.DirectBuffer;

/**
 * rpc-core's transport {@link Connection} over one engine connection. Claims go straight into the
 * engine's registered send ring or rendezvous buffer: the engine takes rpc-core's {@link WriteClaim} itself and
 * commits and aborts it, so there is one claim object; inbound messages are handed over as a
 * {@link ByteBuffer} view of the receive slot or rendezvous buffer (reused, not copied).
 */
final class EngineTransportConnection
    implements Connection, MessageHandler, ResourceUsage, SendErrorHandler
{
    // CHECKSTYLE.OFF: InlineFullyQualifiedName - two Connection types: rpc-core's is imported, the engine's is spelled out
    private final io.reverb.rdma.engine.Connection engine;
    // CHECKSTYLE.ON: InlineFullyQualifiedName
    private final String localAddress;
    private final String remoteAddress;
    private final int maxOutboundMessageSize;
    private final AtomicBoolean writableArmed = new AtomicBoolean();
    private final Runnable onWritable = this::fireWritable;
    /** A {@code reverb://} connection that moved to shm: the TLS session of the tcp connection it moved from. */
    private volatile SSLSession inheritedTls;
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
        engine.onClose(cause -> this.handler.onClose(this, cause));
        engine.setSendErrorHandler(this);
        engine.setHandler(this);
    }

    /**
     * Hands the connection's events to another handler from now on: {@code reverb://} negotiates the fabric with a
     * handler of its own, then gives the connection to the RPC layer's. Called on the connection's delivery thread
     * (from the negotiating handler's {@code onMessage}), or before any message can arrive, so that no event is
     * delivered to the old handler after this returns; the one {@code onClose} goes to the handler bound last.
     */
    void rebind(final ConnectionHandler next)
    {
        this.handler = next;
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - the engine's Connection (see the field)
    io.reverb.rdma.engine.Connection engineConnection()
    // CHECKSTYLE.ON: InlineFullyQualifiedName
    {
        return engine;
    }

    /**
     * Claims straight into the engine, which wraps the caller's {@link WriteClaim} around its memory and is its
     * committer (commit returns CLOSED only if the connection was closed before the commit; a refused message's
     * attachment comes back through {@link #onSendFailed(long, int, Object, Throwable)}). The engine's result codes
     * are rpc-core's, passed through; here only the transport's length limit and the writable wake-up.
     */
    @Override
    public int tryClaim(final int length, final WriteClaim writeClaim)
    {
        if (length > maxMessageLength())
        {
            return ClaimResult.TOO_LARGE;
        }
        final int result = engine.tryClaim(length, writeClaim);
        if (result == ClaimResult.BACK_PRESSURED && writableArmed.compareAndSet(false, true))
        {
            engine.onWritable(onWritable);
        }
        return result;
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
    public void onBatchEnd()
    {
        handler.onReadComplete(this);
    }

    @Override
    public boolean signalsReadComplete()
    {
        return true;
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
    public SSLSession sslSession()
    {
        final SSLSession own = engine.sslSession();
        return own != null ? own : inheritedTls;
    }

    /**
     * A {@code reverb://} connection moved here (shm) from a tcp connection inside TLS: {@link #sslSession()} is that
     * connection's session from now on (set before the RPC layer sees this connection).
     *
     * @param tls the tcp connection's session, or null.
     */
    void inheritTls(final SSLSession tls)
    {
        this.inheritedTls = tls;
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
