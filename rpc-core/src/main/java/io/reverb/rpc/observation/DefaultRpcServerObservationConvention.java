package io.reverb.rpc.observation;

import io.micrometer.common.KeyValues;

/**
 * The default names and keys of server call observations: see {@link RpcObservationDocumentation}.
 */
public class DefaultRpcServerObservationConvention implements RpcServerObservationConvention
{
    /** The observation's name, and so the timer's. */
    public static final String NAME = "rpc.server.duration";

    @Override
    public String getName()
    {
        return NAME;
    }

    @Override
    public String getContextualName(final RpcServerObservationContext context)
    {
        return context.method().fullMethodName();
    }

    @Override
    public KeyValues getLowCardinalityKeyValues(final RpcServerObservationContext context)
    {
        return RpcKeyValues.lowCardinality(context.method(), context.status());
    }

    @Override
    public KeyValues getHighCardinalityKeyValues(final RpcServerObservationContext context)
    {
        final String peer = context.rpcContext().peer();
        return peer == null ? KeyValues.empty()
            : KeyValues.of(RpcObservationDocumentation.HighCardinalityKeys.NETWORK_PEER_ADDRESS.withValue(peer));
    }
}
