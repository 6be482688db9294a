package io.reverb.rpc.transport;

import java.io.IOException;
import java.net.URI;
import java.util.concurrent.CompletableFuture;

/**
 * A transport for one URI scheme, found by {@link java.util.ServiceLoader}: list the implementation in
 * {@code META-INF/services/io.reverb.rpc.transport.TransportProvider}. {@link Transports} picks, for a URI's
 * scheme, the available provider with the highest {@link #priority()}.
 */
public interface TransportProvider
{
    /**
     * @return the URI scheme served, e.g. {@code "shm"}, {@code "inproc"}.
     */
    String scheme();

    /**
     * @return higher wins when several providers serve one scheme.
     */
    default int priority()
    {
        return 0;
    }

    /**
     * @return true if this provider can run on this machine.
     */
    boolean isAvailable();

    /**
     * @return null when available, else a sentence saying what is missing and how to fix it.
     */
    String unavailabilityCause();

    /**
     * Connects to a server. The handler receives the connection's events; it gets none before the returned future
     * completes unless the server sends first (the RPC protocol's server does not).
     *
     * @param uri     the server address.
     * @param handler receives the connection's events.
     * @return the connection, or a future failed with an {@link IOException} saying why.
     */
    CompletableFuture<Connection> connect(URI uri, ConnectionHandler handler);

    /**
     * Connects with the channel's transport options. The default ignores them; a transport with settings overrides
     * this (URI query parameters override single fields of the options, never drop the others).
     *
     * @param uri     the server address.
     * @param options the channel builder's transport options, {@link TransportOptions#EMPTY} if none.
     * @param handler receives the connection's events.
     * @return the connection, or a future failed with an {@link IOException} saying why.
     */
    default CompletableFuture<Connection> connect(URI uri, TransportOptions options, ConnectionHandler handler)
    {
        return connect(uri, handler);
    }

    /**
     * Binds a server address.
     *
     * @param uri      the address; a port of 0 asks for an ephemeral one.
     * @param acceptor receives accepted connections.
     * @return the listener.
     * @throws IOException if the address cannot be bound.
     */
    ServerListener listen(URI uri, ServerListener.Acceptor acceptor) throws IOException;

    /**
     * Binds a server address with the server's transport options. The default ignores them.
     *
     * @param uri      the address; a port of 0 asks for an ephemeral one.
     * @param options  the server builder's transport options, {@link TransportOptions#EMPTY} if none.
     * @param acceptor receives accepted connections.
     * @return the listener.
     * @throws IOException if the address cannot be bound.
     */
    default ServerListener listen(URI uri, TransportOptions options, ServerListener.Acceptor acceptor) throws IOException
    {
        return listen(uri, acceptor);
    }

    /**
     * @return everything this provider's connections and listeners hold now, in this JVM.
     */
    ResourceUsage resourceUsage();
}
