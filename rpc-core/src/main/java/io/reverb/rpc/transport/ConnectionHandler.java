package io.reverb.rpc.transport;

import io.reverb.common.ClaimResult;
import io.reverb.common.WriteClaim;

import java.nio.ByteBuffer;

/**
 * Receives a connection's events from the transport. Calls for one connection are never concurrent with each other
 * (the transport's thread delivers them one at a time); they must not block.
 */
public interface ConnectionHandler
{
    /**
     * One inbound message. The buffer (position to limit) is valid only during this call.
     *
     * @param connection the connection.
     * @param message    the message bytes.
     */
    void onMessage(Connection connection, ByteBuffer message);

    /**
     * The transport delivered a batch of messages (what one read of the network or one poll of its completions
     * gave) and has no more for now, as Netty's {@code channelReadComplete}. Called on the transport's thread after
     * the batch's last {@link #onMessage}, only by a connection whose {@link Connection#signalsReadComplete()} is
     * true; every batch is followed by it or, when the connection goes down, by {@link #onClose}, so that work held
     * back until it is never stranded. The default does
     * nothing.
     *
     * @param connection the connection.
     */
    default void onReadComplete(final Connection connection)
    {
    }

    /**
     * Space is available again after a claim returned {@link ClaimResult#BACK_PRESSURED}. May be spurious.
     * May be called from any thread; unlike the other callbacks it may run concurrently with them.
     *
     * @param connection the connection.
     */
    void onWritable(Connection connection);

    /**
     * The peer refused a committed message without reading it (it exceeds the peer's limits or its memory budget
     * for large messages); the connection stays usable. A transport whose peer reads every message never calls it.
     * Called on the transport's thread.
     *
     * @param connection the connection.
     * @param attachment what {@link WriteClaim#attachment(Object)} held when the message was committed.
     * @param reason     why, for the status the message's call fails with.
     */
    default void onMessageRefused(final Connection connection, final Object attachment, final String reason)
    {
    }

    /**
     * The connection is closed; called exactly once, after the last {@link #onMessage}.
     *
     * @param connection the connection.
     * @param cause      null for an orderly close (either side), else why it failed (peer died, protocol error).
     */
    void onClose(Connection connection, Throwable cause);
}
