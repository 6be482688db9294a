package io.reverb.rpc.transport.stream;

import io.reverb.rpc.Status;

/**
 * One call on a {@link ClientTransport}, as the client drives it (grpc-java's {@code ClientStream}). Not thread-safe
 * for concurrent use of one stream; see the package documentation for the threads the listener runs on.
 *
 * @param <Req> request type.
 */
public interface ClientStream<Req>
{
    /**
     * Asks the server for {@code n} more response messages (REQUEST_N; with the CALL frame while it has not left).
     *
     * @param n more messages, positive.
     * @throws IllegalArgumentException if n is not positive.
     */
    void request(int n);

    /**
     * Sends a request message: now if the server granted one, else after the grants to come (in order). On a
     * method whose client sends one message, the first one waits for {@link #halfClose()} to travel with the CALL.
     * Ignored after {@link #halfClose()} or once the stream ended.
     *
     * @param message the message.
     */
    void writeMessage(Req message);

    /**
     * This side sends no more messages (after those waiting for credit).
     */
    void halfClose();

    /**
     * Ends the stream now: the server is told (CANCEL with the status's code, or the CALL is taken back while it
     * still waits behind back-pressure) unless it already ended, and the listener is closed with {@code status} if it
     * was not closed yet: on this thread, or, while a transport callback of the stream runs, on the transport's thread
     * right after it.
     *
     * @param status why; its code travels to the server.
     */
    void cancel(Status status);

    /**
     * @return true if a message written now would leave at once (the server granted one and none waits).
     */
    boolean isReady();
}
