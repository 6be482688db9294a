package io.reverb.rpc.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * Names and keys of client call observations; implement it to change them (pass it to
 * {@link ObservationClientInterceptor#ObservationClientInterceptor(io.micrometer.observation.ObservationRegistry,
 * RpcClientObservationConvention)}), or extend {@link DefaultRpcClientObservationConvention}.
 */
public interface RpcClientObservationConvention extends ObservationConvention<RpcClientObservationContext>
{
    @Override
    default boolean supportsContext(final Observation.Context context)
    {
        return context instanceof RpcClientObservationContext;
    }
}
