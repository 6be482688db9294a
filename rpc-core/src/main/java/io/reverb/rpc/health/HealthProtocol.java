package io.reverb.rpc.health;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.protobuf.ProtoMarshaller;

/**
 * What a client needs of {@code reverb.health.v1.Health} to watch a replica's health, without the generated code
 * of {@code reverb-services} on its class path. The messages are read and written as protobuf well-known types
 * with the same wire form: {@code HealthCheckRequest {string service = 1}} is a {@link StringValue}, and
 * {@code HealthCheckResponse {ServingStatus status = 1}} an {@link Int32Value} (an enum is a varint on the wire).
 * {@code reverb-services} tests that the two agree byte for byte.
 */
public final class HealthProtocol
{
    /** The service's full name. */
    public static final String SERVICE_NAME = "reverb.health.v1.Health";
    /** {@code ServingStatus.UNKNOWN}. */
    public static final int UNKNOWN = 0;
    /** {@code ServingStatus.SERVING}. */
    public static final int SERVING = 1;
    /** {@code ServingStatus.NOT_SERVING}. */
    public static final int NOT_SERVING = 2;
    /** {@code ServingStatus.SERVICE_UNKNOWN}. */
    public static final int SERVICE_UNKNOWN = 3;

    /** {@code Watch}: the status now, then each change. */
    public static final MethodDescriptor<StringValue, Int32Value> WATCH = MethodDescriptor.<StringValue, Int32Value>newBuilder()
        .type(MethodDescriptor.MethodType.SERVER_STREAMING)
        .fullMethodName(MethodDescriptor.generateFullMethodName(SERVICE_NAME, "Watch"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(Int32Value.getDefaultInstance()))
        .build();

    private HealthProtocol()
    {
    }

    /**
     * @param service the service to watch, or "" for the whole server.
     * @return the request.
     */
    public static StringValue request(final String service)
    {
        return StringValue.of(service);
    }
}
