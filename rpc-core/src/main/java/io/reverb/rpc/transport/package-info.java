/**
 * The transport SPI: how rpc-core moves frames, and all it needs from RDMA or any other fabric.
 *
 * <h2>Model</h2>
 * A {@link io.reverb.rpc.transport.TransportProvider} serves one URI scheme and is found by
 * {@link java.util.ServiceLoader} (register it in
 * {@code META-INF/services/io.reverb.rpc.transport.TransportProvider}). A client
 * {@link io.reverb.rpc.transport.TransportProvider#connect connects}; a server
 * {@link io.reverb.rpc.transport.TransportProvider#listen listens} and is handed each accepted connection.
 *
 * <p>A {@link io.reverb.rpc.transport.Connection} is a bidirectional, reliable, <b>message-oriented, ordered</b>
 * channel: each committed claim arrives at the peer as exactly one message with the same bytes, in commit order
 * (commits from different threads are ordered by when they committed). The RPC layer puts one or more frames in
 * each message; the transport never looks inside.
 *
 * <h2>Writing</h2>
 * The RPC layer asks for space with {@link io.reverb.rpc.transport.Connection#tryClaim(int,
 * io.reverb.common.WriteClaim)}, writes the frame (including the marshalled message: for protobuf,
 * {@code CodedOutputStream} writes straight into the buffer, so for RDMA the message is serialized into
 * registered memory) and {@link io.reverb.common.WriteClaim#commit() commits} or
 * {@link io.reverb.common.WriteClaim#abort() aborts}. The result codes are in
 * {@link io.reverb.common.ClaimResult}. After {@code BACK_PRESSURED} the transport calls
 * {@link io.reverb.rpc.transport.ConnectionHandler#onWritable} once space is free again. rpc-core serializes its
 * own claims per connection (one claim outstanding at a time per connection), but a transport should still be
 * thread-safe, since claims may come from any thread.
 *
 * <h2>Reading</h2>
 * Inbound messages are delivered to {@link io.reverb.rpc.transport.ConnectionHandler#onMessage} on the transport's
 * thread (for RDMA: the completion poller), one at a time per connection, as a {@code ByteBuffer} whose position
 * to limit is the message. The buffer is valid only during the callback: the RPC layer parses what it needs before
 * returning, and the transport may then repost or reuse the memory. The RPC layer may change the buffer's
 * position, limit and byte order during the callback.
 *
 * <p>Optional: a transport whose {@link io.reverb.rpc.transport.Connection#signalsReadComplete()} is true calls
 * {@link io.reverb.rpc.transport.ConnectionHandler#onReadComplete} on the same thread after each batch of messages
 * (what one read or poll gave), as Netty's {@code channelReadComplete}. The server then starts the calls a batch
 * opened at its end, so that a CANCEL later in the same batch ends a call before its handler runs. Such a
 * transport must end every batch with it (or with {@code onClose}): work held back until then is not run otherwise.
 *
 * <h2>Re-entrancy (what a transport must allow)</h2>
 * <ul>
 *   <li>{@code tryClaim}/{@code commit}/{@code abort} are called from inside {@code onMessage} (a server handler that
 *       answers at once writes its response on the transport's thread) and from inside {@code onWritable}.</li>
 *   <li>{@code close()} may be called from inside any callback.</li>
 *   <li>{@code onMessage} may run user code (server handlers, client subscribers) unless the application moved it to a
 *       scheduler; a misbehaving handler can block the transport's thread. That is documented to users as a
 *       mistake; the transport need not defend against it.</li>
 *   <li>A claim is always committed or aborted before the RPC layer claims again on the same connection, and within
 *       the same thread; it never holds a claim across callbacks.</li>
 *   <li>After {@code BACK_PRESSURED} the RPC layer queues its frames and waits for {@code onWritable}; it does not
 *       spin on {@code tryClaim}. A transport must therefore call {@code onWritable} reliably (no lost wake-up), and
 *       must not report BACK_PRESSURED for a message that could never fit (use TOO_LARGE).</li>
 * </ul>
 *
 * <h2>Closing</h2>
 * {@link io.reverb.rpc.transport.Connection#close()} is graceful: messages already committed are delivered, then
 * both ends see {@link io.reverb.rpc.transport.ConnectionHandler#onClose} exactly once (cause null for an orderly
 * close, the error otherwise, e.g. the peer died).
 *
 * <p>Addresses: {@link io.reverb.rpc.transport.ServerListener#address()} must be a URI that
 * {@link io.reverb.rpc.transport.TransportProvider#connect} accepts (an ephemeral port resolved);
 * {@code RpcServer.address()} returns it. {@link io.reverb.rpc.transport.Connection#remoteAddress()} is what server
 * handlers see as {@code RpcContext.peer()}.
 *
 * <h2>Resources</h2>
 * Connections and providers report {@link io.reverb.rpc.transport.ResourceUsage}: buffers and bytes held for
 * claims, messages in flight and undelivered inbound messages. Tests assert it returns to zero after every test and
 * stays bounded while a slow consumer holds back a fast producer. {@code AbstractTransportSpiTest} and
 * {@code AbstractRpcTransportTest} in rpc-core's test-jar check all of the above for a new transport.
 */
package io.reverb.rpc.transport;
