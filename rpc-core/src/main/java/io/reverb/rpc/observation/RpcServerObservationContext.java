package io.reverb.rpc.observation;

import io.micrometer.observation.transport.RequestReplyReceiverContext;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.Status;

/**
 * The observation context of one server call. Its carrier is the client's metadata, from which a tracing handler
 * reads the trace context ({@code traceparent}, ...) to make the server span a child of the client's.
 */
public final class RpcServerObservationContext extends RequestReplyReceiverContext<Metadata, Object>
    implements ObservedRpcCall
{
    private final RpcContext rpcContext;
    private volatile Status status;

    /**
     * @param rpcContext the call being observed.
     */
    public RpcServerObservationContext(final RpcContext rpcContext)
    {
        super(RpcServerObservationContext::get);
        this.rpcContext = rpcContext;
        setCarrier(rpcContext.metadata());
    }

    private static String get(final Metadata carrier, final String key)
    {
        return carrier == null ? null : carrier.get(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER));
    }

    /**
     * @return the call.
     */
    public RpcContext rpcContext()
    {
        return rpcContext;
    }

    /**
     * @return the method called.
     */
    @Override
    public MethodDescriptor<?, ?> method()
    {
        return rpcContext.method();
    }

    /**
     * @return how the call ended, or null while it runs.
     */
    @Override
    public Status status()
    {
        return status;
    }

    /**
     * Records how the call ended, before its observation stops (an interceptor outside rpc-core, such as reverb-grpc's
     * for grpc-java servers, sets it as rpc-core's does).
     *
     * @param status the call's status.
     */
    public void status(final Status status)
    {
        this.status = status;
    }
}
