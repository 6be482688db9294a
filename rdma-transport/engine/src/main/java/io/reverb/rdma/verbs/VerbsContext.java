package io.reverb.rdma.verbs;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * An open device (ibv_context) together with its connection manager (rdma_cm event channel).
 * Thread-safe for set-up calls; closing it closes everything created from it.
 */
public interface VerbsContext extends AutoCloseable
{
    /** @return the provider that opened this context. */
    VerbsProvider provider();

    /**
     * ibv_alloc_pd. Memory registered in one PD is only reachable through queue pairs of the same PD.
     *
     * @return a new protection domain.
     * @throws IOException if the device refuses.
     */
    ProtectionDomain allocPd() throws IOException;

    /**
     * ibv_create_comp_channel: what a poller sleeps on when its CQs are armed.
     *
     * @return a new completion channel.
     * @throws IOException if the device refuses.
     */
    CompletionChannel createCompletionChannel() throws IOException;

    /**
     * ibv_create_cq.
     *
     * @param capacity minimum number of entries; a CQ that overflows moves its QPs to ERROR.
     * @param channel  channel notified after {@link CompletionQueue#requestNotify(boolean)}, or null.
     * @return a new completion queue.
     * @throws IOException if the device refuses.
     */
    CompletionQueue createCq(int capacity, CompletionChannel channel) throws IOException;

    /**
     * rdma_bind_addr + rdma_listen.
     *
     * @param address provider-specific: a name for {@code shm}, {@code host:port} for {@code tcp}/{@code rdma}
     *                (port 0 picks a free one; see {@link ConnectionListener#localAddress()}).
     * @param backlog pending connection requests kept.
     * @return a listener.
     * @throws IOException if the address is taken or invalid.
     */
    ConnectionListener listen(String address, int backlog) throws IOException;

    /**
     * rdma_resolve_addr + rdma_resolve_route + rdma_create_qp + rdma_connect, waiting for ESTABLISHED.
     *
     * @param address     peer address as given to its {@link #listen(String, int)}.
     * @param attributes  the QP to create.
     * @param privateData sent with the request (position..limit, at most {@link #MAX_PRIVATE_DATA} bytes), or null.
     * @return a queue pair in {@link QpState#RTS}; its {@link QueuePair#remotePrivateData()} holds the accept's data.
     * @throws ConnectionRejectedException if the peer rejected the request (carries its private data).
     * @throws IOException on timeout, unreachable peer or device error.
     */
    QueuePair connect(String address, QueuePairAttributes attributes, ByteBuffer privateData) throws IOException;

    /** Closes every PD, CQ, channel, QP and listener created from this context. Idempotent. */
    @Override
    void close();

    /** Private data that every provider carries in connect, accept and reject (RDMA CM's RC limit). */
    int MAX_PRIVATE_DATA = 56;
}
