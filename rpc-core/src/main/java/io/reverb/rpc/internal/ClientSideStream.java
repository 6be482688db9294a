package io.reverb.rpc.internal;

import io.reverb.rpc.Metadata;
import io.reverb.rpc.Status;

/**
 * A stream on the client side of a connection, as {@link ClientWireConnection} dispatches to it: the server's HEADERS
 * and STATUS besides what every stream gets. Two kinds: rpc-core's Reactor calls ({@link ClientCall}) and the callback
 * streams of the stream SPI ({@link TransportClientStream}).
 */
abstract class ClientSideStream extends RpcStream
{
    /**
     * On the transport's thread: the server's response headers.
     *
     * @param headers the headers.
     */
    abstract void onHeaders(Metadata headers);

    /**
     * On the transport's thread: the server's STATUS (the stream was already removed from the connection).
     *
     * @param status   the status.
     * @param trailers the trailers, or null.
     */
    abstract void onStatus(Status status, Metadata trailers);

    /**
     * The server refused the stream before any handler ran (GOAWAY below its id, or a REFUSED STATUS).
     *
     * @return true if the stream will be sent again on another connection (it was removed from this one); false to
     * end it with the refusal.
     */
    boolean retryRefused()
    {
        return false;
    }
}
