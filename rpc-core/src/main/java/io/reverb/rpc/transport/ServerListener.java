package io.reverb.rpc.transport;

/**
 * A bound server address accepting connections.
 */
public interface ServerListener extends AutoCloseable
{
    /**
     * Decides what handles each accepted connection.
     */
    @FunctionalInterface
    interface Acceptor
    {
        /**
         * Called once per accepted connection, before any of its events.
         *
         * @param connection the new connection.
         * @return its handler; null rejects (the transport closes it).
         */
        ConnectionHandler onConnection(Connection connection);
    }

    /**
     * @return the bound address as a URI clients can connect to (an ephemeral port resolved).
     */
    String address();

    /**
     * @return the bound port, or -1 for transports without ports.
     */
    int port();

    /**
     * Stops accepting. Connections already accepted are unaffected. Idempotent.
     */
    @Override
    void close();
}
