package io.reverb.rdma.engine;

import org.agrona.DirectBuffer;

/**
 * A received message kept beyond {@link MessageHandler#onMessage}; see {@link Connection#retain()}.
 * Release it exactly once: a rendezvous buffer goes back to the connection's pool, which is bounded,
 * so a retained buffer holds back further large messages from the same peer.
 */
public interface RetainedMessage extends AutoCloseable
{
    /** @return the bytes (valid until {@link #release()}). */
    DirectBuffer buffer();

    /** @return where the message starts in {@link #buffer()}. */
    int offset();

    /** @return message length. */
    int length();

    /** Returns the memory. Idempotent; safe from any thread. */
    void release();

    /** Same as {@link #release()}. */
    @Override
    default void close()
    {
        release();
    }
}
