package io.reverb.rpc.observation;

import io.micrometer.observation.transport.RequestReplySenderContext;
import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.Status;

/**
 * The observation context of one client call. Its carrier is the call's request metadata: a tracing handler writes
 * the trace context ({@code traceparent}, ...) into it as ASCII entries before the call is sent.
 */
public final class RpcClientObservationContext extends RequestReplySenderContext<Metadata, Object>
    implements ObservedRpcCall
{
    private final ClientCallContext call;
    private volatile Status status;

    /**
     * @param call the call being observed.
     */
    public RpcClientObservationContext(final ClientCallContext call)
    {
        super(RpcClientObservationContext::put);
        this.call = call;
        setCarrier(call.requestMetadata());
        setRemoteServiceName(call.method().serviceName());
    }

    private static void put(final Metadata carrier, final String key, final String value)
    {
        if (carrier != null)
        {
            final Metadata.Key<String> metadataKey = Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER);
            carrier.removeAll(metadataKey);
            carrier.put(metadataKey, value);
        }
    }

    /**
     * @return the call.
     */
    public ClientCallContext call()
    {
        return call;
    }

    /**
     * @return the method called.
     */
    @Override
    public MethodDescriptor<?, ?> method()
    {
        return call.method();
    }

    /**
     * @return how the call ended, or null while it runs: the status the observing interceptor recorded, else the
     *         call's own ({@link ClientCallContext#status()}, which a grpc-java interceptor fills in).
     */
    @Override
    public Status status()
    {
        final Status recorded = status;
        return recorded != null ? recorded : call.status();
    }

    void status(final Status status)
    {
        this.status = status;
    }
}
