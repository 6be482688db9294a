package io.reverb.rdma.engine;

/**
 * Counters of one connection (or, from {@link RdmaEngine#stats()}, of every connection of an engine).
 * Plain fields written by the owning thread (sender-side under the connection's send lock,
 * receiver-side by the poller) and read racily: good for metrics and tests, free on the hot path.
 */
public class ConnectionStats
{
    long eagerMessagesSent;
    long eagerBytesSent;
    long rendezvousMessagesSent;
    long rendezvousBytesSent;
    long eagerMessagesReceived;
    long eagerBytesReceived;
    long rendezvousMessagesReceived;
    long rendezvousBytesReceived;
    long sendsPosted;
    long creditOnlySends;
    long creditStalls;
    long sendQueueStalls;
    long rendezvousQueued;
    long rendezvousRefused;
    long rendezvousBudgetWaits;
    long rendezvousAllocationFailures;
    long rnrErrors;
    long failedSends;
    long directWritesSent;
    long rendezvousAbortsSent;
    long rendezvousAbortsReceived;

    /** @return eager messages posted. */
    public long eagerMessagesSent()
    {
        return eagerMessagesSent;
    }

    /** @return eager payload bytes posted. */
    public long eagerBytesSent()
    {
        return eagerBytesSent;
    }

    /** @return rendezvous messages written to the peer. */
    public long rendezvousMessagesSent()
    {
        return rendezvousMessagesSent;
    }

    /** @return rendezvous payload bytes written to the peer. */
    public long rendezvousBytesSent()
    {
        return rendezvousBytesSent;
    }

    /** @return eager messages delivered to the handler. */
    public long eagerMessagesReceived()
    {
        return eagerMessagesReceived;
    }

    /** @return eager payload bytes delivered. */
    public long eagerBytesReceived()
    {
        return eagerBytesReceived;
    }

    /** @return rendezvous messages delivered. */
    public long rendezvousMessagesReceived()
    {
        return rendezvousMessagesReceived;
    }

    /** @return rendezvous payload bytes delivered. */
    public long rendezvousBytesReceived()
    {
        return rendezvousBytesReceived;
    }

    /** @return SEND work requests posted (each may carry several coalesced messages). */
    public long sendsPosted()
    {
        return sendsPosted;
    }

    /** @return SENDs that only returned credits or carried control frames. */
    public long creditOnlySends()
    {
        return creditOnlySends;
    }

    /** @return times committed messages had to wait for credits. */
    public long creditStalls()
    {
        return creditStalls;
    }

    /** @return times posting waited because the send CQ/queue held as many unreaped completions as it can. */
    public long sendQueueStalls()
    {
        return sendQueueStalls;
    }

    /** @return incoming rendezvous requests that had to wait for a pool buffer. */
    public long rendezvousQueued()
    {
        return rendezvousQueued;
    }

    /** @return incoming rendezvous requests refused (too large, over the memory budget, or memory not registered). */
    public long rendezvousRefused()
    {
        return rendezvousRefused;
    }

    /** @return incoming rendezvous requests that waited because the engine-wide rendezvous memory budget was taken. */
    public long rendezvousBudgetWaits()
    {
        return rendezvousBudgetWaits;
    }

    /** @return rendezvous receive buffers whose registration failed (each refused one RTS). */
    public long rendezvousAllocationFailures()
    {
        return rendezvousAllocationFailures;
    }

    /** @return RNR_RETRY_EXC_ERR completions seen: must stay 0 (credits prevent them). */
    public long rnrErrors()
    {
        return rnrErrors;
    }

    /** @return messages reported to the {@link SendErrorHandler}. */
    public long failedSends()
    {
        return failedSends;
    }

    /**
     * @return rendezvous messages written straight into the receiver's granted buffer, mapped (shm), rather than
     * copied there by the fabric; also counted in {@link #rendezvousMessagesSent()}.
     */
    public long directWritesSent()
    {
        return directWritesSent;
    }

    /** @return direct writes given up after their CTS (claim aborted or never taken): ABORT sent, nothing delivered. */
    public long rendezvousAbortsSent()
    {
        return rendezvousAbortsSent;
    }

    /** @return ABORTs received: granted buffers the peer gave back unwritten. */
    public long rendezvousAbortsReceived()
    {
        return rendezvousAbortsReceived;
    }

    void add(final ConnectionStats o)
    {
        eagerMessagesSent += o.eagerMessagesSent;
        eagerBytesSent += o.eagerBytesSent;
        rendezvousMessagesSent += o.rendezvousMessagesSent;
        rendezvousBytesSent += o.rendezvousBytesSent;
        eagerMessagesReceived += o.eagerMessagesReceived;
        eagerBytesReceived += o.eagerBytesReceived;
        rendezvousMessagesReceived += o.rendezvousMessagesReceived;
        rendezvousBytesReceived += o.rendezvousBytesReceived;
        sendsPosted += o.sendsPosted;
        creditOnlySends += o.creditOnlySends;
        creditStalls += o.creditStalls;
        sendQueueStalls += o.sendQueueStalls;
        rendezvousQueued += o.rendezvousQueued;
        rendezvousRefused += o.rendezvousRefused;
        rendezvousBudgetWaits += o.rendezvousBudgetWaits;
        rendezvousAllocationFailures += o.rendezvousAllocationFailures;
        rnrErrors += o.rnrErrors;
        failedSends += o.failedSends;
        directWritesSent += o.directWritesSent;
        rendezvousAbortsSent += o.rendezvousAbortsSent;
        rendezvousAbortsReceived += o.rendezvousAbortsReceived;
    }

    @Override
    public String toString()
    {
        return "ConnectionStats{eagerSent=" + eagerMessagesSent + "/" + eagerBytesSent + "B, rdvSent=" + rendezvousMessagesSent +
            "/" + rendezvousBytesSent + "B, eagerRecv=" + eagerMessagesReceived + "/" + eagerBytesReceived + "B, rdvRecv=" +
            rendezvousMessagesReceived + "/" + rendezvousBytesReceived + "B, sends=" + sendsPosted + ", creditOnly=" +
            creditOnlySends + ", creditStalls=" + creditStalls + ", sendQueueStalls=" + sendQueueStalls + ", rdvQueued=" +
            rendezvousQueued + ", rdvRefused=" + rendezvousRefused + ", rnr=" + rnrErrors + ", failedSends=" + failedSends +
            ", directSent=" + directWritesSent + ", abortsSent=" + rendezvousAbortsSent + ", abortsRecv=" +
            rendezvousAbortsReceived + '}';
    }
}
