package io.reverb.rpc.observation;

import io.micrometer.common.docs.KeyName;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;
import io.micrometer.observation.docs.ObservationDocumentation;

/**
 * The observations Reverb makes and their keys, after OpenTelemetry's RPC semantic conventions.
 *
 * <table>
 *   <caption>Observations</caption>
 *   <tr><th>observation (timer name)</th><th>kind</th><th>contextual name (span name)</th></tr>
 *   <tr><td>{@code rpc.client.duration}</td><td>CLIENT</td><td>{@code package.Service/Method}</td></tr>
 *   <tr><td>{@code rpc.server.duration}</td><td>SERVER</td><td>{@code package.Service/Method}</td></tr>
 * </table>
 *
 * <p>Low-cardinality keys (timer tags and span attributes): {@code rpc.system} ({@code reverb}), {@code rpc.service}
 * (the fully qualified service), {@code rpc.method}, {@code rpc.reverb.status_code} (the numeric status code, 0 for
 * OK; as {@code rpc.grpc.status_code} for gRPC: Reverb's codes are gRPC's). High-cardinality (span only):
 * {@code network.peer.address} on the server, the transport's description of the client.
 */
public enum RpcObservationDocumentation implements ObservationDocumentation
{
    /** One client call, from subscription until its status arrived or it was cancelled. */
    CLIENT
    {
        @Override
        public Class<? extends ObservationConvention<? extends Observation.Context>> getDefaultConvention()
        {
            return DefaultRpcClientObservationConvention.class;
        }

        @Override
        public KeyName[] getLowCardinalityKeyNames()
        {
            return LowCardinalityKeys.values();
        }
    },

    /** One server call, from the handler's invocation until the status was decided or the call was cancelled. */
    SERVER
    {
        @Override
        public Class<? extends ObservationConvention<? extends Observation.Context>> getDefaultConvention()
        {
            return DefaultRpcServerObservationConvention.class;
        }

        @Override
        public KeyName[] getLowCardinalityKeyNames()
        {
            return LowCardinalityKeys.values();
        }

        @Override
        public KeyName[] getHighCardinalityKeyNames()
        {
            return HighCardinalityKeys.values();
        }
    };

    /** Keys of bounded cardinality: tags of the timers, attributes of the spans. */
    public enum LowCardinalityKeys implements KeyName
    {
        /** Always {@code reverb}. */
        RPC_SYSTEM
        {
            @Override
            public String asString()
            {
                return "rpc.system";
            }
        },
        /** The fully qualified service name, e.g. {@code helloworld.Greeter}. */
        RPC_SERVICE
        {
            @Override
            public String asString()
            {
                return "rpc.service";
            }
        },
        /** The method name, e.g. {@code SayHello}. */
        RPC_METHOD
        {
            @Override
            public String asString()
            {
                return "rpc.method";
            }
        },
        /** The numeric status code (0 OK ... 16 UNAUTHENTICATED). */
        STATUS_CODE
        {
            @Override
            public String asString()
            {
                return "rpc.reverb.status_code";
            }
        }
    }

    /** Keys that may take many values: span attributes only. */
    public enum HighCardinalityKeys implements KeyName
    {
        /** The transport's description of the peer. */
        NETWORK_PEER_ADDRESS
        {
            @Override
            public String asString()
            {
                return "network.peer.address";
            }
        }
    }
}
