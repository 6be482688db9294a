package io.reverb.rdma.engine;

import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A region claimed by {@link Connection#tryClaim(int, MessageClaim)} for in-place serialization:
 * write {@link #length()} bytes at {@link #buffer()}[{@link #offset()}...], then {@link #commit()}
 * or {@link #abort()}, exactly once. Eager messages are written straight into the registered send
 * ring, large ones into a registered rendezvous buffer; either way the bytes are not copied again
 * before the fabric moves them.
 *
 * <p>A claim object is reusable and owned by one thread at a time; keep one per sending thread.
 * Claims are short-lived: the send ring cannot move past an open claim.
 */
public final class MessageClaim
{
    private EngineConnection connection;
    private UnsafeBuffer buffer;
    private int offset;
    private int length;
    private long messageId;
    private int frameIndex = -1;
    private BufferPool.Buffer rendezvous;
    private ByteBuffer viewSource;
    private ByteBuffer view;

    void wrap(
        final EngineConnection connection,
        final UnsafeBuffer buffer,
        final int offset,
        final int length,
        final long messageId,
        final int frameIndex,
        final BufferPool.Buffer rendezvous)
    {
        this.connection = connection;
        this.buffer = buffer;
        this.offset = offset;
        this.length = length;
        this.messageId = messageId;
        this.frameIndex = frameIndex;
        this.rendezvous = rendezvous;
    }

    /** @return the registered memory to write into (valid until commit/abort). */
    public UnsafeBuffer buffer()
    {
        return buffer;
    }

    /** @return where the message starts in {@link #buffer()}. */
    public int offset()
    {
        return offset;
    }

    /** @return the claimed length. */
    public int length()
    {
        return length;
    }

    /** @return the message's id, as later given to a {@link SendErrorHandler} if it fails. */
    public long messageId()
    {
        return messageId;
    }

    /** @return true while claimed and neither committed nor aborted. */
    public boolean isActive()
    {
        return connection != null;
    }

    /** @return true if this message goes by rendezvous (it is larger than the eager limit). */
    public boolean isRendezvous()
    {
        return rendezvous != null;
    }

    /**
     * A {@link ByteBuffer} over the claimed region, position at its start and limit at its end, for
     * writers that want one (e.g. protobuf's {@code CodedOutputStream}). The view object is cached
     * per claim and region: no allocation per message on the eager path.
     *
     * @return the view.
     */
    public ByteBuffer byteBuffer()
    {
        if (connection == null)
        {
            throw new IllegalStateException("no active claim");
        }
        final ByteBuffer source = rendezvous != null ? rendezvous.byteBuffer() : connection.ringByteBuffer();
        if (source != viewSource)
        {
            viewSource = source;
            view = source.duplicate();
        }
        view.clear();
        view.limit(offset + length);
        view.position(offset);
        return view;
    }

    /**
     * Something to hand back to the {@link SendErrorHandler} if the peer refuses this message (only a rendezvous
     * message can be refused: an eager one always fits). Call before {@link #commit()}; the engine keeps it until
     * the message is written or refused.
     *
     * @param attachment the caller's object, or null.
     */
    public void attachment(final Object attachment)
    {
        if (rendezvous != null)
        {
            rendezvous.attachment = attachment;
        }
    }

    /** Hands the message to the engine, which sends it as soon as credits allow. */
    public void commit()
    {
        final EngineConnection c = release();
        c.commit(frameIndex, rendezvous);
        frameIndex = -1;
        rendezvous = null;
    }

    /** Gives the claimed space back without sending anything. */
    public void abort()
    {
        final EngineConnection c = release();
        c.abort(frameIndex, length, rendezvous);
        frameIndex = -1;
        rendezvous = null;
    }

    private EngineConnection release()
    {
        final EngineConnection c = connection;
        if (c == null)
        {
            throw new IllegalStateException("no active claim: commit() or abort() called twice or without tryClaim");
        }
        connection = null;
        buffer = null;
        return c;
    }
}
