package io.reverb.rdma.engine;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The sender's flow control: how many receives the peer has posted that this side has not consumed
 * ({@link #credits()}), and how many receives this side re-posted that it has not yet told the peer about
 * ({@link #owed()}). Every SEND and every RDMA_WRITE_WITH_IMM consumes one credit; every batch returns all
 * owed credits.
 *
 * <p><b>The reserve-one-credit rule.</b> Data (eager batches, RTS, rendezvous writes) needs two credits, so
 * the last credit is kept for batches that give credits back: a control-only batch may use it only if it
 * returns at least one credit. A credit-return batch is due once half of this side's receive window is owed.
 * So the peer always has a receive posted when a SEND arrives, and the two sides can never both be stuck at
 * zero credits.
 *
 * <p>Not thread-safe: the connection guards it with its send lock, except {@link #returnLimit()}, which the poller
 * reads without it.
 */
final class CreditWindow
{
    /**
     * The most credits the peer may have returned in all, now: the credits this side consumed, plus, on the acceptor,
     * the window the connector's first batch announces. Written under the send lock with a release store before the
     * post that consumes the credit, so a peer's answer to that post finds it raised ({@link #returnLimit()}).
     */
    private final AtomicLong returnLimit = new AtomicLong();
    private final int returnThreshold;
    /** The most credits this side can hold: the receives the peer announced (a correct peer never returns more). */
    private int maxCredits;
    private int credits;
    private int owed;

    /** @param localReceiveSlots receives this side keeps posted (its receive window) */
    CreditWindow(final int localReceiveSlots)
    {
        this.returnThreshold = Math.max(1, localReceiveSlots / 2);
    }

    /**
     * Sets the window once the handshake is done. The connector may send at once and announces all its
     * receives with its first batch; the acceptor waits for that batch to learn its credits.
     */
    void start(final boolean acceptor, final int peerReceiveSlots, final int localReceiveSlots)
    {
        maxCredits = peerReceiveSlots;
        returnLimit.lazySet(acceptor ? peerReceiveSlots : 0);
        if (acceptor)
        {
            credits = 0;
            owed = 0;
        }
        else
        {
            credits = peerReceiveSlots;
            owed = localReceiveSlots;
        }
    }

    int credits()
    {
        return credits;
    }

    int owed()
    {
        return owed;
    }

    /** @return true if a data batch or a rendezvous write may be posted now (two credits: one stays in reserve). */
    boolean canSendData()
    {
        return credits >= 2;
    }

    /** @return true if, after one more batch is posted, a batch with data may still be posted. */
    boolean canSendDataAfterNextBatch()
    {
        return credits >= 3;
    }

    /** @return true if a batch without data may be posted now: the reserved credit only if it returns credits. */
    boolean canSendControlOnly()
    {
        return credits >= 2 || (credits == 1 && owed >= 1);
    }

    /** @return true if enough credits are owed that a batch should go even with nothing else in it. */
    boolean creditReturnDue()
    {
        return owed >= returnThreshold;
    }

    /**
     * A SEND or a rendezvous write is about to be posted (before the post: the peer may answer before the post
     * returns): the peer may return one credit more. A post that fails leaves the limit one higher, a connection that
     * is failing anyway.
     */
    void beforePost()
    {
        returnLimit.lazySet(returnLimit.get() + 1);
    }

    /** A batch was posted: it consumed one credit and returned every owed one. */
    void onBatchPosted()
    {
        credits--;
        owed = 0;
    }

    /** A rendezvous write (RDMA_WRITE_WITH_IMM) was posted: it consumed one credit. */
    void onWritePosted()
    {
        credits--;
    }

    /**
     * @return how many credits a correct peer may have returned in all so far (any thread: the poller checks each
     * batch's credits against it before the batch is used, and {@link #onCreditsReturned} takes them later)
     */
    long returnLimit()
    {
        return returnLimit.get();
    }

    /**
     * The peer returned credits in a batch header.
     *
     * @param returned the credits returned, not negative.
     * @return false, with the window unchanged, if that would give this side more credits than the peer has receives
     * (a protocol error: a correct peer returns only receives this side consumed).
     */
    boolean onCreditsReturned(final int returned)
    {
        if ((long)credits + returned > maxCredits)
        {
            return false;
        }
        credits += returned;
        return true;
    }

    /** This side re-posted receives: the peer is owed that many credits. */
    void onReceivesReposted(final int reposted)
    {
        owed += reposted;
    }
}
