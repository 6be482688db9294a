package io.reverb.rdma.verbs;

/**
 * ibv_send_wr as a reusable flyweight: set the fields, post, set them again. The provider copies
 * what it needs during {@link QueuePair#postSend(SendRequest)}, so the request may be reused as
 * soon as the call returns. (DiSNi's {@code SVCPostSend} cannot change opcode or immediate in
 * place; the DiSNi provider deals with that, callers need not.)
 */
public final class SendRequest extends ScatterGatherList
{
    /** IBV_SEND_FENCE. */
    public static final int FLAG_FENCE = 1;
    /** IBV_SEND_SIGNALED: produce a completion on the send CQ even on success. */
    public static final int FLAG_SIGNALED = 2;
    /** IBV_SEND_SOLICITED. */
    public static final int FLAG_SOLICITED = 4;
    /** IBV_SEND_INLINE. */
    public static final int FLAG_INLINE = 8;

    private long wrId;
    private WrOpcode opcode = WrOpcode.SEND;
    private int flags = FLAG_SIGNALED;
    private int immData;
    private long remoteAddress;
    private int rkey;
    private boolean completedAtPost;

    /** Resets to a signaled SEND with no SGE. @return this. */
    public SendRequest reset()
    {
        wrId = 0;
        opcode = WrOpcode.SEND;
        flags = FLAG_SIGNALED;
        immData = 0;
        remoteAddress = 0;
        rkey = 0;
        completedAtPost = false;
        clearSge();
        return this;
    }

    /**
     * Output of {@link QueuePair#postSend}, on a QP that {@link QueuePair#completesAtPost() completes at post}: true
     * if this request completed successfully during the call (its bytes are in the peer's memory), so that a caller
     * may count an unsignaled one complete at once; false if it did not (a failed request still produces its error
     * completion, signaled or not).
     *
     * @return whether the last post of this request completed successfully during the call.
     */
    public boolean completedAtPost()
    {
        return completedAtPost;
    }

    /**
     * Set by providers only, during {@link QueuePair#postSend}.
     *
     * @param completed whether the request completed successfully during the call.
     */
    public void completedAtPost(final boolean completed)
    {
        this.completedAtPost = completed;
    }

    /** @return the caller's id, returned in the completion. */
    public long wrId()
    {
        return wrId;
    }

    /** @param wrId the caller's id. @return this. */
    public SendRequest wrId(final long wrId)
    {
        this.wrId = wrId;
        return this;
    }

    /** @return the opcode. */
    public WrOpcode opcode()
    {
        return opcode;
    }

    /** @param opcode the opcode. @return this. */
    public SendRequest opcode(final WrOpcode opcode)
    {
        this.opcode = opcode;
        return this;
    }

    /** @return {@code FLAG_*} bit set. */
    public int flags()
    {
        return flags;
    }

    /** @param flags {@code FLAG_*} bit set. @return this. */
    public SendRequest flags(final int flags)
    {
        this.flags = flags;
        return this;
    }

    /** @return true if {@link #FLAG_SIGNALED} is set. */
    public boolean isSignaled()
    {
        return (flags & FLAG_SIGNALED) != 0;
    }

    /** @return the immediate (host order), for *_WITH_IMM. */
    public int immData()
    {
        return immData;
    }

    /** @param immData the immediate in host order; providers convert to network order on the wire. @return this. */
    public SendRequest immData(final int immData)
    {
        this.immData = immData;
        return this;
    }

    /** @return remote address, for RDMA operations. */
    public long remoteAddress()
    {
        return remoteAddress;
    }

    /** @param remoteAddress remote address, for RDMA operations. @return this. */
    public SendRequest remoteAddress(final long remoteAddress)
    {
        this.remoteAddress = remoteAddress;
        return this;
    }

    /** @return remote key, for RDMA operations. */
    public int rkey()
    {
        return rkey;
    }

    /** @param rkey remote key, for RDMA operations. @return this. */
    public SendRequest rkey(final int rkey)
    {
        this.rkey = rkey;
        return this;
    }

    @Override
    public String toString()
    {
        return "SendRequest{wrId=" + wrId + ", opcode=" + opcode + ", flags=" + flags + ", imm=" + immData +
            ", remoteAddress=" + remoteAddress + ", rkey=" + rkey + ", sges=" + sgeCount() + '}';
    }
}
