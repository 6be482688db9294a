package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvCQ;
import io.reverb.rdma.verbs.CompletionQueue;
import java.io.IOException;

/**
 * What a DiSNi queue pair needs of the SPI CQs it is created with: a CQ of its own ({@link DisniCompletionQueue}) or
 * a share of its poller's native CQs ({@link DisniSharedCompletionQueue}).
 */
interface DisniCq extends CompletionQueue
{
    /**
     * The native CQ a new QP is created with for one direction (a shared CQ reserves its capacity there now).
     *
     * @param send the send direction, else the receive direction.
     * @return DiSNi's CQ.
     * @throws IOException if none can be had (the device refuses a new native CQ, or this CQ is closed).
     */
    IbvCQ nativeCq(boolean send) throws IOException;

    /**
     * A QP created with {@link #nativeCq(boolean)} now uses this CQ in that direction. Idempotent.
     *
     * @param qp   the queue pair.
     * @param send its direction.
     */
    void attach(DisniCompletionQueue.Member qp, boolean send);

    /**
     * The QP is destroyed. Idempotent.
     *
     * @param qp   the queue pair.
     * @param send its direction.
     */
    void detach(DisniCompletionQueue.Member qp, boolean send);
}
