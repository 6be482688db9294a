package io.reverb.rpc;

import javax.net.ssl.SSLSession;

/**
 * One connection a started {@link RpcServer} accepted, as its {@link Listener} and the handlers of its calls
 * ({@link RpcContext#connection()}) see it: where it comes from, and its own graceful and immediate end. What grpc-java
 * calls a server transport; {@code reverb-grpc} builds one grpc-java {@code ServerTransport} on each.
 *
 * <p>Its lifecycle: {@link Listener#connectionAccepted} once, before the first call on it reaches a handler; then its
 * calls; then {@link Listener#connectionClosed} once, after the calls still running on it were ended with the
 * connection. Thread-safe.
 */
public interface AcceptedConnection
{
    /**
     * @return the client's address, as the transport describes it (as {@link RpcContext#peer()}).
     */
    String remoteAddress();

    /**
     * @return this end's address, as the transport describes it.
     */
    String localAddress();

    /**
     * The TLS session the client connected inside: {@code getPeerCertificates()} is the client's certificate chain
     * under mutual TLS ({@code TlsConfig.ClientAuth.REQUIRE}), what an authorization check keys on; grpc-java's
     * server exposes the same session as {@code Grpc.TRANSPORT_ATTR_SSL_SESSION}.
     *
     * @return the session, or null: a connection without TLS ({@code shm://}, {@code inproc://}, plain
     *         {@code tcp://}), or a {@code reverb://} connection that moved to rdma (one that moved to shm keeps the
     *         session of the tcp connection it moved from: the client proved it holds that connection's ticket).
     */
    default SSLSession sslSession()
    {
        return null;
    }

    /**
     * @return false once closing began: {@link #goAway} (also the server's shutdown or max connection age),
     * {@link #closeNow}, the peer's close, or a failure.
     */
    boolean isOpen();

    /**
     * Graceful end of this connection alone, as the server's shutdown does for every connection: sends GOAWAY (no new
     * call is accepted on it; the client resends refused calls elsewhere), lets the calls running on it finish, then
     * closes it. Idempotent; a connection already closing is left as it is.
     */
    void goAway();

    /**
     * Immediate end of this connection alone: ends every call on it with {@code status} (the client gets it; the
     * handlers' contexts are cancelled with it) and closes the connection. Idempotent.
     *
     * @param status why, not OK (e.g. UNAVAILABLE).
     */
    void closeNow(Status status);

    /**
     * Attaches an object to this connection (as NIO's {@code SelectionKey.attach}), typically in
     * {@link Listener#connectionAccepted}: the handlers of its calls find it through {@link RpcContext#connection()}.
     *
     * @param attachment the object, or null to remove it.
     */
    void attach(Object attachment);

    /**
     * @return what {@link #attach} attached last, or null.
     */
    Object attachment();

    /**
     * Told of every connection the server accepts and of its end ({@link RpcServer.Builder#addConnectionListener}).
     * Both callbacks run on the transport's thread of the connection: they must not block.
     */
    interface Listener
    {
        /**
         * A connection was accepted (its transport handshake is done); called once, before any call on it reaches a
         * handler. If it throws, the connection is refused (closed): this listener and those after it are not told
         * of its end, those told of it before are ({@link #connectionClosed} with the failure as cause). The transport
         * has not taken the connection yet, so this callback must not end it itself (throw instead).
         *
         * @param connection the new connection.
         */
        void connectionAccepted(AcceptedConnection connection);

        /**
         * The connection is closed; called once per accepted connection, after every call still running on it was
         * ended with the connection (its handler's context cancelled).
         *
         * @param connection the connection.
         * @param cause      null for an orderly close (either side), else why it failed.
         */
        void connectionClosed(AcceptedConnection connection, Throwable cause);
    }
}
