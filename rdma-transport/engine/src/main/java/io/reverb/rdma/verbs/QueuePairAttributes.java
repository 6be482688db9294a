package io.reverb.rdma.verbs;

import java.util.Objects;

/**
 * ibv_qp_init_attr for an RC queue pair, plus the disconnect callback rdma_cm would deliver as an
 * event. Mutable builder-style holder; copied by the provider at creation.
 */
public final class QueuePairAttributes
{
    private ProtectionDomain pd;
    private CompletionQueue sendCq;
    private CompletionQueue recvCq;
    private int maxSendWr = 128;
    private int maxRecvWr = 128;
    private int maxSge = 1;
    private int maxInlineData = 0;
    private Runnable disconnectHandler;

    /** @return the PD. */
    public ProtectionDomain pd()
    {
        return pd;
    }

    /** @param pd the PD; the QP reaches only this PD's memory, and peers reach only it through this QP. @return this. */
    public QueuePairAttributes pd(final ProtectionDomain pd)
    {
        this.pd = pd;
        return this;
    }

    /** @return send CQ. */
    public CompletionQueue sendCq()
    {
        return sendCq;
    }

    /** @param cq CQ for send-side completions. @return this. */
    public QueuePairAttributes sendCq(final CompletionQueue cq)
    {
        this.sendCq = cq;
        return this;
    }

    /** @return receive CQ. */
    public CompletionQueue recvCq()
    {
        return recvCq;
    }

    /** @param cq CQ for receive completions (may be the send CQ). @return this. */
    public QueuePairAttributes recvCq(final CompletionQueue cq)
    {
        this.recvCq = cq;
        return this;
    }

    /** @return max outstanding send requests. */
    public int maxSendWr()
    {
        return maxSendWr;
    }

    /** @param n max outstanding send requests. @return this. */
    public QueuePairAttributes maxSendWr(final int n)
    {
        this.maxSendWr = n;
        return this;
    }

    /** @return max outstanding receive requests. */
    public int maxRecvWr()
    {
        return maxRecvWr;
    }

    /** @param n max outstanding receive requests. @return this. */
    public QueuePairAttributes maxRecvWr(final int n)
    {
        this.maxRecvWr = n;
        return this;
    }

    /** @return max SGEs per request. */
    public int maxSge()
    {
        return maxSge;
    }

    /** @param n max SGEs per request, at most {@link ScatterGatherList#MAX_SGE}. @return this. */
    public QueuePairAttributes maxSge(final int n)
    {
        this.maxSge = n;
        return this;
    }

    /** @return max inline bytes. */
    public int maxInlineData()
    {
        return maxInlineData;
    }

    /** @param n max inline bytes (a hint; providers may support 0). @return this. */
    public QueuePairAttributes maxInlineData(final int n)
    {
        this.maxInlineData = n;
        return this;
    }

    /** @return called once when the connection goes down (peer disconnect, peer death, local close). */
    public Runnable disconnectHandler()
    {
        return disconnectHandler;
    }

    /** @param handler called once, on a provider thread, when the connection goes down; may be null. @return this. */
    public QueuePairAttributes disconnectHandler(final Runnable handler)
    {
        this.disconnectHandler = handler;
        return this;
    }

    /**
     * @throws IllegalArgumentException naming the first invalid field.
     */
    public void validate()
    {
        Objects.requireNonNull(pd, "pd");
        Objects.requireNonNull(sendCq, "sendCq");
        Objects.requireNonNull(recvCq, "recvCq");
        if (maxSendWr <= 0 || maxRecvWr <= 0)
        {
            throw new IllegalArgumentException("maxSendWr and maxRecvWr must be > 0");
        }
        if (maxSge <= 0 || maxSge > ScatterGatherList.MAX_SGE)
        {
            throw new IllegalArgumentException("maxSge must be in 1.." + ScatterGatherList.MAX_SGE + ": " + maxSge);
        }
    }
}
