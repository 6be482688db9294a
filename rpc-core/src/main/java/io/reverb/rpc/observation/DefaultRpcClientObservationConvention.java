package io.reverb.rpc.observation;

/**
 * The default names and keys of client call observations: see {@link RpcObservationDocumentation}.
 */
public class DefaultRpcClientObservationConvention extends DefaultRpcObservationConvention<RpcClientObservationContext>
    implements RpcClientObservationConvention
{
    /** The observation's name, and so the timer's. */
    public static final String NAME = "rpc.client.duration";

    /**
     * The defaults, named {@value #NAME}.
     */
    public DefaultRpcClientObservationConvention()
    {
        super(NAME);
    }
}
