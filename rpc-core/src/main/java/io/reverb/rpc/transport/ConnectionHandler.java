package io.reverb.rpc.transport;

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
     * Space is available again after a claim returned {@link ClaimResult#BACK_PRESSURED}. May be spurious.
     * May be called from any thread; unlike the other callbacks it may run concurrently with them.
     *
     * @param connection the connection.
     */
    void onWritable(Connection connection);

    /**
     * The connection is closed; called exactly once, after the last {@link #onMessage}.
     *
     * @param connection the connection.
     * @param cause      null for an orderly close (either side), else why it failed (peer died, protocol error).
     */
    void onClose(Connection connection, Throwable cause);
}
