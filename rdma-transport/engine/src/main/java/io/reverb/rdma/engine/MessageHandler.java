package io.reverb.rdma.engine;

import org.agrona.DirectBuffer;

/**
 * Receives the messages of one {@link Connection}, in order, on the connection's poller thread.
 */
@FunctionalInterface
public interface MessageHandler
{
    /**
     * Called once per message. The bytes are valid only during the call: right after it returns the
     * engine re-posts the receive slot or returns the rendezvous buffer to its pool. To keep a large
     * message without copying, call {@link Connection#retain()} during the call. Do not block here:
     * the poller thread serves every connection it owns.
     *
     * @param buffer the registered memory holding the message.
     * @param offset where the message starts.
     * @param length its length in bytes (possibly 0).
     */
    void onMessage(DirectBuffer buffer, int offset, int length);

    /**
     * Called after the messages of one poll of the connection's receive completions were delivered (at least one),
     * on the same thread, right after the last of them (as Netty's {@code channelReadComplete}). A handler can
     * defer work to here to see the whole batch first: e.g. a server that starts a call only once it knows that a
     * cancel for it was not in the same batch. Not called for messages drained while the connection goes down.
     * The default does nothing.
     */
    default void onBatchEnd()
    {
    }
}
