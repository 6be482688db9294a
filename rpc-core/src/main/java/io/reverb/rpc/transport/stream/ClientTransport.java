package io.reverb.rpc.transport.stream;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcClientConnection;

/**
 * The client side of one connection as a stream factory (grpc-java's {@code ClientTransport}): each call is one
 * {@link ClientStream}. Reconnecting, picking an address and retrying belong above it.
 */
public interface ClientTransport
{
    /**
     * @param connection a connection of {@link RpcClientConnection#create}.
     * @return it as a stream transport (rpc-core's connections are both; the API package does not name this SPI).
     * @throws IllegalArgumentException if it is not one of rpc-core's connections.
     */
    static ClientTransport of(final RpcClientConnection connection)
    {
        if (connection instanceof ClientTransport)
        {
            return (ClientTransport)connection;
        }
        throw new IllegalArgumentException("not a stream transport: " + connection);
    }

    /**
     * Opens a stream for one call. For a method whose client sends one message the CALL frame leaves with that
     * message at {@link ClientStream#halfClose()}; for the others it leaves now. If the connection takes no new calls,
     * the listener is closed at once, on this thread, with UNAVAILABLE and a
     * {@link io.reverb.rpc.retry.CallFailureCause} saying the server never saw the call.
     *
     * @param method   the method; its request marshaller writes each message into the transport's buffer.
     * @param options  the call's request metadata ({@link CallOptions#metadata()}), deadline (as computed by the
     *                 caller: sent to the server, and the stream ends DEADLINE_EXCEEDED here when it passes) and
     *                 compression; context propagation and wait-for-ready are the owner's (a stream never waits
     *                 for a connection: grpc-java's delayed transport holds a call until a transport is ready).
     * @param listener receives the headers, the messages and the one end.
     * @param <Req>    request type.
     * @return the stream.
     */
    <Req> ClientStream<Req> newStream(MethodDescriptor<Req, ?> method, CallOptions options,
        ClientStreamListener listener);
}
