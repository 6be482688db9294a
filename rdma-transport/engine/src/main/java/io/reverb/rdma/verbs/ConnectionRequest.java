package io.reverb.rdma.verbs;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * An incoming connection request: answer with {@link #accept} or {@link #reject} exactly once.
 */
public interface ConnectionRequest
{
    /** @return the connector's private data (read-only). */
    ByteBuffer privateData();

    /** @return a human-readable peer address. */
    String remoteAddress();

    /**
     * rdma_create_qp + rdma_accept.
     *
     * @param attributes  the QP to create.
     * @param privateData returned to the connector (position..limit, at most 56 bytes), or null.
     * @return the QP in {@link QpState#RTS}.
     * @throws IOException if the connector went away or the QP cannot be created.
     */
    QueuePair accept(QueuePairAttributes attributes, ByteBuffer privateData) throws IOException;

    /**
     * rdma_reject: the connector's {@link VerbsContext#connect} throws {@link ConnectionRejectedException}.
     *
     * @param privateData given to the connector (at most 56 bytes), or null.
     * @throws IOException if the connector went away.
     */
    void reject(ByteBuffer privateData) throws IOException;
}
