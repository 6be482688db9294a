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
