package io.reverb.rdma.verbs;

/**
 * ibv_cq. Polled by one thread at a time (its poller); completions may be produced by the device,
 * by the peer process (shm), or by the provider's thread (tcp).
 */
public interface CompletionQueue extends AutoCloseable
{
    /** @return capacity in entries. */
    int capacity();

    /** @return the channel given at creation, or null. */
    CompletionChannel channel();

    /**
     * ibv_poll_cq: moves up to {@code completions.capacity()} completions into the flyweight.
     * Allocation-free.
     *
     * @param completions reused flyweight; its previous content is replaced.
     * @return the number polled, 0 if none.
     */
    int poll(WorkCompletions completions);

    /**
     * Whether the last {@link #poll} moved data for this CQ's queue pairs without a completion to show for it yet: a
     * software provider whose polling thread reads and writes the sockets itself (tcp) is then in the middle of a
     * large message. A poller counts it as work, so that it keeps polling instead of going to sleep halfway through
     * a transfer and leaving the rest to another thread. Polling thread only; allocation-free.
     *
     * @return false unless the provider says so (a NIC moves data without the poller)
     */
    default boolean lastPollMovedData()
    {
        return false;
    }

    /**
     * ibv_req_notify_cq: arm the CQ so that the next completion raises an event on its channel.
     * Poll again after arming: a completion that arrived before arming raises no event.
     *
     * @param solicitedOnly only SEND/WRITE_WITH_IMM with {@link SendRequest#FLAG_SOLICITED} raise events.
     */
    void requestNotify(boolean solicitedOnly);

    /** Idempotent. */
    @Override
    void close();
}
