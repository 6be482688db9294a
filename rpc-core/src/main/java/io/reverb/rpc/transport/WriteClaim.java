package io.reverb.rpc.transport;

import java.nio.ByteBuffer;

/**
 * A region of a transport's send buffer, claimed by {@link Connection#tryClaim(int, WriteClaim)}, to be written
 * and then committed or aborted. Owned by the caller and reused (as Aeron's {@code BufferClaim}): the transport
 * {@link #wrap wraps} it around its own memory on each successful claim.
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
     * Transport use: state a transport keeps with this claim object from one claim to the next, e.g. its own
     * claim of the memory (the RDMA engine's), so that no per-connection table maps one claim to the other. A claim
     * object is used by one thread at a time, so is this state.
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
     * Caller use: an object the transport hands back to {@link ConnectionHandler#onMessageRefused} if the peer
     * refuses the message after it was committed (e.g. the peer's memory budget for large messages is exhausted).
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
