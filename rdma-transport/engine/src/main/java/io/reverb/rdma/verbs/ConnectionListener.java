package io.reverb.rdma.verbs;

import java.io.IOException;

/**
 * A listening rdma_cm id.
 */
public interface ConnectionListener extends AutoCloseable
{
    /** @return the bound address in the form {@link VerbsContext#connect} accepts (with the real port if 0 was asked). */
    String localAddress();

    /**
     * Waits for the next connection request (RDMA_CM_EVENT_CONNECT_REQUEST).
     *
     * @param timeoutNanos maximum wait; {@code Long.MAX_VALUE} waits as long as it takes ({@link #close()} ends it).
     * @return the request, or null on timeout.
     * @throws IOException if the listener is closed or broken.
     */
    ConnectionRequest accept(long timeoutNanos) throws IOException;

    /** Stops listening; a blocked {@link #accept(long)} throws. Established QPs stay up. Idempotent. */
    @Override
    void close();
}
