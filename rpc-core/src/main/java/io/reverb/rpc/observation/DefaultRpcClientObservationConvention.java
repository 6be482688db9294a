package io.reverb.rpc.observation;

import io.micrometer.common.KeyValues;

/**
 * The default names and keys of client call observations: see {@link RpcObservationDocumentation}.
 */
public class DefaultRpcClientObservationConvention implements RpcClientObservationConvention
{
    /** The observation's name, and so the timer's. */
    public static final String NAME = "rpc.client.duration";

    @Override
    public String getName()
    {
        return NAME;
    }

    @Override
    public String getContextualName(final RpcClientObservationContext context)
    {
        return context.method().fullMethodName();
    }

    @Override
    public KeyValues getLowCardinalityKeyValues(final RpcClientObservationContext context)
    {
        return RpcKeyValues.lowCardinality(context.method(), context.status());
    }
}
