package io.reverb.rpc.transport.stream;

import io.reverb.rpc.AcceptedConnection;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.Status;
import io.reverb.rpc.compression.Codec;

/**
 * One call on the server side of a connection, as its {@link ServerStreamHandler} drives it (grpc-java's
 * {@code ServerStream}). Its methods may be called from any thread, but not concurrently for one stream; see the
 * package documentation for the threads the listener runs on.
 *
 * @param <M> message type, both ways (the handler's {@link ServerStreamHandler#marshaller()}).
 */
public interface ServerStream<M>
{
    /**
     * Sets what the stream reports to. Must be called before {@link ServerStreamHandler#streamCreated} returns (a
     * stream without a listener is ended INTERNAL then); nothing is reported before it.
     *
     * @param listener the listener.
     * @throws IllegalStateException if a listener is set already.
     */
    void setListener(ServerStreamListener<M> listener);

    /**
     * Asks for {@code n} more request messages: those that arrived are delivered, and the client is granted more
     * (REQUEST_N) while it still sends.
     *
     * @param n more messages, positive.
     * @throws IllegalArgumentException if n is not positive.
     */
    void request(int n);

    /**
     * Response headers, sent before the first response (or with the status if none follows). Entries merge with
     * those given earlier; nothing is sent for none.
     *
     * @param headers the headers.
     */
    void writeHeaders(Metadata headers);

    /**
     * Response headers, sent now, before any response and whatever the client's demand: what a streaming call's
     * client may wait for before it sends (grpc-java's server flushes them at once for streaming methods). Entries
     * merge with those given earlier, and the HEADERS frame leaves even with none; nothing is sent when headers were
     * sent already or the stream ended.
     *
     * @param headers the headers, or null for none.
     */
    default void sendHeaders(final Metadata headers)
    {
        writeHeaders(headers);
    }

    /**
     * A response message. It is held until {@link #flush()}, the next message or {@link #close}, so that a call's
     * single response travels with its status in one transport message; a message written beyond the client's
     * demand waits, in order, for its REQUEST_N ({@link #isReady()} is false meanwhile). Ignored once the stream
     * ended.
     *
     * @param message the message.
     */
    void writeMessage(M message);

    /** Sends the message held by {@link #writeMessage}, if any, now. */
    void flush();

    /**
     * @return true if a message written now would not wait for the client's demand.
     */
    boolean isReady();

    /**
     * Ends the call with its status, after the messages written before it (and with the last of them when it was
     * held). The listener is then closed with OK (the status went out), whatever the status's code.
     *
     * @param status   the call's status.
     * @param trailers trailers, or null.
     */
    void close(Status status, Metadata trailers);

    /**
     * Ends the call now: messages not yet sent are dropped, the client gets the status (unless it ended already),
     * and the listener is closed with it.
     *
     * @param status why; not OK.
     */
    void cancel(Status status);

    /**
     * @param codec what the responses from now on are compressed with (gzip, or a codec the client accepts), or null
     *              for none.
     */
    void setCompression(Codec codec);

    /** @return the connection the call came on. */
    AcceptedConnection connection();

    /**
     * @return the call's stream id on its connection, as on the wire (unique among the connection's calls, not the
     *         server's): for logs.
     */
    int streamId();

    /** @return the client's deadline, or null for none. */
    Deadline deadline();

    /**
     * @return the call's context (made on first use): its cancellation, and what rpc-core code (e.g. a nested
     *         Reverb client call) expects to find in a handler.
     */
    RpcContext rpcContext();
}
