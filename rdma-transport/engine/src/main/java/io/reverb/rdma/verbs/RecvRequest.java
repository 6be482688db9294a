package io.reverb.rdma.verbs;

/**
 * ibv_recv_wr as a reusable flyweight.
 */
public final class RecvRequest extends ScatterGatherList
{
    private long wrId;

    /** @return the caller's id, returned in the completion. */
    public long wrId()
    {
        return wrId;
    }

    /** @param wrId the caller's id. @return this. */
    public RecvRequest wrId(final long wrId)
    {
        this.wrId = wrId;
        return this;
    }
}
