package io.reverb.rdma.engine;

import io.reverb.common.counters.CounterGroup;
import org.agrona.concurrent.status.AtomicCounter;

/**
 * Counters of one connection (or, from {@link RdmaEngine#stats()}, of every connection of an engine).
 * Each is an Agrona {@link AtomicCounter} in the process's counters file ({@code reverb-stat} reads them; so do
 * the Micrometer meters): written by its one owning thread (sender-side under the connection's send lock,
 * receiver-side by the poller) with an ordered store, no lock, no allocation; read racily from any thread.
 */
public class ConnectionStats
{
    AtomicCounter eagerMessagesSent;
    AtomicCounter eagerBytesSent;
    AtomicCounter rendezvousMessagesSent;
    AtomicCounter rendezvousBytesSent;
    AtomicCounter eagerMessagesReceived;
    AtomicCounter eagerBytesReceived;
    AtomicCounter rendezvousMessagesReceived;
    AtomicCounter rendezvousBytesReceived;
    AtomicCounter sendsPosted;
    AtomicCounter creditOnlySends;
    AtomicCounter unsignaledSends;
    AtomicCounter sendCompletions;
    AtomicCounter creditStalls;
    AtomicCounter sendQueueStalls;
    AtomicCounter rendezvousQueued;
    AtomicCounter rendezvousRefused;
    AtomicCounter rendezvousBudgetWaits;
    AtomicCounter rendezvousAllocationFailures;
    AtomicCounter rnrErrors;
    AtomicCounter failedSends;
    AtomicCounter directWritesSent;
    AtomicCounter rendezvousAbortsSent;
    AtomicCounter rendezvousGrantedAtCommit;
    AtomicCounter rendezvousAbortsReceived;

    /** Counters in this process's memory only (totals, snapshots). */
    ConnectionStats()
    {
        this(CounterGroup.detached("connection stats"));
    }

    /**
     * @param group where the counters are allocated (a connection's group in the counters file, or an engine's for
     *              the totals of its closed connections).
     */
    ConnectionStats(final CounterGroup group)
    {
        this(group, "");
    }

    /**
     * @param group  where the counters are allocated.
     * @param prefix put before each counter's name (the engine's totals: "closed connections: ").
     */
    ConnectionStats(final CounterGroup group, final String prefix)
    {
        eagerMessagesSent = group.counter(prefix + "eager messages sent");
        eagerBytesSent = group.counter(prefix + "eager bytes sent");
        rendezvousMessagesSent = group.counter(prefix + "rendezvous messages sent");
        rendezvousBytesSent = group.counter(prefix + "rendezvous bytes sent");
        eagerMessagesReceived = group.counter(prefix + "eager messages received");
        eagerBytesReceived = group.counter(prefix + "eager bytes received");
        rendezvousMessagesReceived = group.counter(prefix + "rendezvous messages received");
        rendezvousBytesReceived = group.counter(prefix + "rendezvous bytes received");
        sendsPosted = group.counter(prefix + "sends posted");
        creditOnlySends = group.counter(prefix + "credit only sends");
        unsignaledSends = group.counter(prefix + "unsignaled sends");
        sendCompletions = group.counter(prefix + "send completions");
        creditStalls = group.counter(prefix + "credit stalls");
        sendQueueStalls = group.counter(prefix + "send queue stalls");
        rendezvousQueued = group.counter(prefix + "rendezvous queued");
        rendezvousRefused = group.counter(prefix + "rendezvous refused");
        rendezvousBudgetWaits = group.counter(prefix + "rendezvous budget waits");
        rendezvousAllocationFailures = group.counter(prefix + "rendezvous allocation failures");
        rnrErrors = group.counter(prefix + "rnr errors");
        failedSends = group.counter(prefix + "failed sends");
        directWritesSent = group.counter(prefix + "direct writes sent");
        rendezvousAbortsSent = group.counter(prefix + "rendezvous aborts sent");
        rendezvousGrantedAtCommit = group.counter(prefix + "rendezvous granted before commit");
        rendezvousAbortsReceived = group.counter(prefix + "rendezvous aborts received");
    }

    /**
     * Moves the values into counters of this process's memory, so that the connection's counters in the file can
     * be freed while {@code stats()} of the closed connection still answers. Called once the connection is closed.
     */
    void detach()
    {
        final ConnectionStats copy = new ConnectionStats();
        copy.add(this);
        take(copy);
    }

    /**
     * Moves the values into new counters of a group (a connection's in the counters file, once its peer is
     * authenticated). The caller makes sure no thread counts meanwhile.
     *
     * @param group where the counters go.
     */
    void moveTo(final CounterGroup group)
    {
        final ConnectionStats copy = new ConnectionStats(group);
        copy.add(this);
        take(copy);
    }

    private void take(final ConnectionStats copy)
    {
        eagerMessagesSent = copy.eagerMessagesSent;
        eagerBytesSent = copy.eagerBytesSent;
        rendezvousMessagesSent = copy.rendezvousMessagesSent;
        rendezvousBytesSent = copy.rendezvousBytesSent;
        eagerMessagesReceived = copy.eagerMessagesReceived;
        eagerBytesReceived = copy.eagerBytesReceived;
        rendezvousMessagesReceived = copy.rendezvousMessagesReceived;
        rendezvousBytesReceived = copy.rendezvousBytesReceived;
        sendsPosted = copy.sendsPosted;
        creditOnlySends = copy.creditOnlySends;
        unsignaledSends = copy.unsignaledSends;
        sendCompletions = copy.sendCompletions;
        creditStalls = copy.creditStalls;
        sendQueueStalls = copy.sendQueueStalls;
        rendezvousQueued = copy.rendezvousQueued;
        rendezvousRefused = copy.rendezvousRefused;
        rendezvousBudgetWaits = copy.rendezvousBudgetWaits;
        rendezvousAllocationFailures = copy.rendezvousAllocationFailures;
        rnrErrors = copy.rnrErrors;
        failedSends = copy.failedSends;
        directWritesSent = copy.directWritesSent;
        rendezvousAbortsSent = copy.rendezvousAbortsSent;
        rendezvousGrantedAtCommit = copy.rendezvousGrantedAtCommit;
        rendezvousAbortsReceived = copy.rendezvousAbortsReceived;
    }

    /** @return eager messages posted. */
    public long eagerMessagesSent()
    {
        return eagerMessagesSent.get();
    }

    /** @return eager payload bytes posted. */
    public long eagerBytesSent()
    {
        return eagerBytesSent.get();
    }

    /** @return rendezvous messages written to the peer. */
    public long rendezvousMessagesSent()
    {
        return rendezvousMessagesSent.get();
    }

    /** @return rendezvous payload bytes written to the peer. */
    public long rendezvousBytesSent()
    {
        return rendezvousBytesSent.get();
    }

    /** @return eager messages delivered to the handler. */
    public long eagerMessagesReceived()
    {
        return eagerMessagesReceived.get();
    }

    /** @return eager payload bytes delivered. */
    public long eagerBytesReceived()
    {
        return eagerBytesReceived.get();
    }

    /** @return rendezvous messages delivered. */
    public long rendezvousMessagesReceived()
    {
        return rendezvousMessagesReceived.get();
    }

    /** @return rendezvous payload bytes delivered. */
    public long rendezvousBytesReceived()
    {
        return rendezvousBytesReceived.get();
    }

    /** @return SEND work requests posted (each may carry several coalesced messages). */
    public long sendsPosted()
    {
        return sendsPosted.get();
    }

    /** @return SENDs that only returned credits or carried control frames. */
    public long creditOnlySends()
    {
        return creditOnlySends.get();
    }

    /** @return SENDs posted without asking for a completion (selective signaling; a later SEND's completion covers them). */
    public long unsignaledSends()
    {
        return unsignaledSends.get();
    }

    /** @return SEND completions reaped (each accounts for itself and the unsignaled SENDs before it). */
    public long sendCompletions()
    {
        return sendCompletions.get();
    }

    /** @return times committed messages had to wait for credits. */
    public long creditStalls()
    {
        return creditStalls.get();
    }

    /** @return times posting waited because the send CQ/queue held as many unreaped completions as it can. */
    public long sendQueueStalls()
    {
        return sendQueueStalls.get();
    }

    /** @return incoming rendezvous requests that had to wait for a pool buffer. */
    public long rendezvousQueued()
    {
        return rendezvousQueued.get();
    }

    /** @return incoming rendezvous requests refused (too large, over the memory budget, or memory not registered). */
    public long rendezvousRefused()
    {
        return rendezvousRefused.get();
    }

    /** @return incoming rendezvous requests that waited because the engine-wide rendezvous memory budget was taken. */
    public long rendezvousBudgetWaits()
    {
        return rendezvousBudgetWaits.get();
    }

    /** @return rendezvous receive buffers whose registration failed (each refused one RTS). */
    public long rendezvousAllocationFailures()
    {
        return rendezvousAllocationFailures.get();
    }

    /** @return RNR_RETRY_EXC_ERR completions seen: must stay 0 (credits prevent them). */
    public long rnrErrors()
    {
        return rnrErrors.get();
    }

    /** @return messages reported to the {@link SendErrorHandler}. */
    public long failedSends()
    {
        return failedSends.get();
    }

    /**
     * @return rendezvous messages written straight into the receiver's granted buffer, mapped (shm), rather than
     * copied there by the fabric; also counted in {@link #rendezvousMessagesSent()}.
     */
    public long directWritesSent()
    {
        return directWritesSent.get();
    }

    /**
     * @return direct writes and early announcements given up after their CTS (claim aborted, or a direct write's
     * never taken): ABORT sent, nothing delivered.
     */
    public long rendezvousAbortsSent()
    {
        return rendezvousAbortsSent.get();
    }

    /**
     * @return messages announced at their claim ({@link EngineConfig#announceAtClaim(boolean)}) whose CTS was in when
     * their claimant committed: the RTS to CTS round trip was hidden entirely behind writing the message. The rest of
     * the early announcements waited for their CTS after the commit, for less than a round trip.
     */
    public long rendezvousGrantedAtCommit()
    {
        return rendezvousGrantedAtCommit.get();
    }

    /** @return ABORTs received: granted buffers the peer gave back unwritten. */
    public long rendezvousAbortsReceived()
    {
        return rendezvousAbortsReceived.get();
    }

    /** Adds another's values to these (single writer: the caller serialises calls). */
    void add(final ConnectionStats o)
    {
        eagerMessagesSent.getAndAddRelease(o.eagerMessagesSent.get());
        eagerBytesSent.getAndAddRelease(o.eagerBytesSent.get());
        rendezvousMessagesSent.getAndAddRelease(o.rendezvousMessagesSent.get());
        rendezvousBytesSent.getAndAddRelease(o.rendezvousBytesSent.get());
        eagerMessagesReceived.getAndAddRelease(o.eagerMessagesReceived.get());
        eagerBytesReceived.getAndAddRelease(o.eagerBytesReceived.get());
        rendezvousMessagesReceived.getAndAddRelease(o.rendezvousMessagesReceived.get());
        rendezvousBytesReceived.getAndAddRelease(o.rendezvousBytesReceived.get());
        sendsPosted.getAndAddRelease(o.sendsPosted.get());
        creditOnlySends.getAndAddRelease(o.creditOnlySends.get());
        unsignaledSends.getAndAddRelease(o.unsignaledSends.get());
        sendCompletions.getAndAddRelease(o.sendCompletions.get());
        creditStalls.getAndAddRelease(o.creditStalls.get());
        sendQueueStalls.getAndAddRelease(o.sendQueueStalls.get());
        rendezvousQueued.getAndAddRelease(o.rendezvousQueued.get());
        rendezvousRefused.getAndAddRelease(o.rendezvousRefused.get());
        rendezvousBudgetWaits.getAndAddRelease(o.rendezvousBudgetWaits.get());
        rendezvousAllocationFailures.getAndAddRelease(o.rendezvousAllocationFailures.get());
        rnrErrors.getAndAddRelease(o.rnrErrors.get());
        failedSends.getAndAddRelease(o.failedSends.get());
        directWritesSent.getAndAddRelease(o.directWritesSent.get());
        rendezvousAbortsSent.getAndAddRelease(o.rendezvousAbortsSent.get());
        rendezvousGrantedAtCommit.getAndAddRelease(o.rendezvousGrantedAtCommit.get());
        rendezvousAbortsReceived.getAndAddRelease(o.rendezvousAbortsReceived.get());
    }

    @Override
    public String toString()
    {
        return "ConnectionStats{eagerSent=" + eagerMessagesSent.get() + "/" + eagerBytesSent.get() + "B, rdvSent=" +
            rendezvousMessagesSent.get() + "/" + rendezvousBytesSent.get() + "B, eagerRecv=" + eagerMessagesReceived.get() +
            "/" + eagerBytesReceived.get() + "B, rdvRecv=" + rendezvousMessagesReceived.get() + "/" +
            rendezvousBytesReceived.get() + "B, sends=" + sendsPosted.get() + ", creditOnly=" + creditOnlySends.get() +
            ", unsignaled=" + unsignaledSends.get() + ", sendCompletions=" + sendCompletions.get() + ", creditStalls=" +
            creditStalls.get() + ", sendQueueStalls=" + sendQueueStalls.get() + ", rdvQueued=" + rendezvousQueued.get() +
            ", rdvRefused=" + rendezvousRefused.get() + ", rnr=" + rnrErrors.get() + ", failedSends=" + failedSends.get() +
            ", directSent=" + directWritesSent.get() + ", abortsSent=" + rendezvousAbortsSent.get() + ", abortsRecv=" +
            rendezvousAbortsReceived.get() + ", grantedAtCommit=" + rendezvousGrantedAtCommit.get() + '}';
    }
}
