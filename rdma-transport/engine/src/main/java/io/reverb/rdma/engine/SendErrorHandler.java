package io.reverb.rdma.engine;

import io.reverb.common.WriteClaim;

/**
 * Told about committed messages that will not be delivered: refused by the peer (too large), or
 * lost with the connection (the cause then says so, and the connection's close callback runs too).
 */
@FunctionalInterface
public interface SendErrorHandler
{
    /**
     * @param messageId the message's id: the {@link WriteClaim#token()} of its claim.
     * @param length    the message length.
     * @param cause     what happened, e.g. {@link MessageRefusedException} or {@link PeerDisconnectedException}.
     */
    void onSendFailed(long messageId, int length, Throwable cause);

    /**
     * As {@link #onSendFailed(long, int, Throwable)}, with what the claimant attached
     * ({@link WriteClaim#attachment(Object)}).
     *
     * @param messageId  the message's id: the {@link WriteClaim#token()} of its claim.
     * @param length     the message length.
     * @param attachment the claim's attachment, or null.
     * @param cause      what happened.
     */
    default void onSendFailed(final long messageId, final int length, final Object attachment, final Throwable cause)
    {
        onSendFailed(messageId, length, cause);
    }
}
