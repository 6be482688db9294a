package io.reverb.common;

import java.nio.ByteBuffer;

/**
 * A region of a transport's send buffer, claimed by a transport connection's {@code tryClaim(int, WriteClaim)}
 * (rpc-core's {@code Connection}, the engine's), to be written and then committed or aborted. Owned by the caller
 * and reused (as Aeron's {@code BufferClaim}): the transport {@link #wrap wraps} it around its own memory on each successful claim.
 *
 * <p>{@link #buffer()} is a {@code ByteBuffer} dedicated to this claim until commit or abort (for RDMA, a view of
 * the registered slot): its position is {@link #offset()} and its limit {@code offset() + length()}. The writer may
 * move position and limit within that range and change the byte order; the transport must not depend on them.
 * Exactly {@link #length()} bytes starting at {@link #offset()} are sent on commit.
 */
public final class WriteClaim
{
    /**
     * The transport side of a claim.
     */
    public interface Committer
    {
        /**
         * Sends the claimed bytes.
         *
         * @param claim the claim.
         * @return {@link ClaimResult#OK} or {@link ClaimResult#CLOSED} (the bytes are dropped and the space
         * released).
         */
        int commit(WriteClaim claim);

        /**
         * Releases the claimed space without sending.
         *
         * @param claim the claim.
         */
        void abort(WriteClaim claim);
    }

    private ByteBuffer buffer;
    private int offset;
    private int length;
    private Committer committer;
    private long token;
    private Object transportState;
    private Object attachment;
    private ByteBuffer viewSource;
    private ByteBuffer view;

    /**
     * Transport use: points this claim at claimed memory.
     *
     * @param buffer    a buffer dedicated to the claim.
     * @param offset    start of the claimed region in buffer.
     * @param length    claimed length.
     * @param committer who commits or aborts it.
     * @param token     transport-private value (e.g. a slot index).
     */
    public void wrap(final ByteBuffer buffer, final int offset, final int length, final Committer committer, final long token)
    {
        this.buffer = buffer;
        this.offset = offset;
        this.length = length;
        this.committer = committer;
        this.token = token;
        buffer.limit(offset + length).position(offset);
    }

    /**
     * Transport use: as {@link #wrap}, for a buffer that several claims use at once (e.g. a send ring claimed by
     * several threads): the claim writes through its own view of {@code shared}, a duplicate made when this claim
     * object is first wrapped around {@code shared} and kept for the next claims in it, so a claim allocates
     * nothing. The view's byte order is whatever the last writer left (writers set it, see the class comment).
     *
     * @param shared    the transport's buffer; the claim never moves its position or limit.
     * @param offset    start of the claimed region in shared.
     * @param length    claimed length.
     * @param committer who commits or aborts it.
     * @param token     transport-private value (e.g. a message id).
     */
    public void wrapShared(final ByteBuffer shared, final int offset, final int length, final Committer committer,
        final long token)
    {
        if (shared != viewSource)
        {
            view = shared.duplicate();
            viewSource = shared;
        }
        view.clear();
        wrap(view, offset, length, committer, token);
    }

    /**
     * @return the buffer to write into; valid until commit or abort.
     */
    public ByteBuffer buffer()
    {
        return buffer;
    }

    /**
     * @return where the claimed region starts in {@link #buffer()}.
     */
    public int offset()
    {
        return offset;
    }

    /**
     * @return the claimed length.
     */
    public int length()
    {
        return length;
    }

    /**
     * @return the transport's token.
     */
    public long token()
    {
        return token;
    }

    /**
     * Transport use: an object a transport keeps with this claim object, for the current claim or from one claim
     * to the next (the RDMA engine keeps the pooled buffer of a large message here between claim and commit), so
     * that no per-connection table maps a claim to the transport's own state. A claim object is used by one thread
     * at a time, so is this state.
     *
     * @return what {@link #transportState(Object)} set, or null.
     */
    public Object transportState()
    {
        return transportState;
    }

    /**
     * Transport use: see {@link #transportState()}.
     *
     * @param state the transport's state.
     */
    public void transportState(final Object state)
    {
        this.transportState = state;
    }

    /**
     * @return what {@link #attachment(Object)} set, or null.
     */
    public Object attachment()
    {
        return attachment;
    }

    /**
     * Caller use: an object the transport hands back to the sender's refusal callback (rpc-core:
     * {@code ConnectionHandler.onMessageRefused}) if the peer refuses the message after it was committed (e.g. the
     * peer's memory budget for large messages is exhausted).
     * Set before {@link #commit()}; the transport takes it at commit.
     *
     * @param attachment the caller's object, or null.
     */
    public void attachment(final Object attachment)
    {
        this.attachment = attachment;
    }

    /**
     * @return true between a successful claim and its commit or abort.
     */
    public boolean isActive()
    {
        return committer != null;
    }

    /**
     * Sends the claimed bytes and releases the claim.
     *
     * @return {@link ClaimResult#OK} or {@link ClaimResult#CLOSED}.
     */
    public int commit()
    {
        final Committer c = committer;
        if (c == null)
        {
            throw new IllegalStateException("no active claim");
        }
        committer = null;
        return c.commit(this);
    }

    /**
     * Releases the claim without sending.
     */
    public void abort()
    {
        final Committer c = committer;
        if (c != null)
        {
            committer = null;
            c.abort(this);
        }
    }
}
