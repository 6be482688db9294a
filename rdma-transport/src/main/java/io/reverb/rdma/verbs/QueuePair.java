package io.reverb.rdma.verbs;

import java.nio.ByteBuffer;

/**
 * An RC queue pair, connected through the context's connection manager.
 *
 * <p>Posting is thread-safe but not meant to be contended: the engine posts from its poller or
 * under its own lock. Failures of accepted requests arrive as completions with a non-SUCCESS
 * {@link WcStatus}; after the first error the QP is in {@link QpState#ERROR} and every other
 * outstanding or later request completes with {@link WcStatus#WR_FLUSH_ERR}.
 */
public interface QueuePair extends AutoCloseable
{
    /** @return local QP number (in completions' {@link WorkCompletions#qpNum(int)}). */
    int qpNum();

    /** @return current state. */
    QpState state();

    /** @return the PD. */
    ProtectionDomain pd();

    /** @return the send CQ. */
    CompletionQueue sendCq();

    /** @return the receive CQ. */
    CompletionQueue recvCq();

    /** @return private data the peer sent with its accept (for the connector) or request (for the acceptor); read-only. */
    ByteBuffer remotePrivateData();

    /** @return a human-readable peer address. */
    String remoteAddress();

    /**
     * ibv_post_send. The request may be reused when this returns.
     *
     * @param request the work request.
     * @return {@link PostResult} code.
     */
    int postSend(SendRequest request);

    /**
     * ibv_post_recv. The request may be reused when this returns.
     *
     * @param request the work request.
     * @return {@link PostResult} code.
     */
    int postRecv(RecvRequest request);

    /**
     * rdma_disconnect: moves both sides to {@link QpState#ERROR}; outstanding requests on both sides
     * are flushed with WR_FLUSH_ERR and both disconnect handlers run. Idempotent.
     */
    void disconnect();

    /** Disconnects if needed and destroys the QP. Idempotent. */
    @Override
    void close();
}
