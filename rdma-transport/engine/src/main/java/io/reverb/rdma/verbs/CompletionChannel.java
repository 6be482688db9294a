package io.reverb.rdma.verbs;

import java.io.IOException;

/**
 * ibv_comp_channel: a poller blocks here while its CQs are armed. An armed CQ
 * ({@link CompletionQueue#requestNotify(boolean)}) that receives a completion raises one event on
 * its channel and disarms itself; the waiter then polls its CQs (re-arming before sleeping again,
 * and re-polling after arming, to close the race, exactly as with ibverbs).
 */
public interface CompletionChannel extends AutoCloseable
{
    /** The timeout of an {@link #await(long)} that waits for an event or a wake-up however long it takes. */
    long NO_TIMEOUT = Long.MAX_VALUE;

    /**
     * Blocks until an event arrives, {@link #wakeup()} is called, or the timeout passes.
     * Events are acknowledged (ibv_ack_cq_events) by the provider.
     *
     * @param timeoutNanos maximum wait; 0 returns at once; {@link #NO_TIMEOUT} has no time limit.
     * @return the number of CQ events consumed (0 on timeout or wake-up).
     * @throws IOException if the channel is broken or closed.
     */
    int await(long timeoutNanos) throws IOException;

    /** Makes a current or the next {@link #await(long)} return early. Safe from any thread. */
    void wakeup();

    /** Idempotent. */
    @Override
    void close();
}
