package io.reverb.rpc.transport.stream;

import io.reverb.rpc.Marshaller;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.transport.StreamHandling;

/**
 * Takes the calls of a server as streams (grpc-java's {@code ServerTransportListener.streamCreated}): the calls to
 * methods that neither the server's services nor its fallback registry serve, every call for a server with none.
 * The handler dispatches them itself (reverb-grpc hands them to grpc-java's server, which looks the method up once).
 * Registered with {@code RpcServer.Builder.streamHandler}.
 *
 * @param <M> message type, both ways.
 */
public interface ServerStreamHandler<M> extends StreamHandling
{
    /**
     * @return reads each request from the transport's buffer and writes each response into it.
     */
    Marshaller<M> marshaller();

    /**
     * A call arrived. Called on the transport's thread (before the requests that came with the call are delivered);
     * must not block. The handler must {@link ServerStream#setListener set the listener} before it returns; it may
     * ask for requests and answer at once (an unknown method: {@link ServerStream#close} with UNIMPLEMENTED). The
     * listener hears nothing before this returns.
     *
     * @param stream         the call.
     * @param fullMethodName its method, {@code package.Service/Method} as the client sent it.
     * @param headers        the client's metadata (empty if none).
     */
    void streamCreated(ServerStream<M> stream, String fullMethodName, Metadata headers);
}
