package io.reverb.rpc.transport.stream;

import io.reverb.rpc.Status;

/**
 * What a {@link ServerStream} reports (grpc-java's {@code ServerStreamListener}). Callbacks for one stream never run
 * concurrently and never while the stream holds a lock; {@link #closed} is the last one and runs exactly once.
 *
 * @param <M> message type.
 */
public interface ServerStreamListener<M>
{
    /**
     * One request message, within the demand asked for with {@link ServerStream#request(int)}.
     *
     * @param message the message (decoded by the handler's marshaller; the listener owns it).
     */
    void messageRead(M message);

    /** The client sends no more messages: after its last one. */
    void halfClosed();

    /** {@link ServerStream#isReady()} turned true (once at the start too, when the client's demand allows). */
    void onReady();

    /**
     * The call ended: exactly once, and nothing is called after it.
     *
     * @param status OK if the call's status was sent ({@link ServerStream#close}, whatever its code); otherwise why
     *               it ended without: the client cancelled, the deadline passed, the connection was lost,
     *               {@link ServerStream#cancel}, a request that could not be read.
     */
    void closed(Status status);
}
