package io.reverb.rpc.observation;

import io.micrometer.common.KeyValues;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * What the default conventions of both sides share: the observation's name, the method's full name as its
 * contextual name, and the low-cardinality keys of {@link RpcObservationDocumentation}.
 *
 * @param <C> the observation context of one side.
 */
abstract class DefaultRpcObservationConvention<C extends Observation.Context & ObservedRpcCall>
    implements ObservationConvention<C>
{
    private final String name;

    DefaultRpcObservationConvention(final String name)
    {
        this.name = name;
    }

    @Override
    public String getName()
    {
        return name;
    }

    @Override
    public String getContextualName(final C context)
    {
        return context.method().fullMethodName();
    }

    @Override
    public KeyValues getLowCardinalityKeyValues(final C context)
    {
        return RpcKeyValues.lowCardinality(context.method(), context.status());
    }
}
