/**
 * The stream-level transport SPI: one call on one connection as a stream driven by callbacks, shaped like grpc-java's
 * internal {@code ClientTransport}/{@code ClientStream}/{@code ClientStreamListener} and, on the server,
 * {@code ServerTransportListener.streamCreated}/{@code ServerStream}/{@code ServerStreamListener}. A bridge
 * (reverb-grpc's grpc-java transport) runs its calls on it with one state machine per call and no Reactor.
 *
 * <h2>Server side</h2>
 * A server given a {@link io.reverb.rpc.transport.stream.ServerStreamHandler} ({@code RpcServer.Builder.streamHandler})
 * hands it each call that neither its services nor its fallback registry serve, as a
 * {@link io.reverb.rpc.transport.stream.ServerStream}: the handler sets the stream's
 * {@link io.reverb.rpc.transport.stream.ServerStreamListener} and asks for requests with {@code request(n)} (the
 * client is granted more with REQUEST_N only once it sent a request without ending: a unary call costs none; from
 * then on it is granted what the listener asked for plus a window of up to 64 requests, 1 MiB of the largest so far,
 * so that a listener asking for one at a time does not make each a round trip); it writes responses within the
 * client's demand (beyond it they wait, {@code isReady()} false, {@code onReady()} when REQUEST_N arrives), each held
 * until {@code flush()}, the next response or {@code close}, so that a one-response call's response leaves with its
 * STATUS (the responses a callback flushes, or one REQUEST_N lets out, leave together in few transport messages);
 * {@code close} sends the status after them, {@code cancel} ends the call now. The listener's callbacks never run
 * concurrently, nothing is reported before {@code streamCreated} returns, and {@code closed} comes last, once (OK when
 * the status was sent).
 *
 * <h2>Model</h2>
 * A {@link io.reverb.rpc.transport.stream.ClientTransport} is one connection. Its
 * {@link io.reverb.rpc.transport.stream.ClientTransport#newStream newStream} opens a
 * {@link io.reverb.rpc.transport.stream.ClientStream}: the caller writes messages, half-closes, asks for responses with
 * {@code request(n)} and may cancel; the transport reports to the stream's
 * {@link io.reverb.rpc.transport.stream.ClientStreamListener} the response headers, each response message and, exactly
 * once, the end ({@code closed}).
 *
 * <h2>Frames</h2>
 * A stream is Reverb's wire protocol for one stream id: its first frame is CALL (method, deadline, metadata, the
 * response demand granted so far), its last is the server's STATUS. For a method whose client sends one message
 * (unary, server-streaming) CALL waits for that message and {@code halfClose()}: the message then travels in the
 * CALL's transport message (the unary fast path, one transport message each way). Other methods send CALL at
 * {@code newStream}. {@code request(n)} becomes REQUEST_N, {@code cancel} CANCEL, {@code halfClose} HALF_CLOSE (or the
 * last message's end-of-stream flag).
 *
 * <h2>Threads and re-entrancy</h2>
 * Stream methods may be called from any thread, but not concurrently for the same stream (as grpc-java's). Listener
 * callbacks run on the transport's thread for what the server sends, and on the caller's thread for an end decided
 * here ({@code cancel}, a failure to write, a connection that takes no calls when the stream starts, the deadline on
 * the timer's thread); they never run while the stream holds a lock. The message buffer of
 * {@link io.reverb.rpc.transport.stream.ClientStreamListener#messageRead messageRead} is valid only during the
 * callback (it may be the transport's registered memory): read or copy it there.
 *
 * <h2>Flow control</h2>
 * The server grants the client's messages with REQUEST_N (one message before it asks); a message written beyond the
 * grant waits in the stream, in order, and {@link io.reverb.rpc.transport.stream.ClientStream#isReady()} is false
 * while one waits or no credit is left; {@link io.reverb.rpc.transport.stream.ClientStreamListener#onReady()} says
 * when it turns true again. The server sends responses only within the demand the client asked for: a client that
 * hands its messages on one at a time (reverb-grpc's, under grpc-java's {@code request(1)}) asks for a window ahead
 * of them and holds what comes early, and passes the server's status on after them
 * ({@link io.reverb.rpc.transport.stream.ClientStreamListener#closed(io.reverb.rpc.Status, io.reverb.rpc.Metadata,
 * boolean) closed(status, trailers, fromServer)} says whose the end is).
 */
package io.reverb.rpc.transport.stream;
