package io.reverb.rpc.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * Names and keys of server call observations; implement it to change them (pass it to
 * {@link ObservationServerInterceptor#ObservationServerInterceptor(io.micrometer.observation.ObservationRegistry,
 * RpcServerObservationConvention)}), or extend {@link DefaultRpcServerObservationConvention}.
 */
public interface RpcServerObservationConvention extends ObservationConvention<RpcServerObservationContext>
{
    @Override
    default boolean supportsContext(final Observation.Context context)
    {
        return context instanceof RpcServerObservationContext;
    }
}
