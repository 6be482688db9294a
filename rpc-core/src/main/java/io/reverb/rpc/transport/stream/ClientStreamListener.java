package io.reverb.rpc.transport.stream;

import io.reverb.rpc.Metadata;
import io.reverb.rpc.Status;
import java.nio.ByteBuffer;

/**
 * What a {@link ClientStream} reports (grpc-java's {@code ClientStreamListener}). Callbacks for one stream never run
 * concurrently: an end decided on another thread (cancel, the deadline) while a message is being delivered on the
 * transport's thread is delivered by that thread when the message callback returns. {@link #closed} is the last
 * callback and runs exactly once.
 */
public interface ClientStreamListener
{
    /**
     * The server's response headers, if it sent any (a unary response often comes without): before any message.
     *
     * @param headers the headers.
     */
    void headersRead(Metadata headers);

    /**
     * One response message, within the demand asked for with {@link ClientStream#request(int)}.
     *
     * @param message position to limit is the message (decompressed); valid only during this callback.
     */
    void messageRead(ByteBuffer message);

    /**
     * {@link ClientStream#isReady()} turned true: the server granted more messages.
     */
    void onReady();

    /**
     * The stream ended: called exactly once, and nothing is called after it.
     *
     * @param status   how it ended (OK, the server's status, or a status decided here: cancel, deadline, connection
     *                 lost, a write that failed).
     * @param trailers the server's trailers, or null when it sent none (or the end was decided here).
     */
    void closed(Status status, Metadata trailers);

    /**
     * As {@link #closed(Status, Metadata)}, saying where the status came from; the stream calls this one, which by
     * default calls that one. A listener that holds messages it has not handed on yet tells the two ends apart here, as
     * grpc-java's transports do: the messages that arrived before the server's status are still delivered (as asked
     * for), and an end decided here (cancel, deadline, connection lost) drops them.
     *
     * @param status     how it ended.
     * @param trailers   the server's trailers, or null when it sent none.
     * @param fromServer the status is the server's (its STATUS frame); false for a status decided here.
     */
    default void closed(final Status status, final Metadata trailers, final boolean fromServer)
    {
        closed(status, trailers);
    }
}
