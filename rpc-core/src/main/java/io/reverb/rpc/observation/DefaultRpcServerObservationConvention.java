package io.reverb.rpc.observation;

import io.micrometer.common.KeyValues;

/**
 * The default names and keys of server call observations: see {@link RpcObservationDocumentation}.
 */
public class DefaultRpcServerObservationConvention extends DefaultRpcObservationConvention<RpcServerObservationContext>
    implements RpcServerObservationConvention
{
    /** The observation's name, and so the timer's. */
    public static final String NAME = "rpc.server.duration";

    /**
     * The defaults, named {@value #NAME}.
     */
    public DefaultRpcServerObservationConvention()
    {
        super(NAME);
    }

    @Override
    public KeyValues getHighCardinalityKeyValues(final RpcServerObservationContext context)
    {
        final String peer = context.rpcContext().peer();
        return peer == null ? KeyValues.empty()
            : KeyValues.of(RpcObservationDocumentation.HighCardinalityKeys.NETWORK_PEER_ADDRESS.withValue(peer));
    }
}
