package io.reverb.rpc.observation;

import io.micrometer.common.KeyValues;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.Status;

/** The low-cardinality keys both sides share. */
final class RpcKeyValues
{
    /** The value of {@code rpc.system}. */
    static final String SYSTEM = "reverb";
    /** The status code of a call that has not ended (an observation read while it runs). */
    static final String NO_STATUS = "UNSET";

    private static final String[] CODES = new String[17];

    static
    {
        for (int i = 0; i < CODES.length; i++)
        {
            CODES[i] = Integer.toString(i);
        }
    }

    private RpcKeyValues()
    {
    }

    static KeyValues lowCardinality(final MethodDescriptor<?, ?> method, final Status status)
    {
        return KeyValues.of(
            RpcObservationDocumentation.LowCardinalityKeys.RPC_SYSTEM.withValue(SYSTEM),
            RpcObservationDocumentation.LowCardinalityKeys.RPC_SERVICE.withValue(method.serviceName()),
            RpcObservationDocumentation.LowCardinalityKeys.RPC_METHOD.withValue(method.methodName()),
            RpcObservationDocumentation.LowCardinalityKeys.STATUS_CODE.withValue(statusCode(status)));
    }

    static String statusCode(final Status status)
    {
        if (status == null)
        {
            return NO_STATUS;
        }
        final int value = status.code().value();
        return value >= 0 && value < CODES.length ? CODES[value] : Integer.toString(value);
    }
}
