package io.reverb.spring.boot;

import io.grpc.ManagedChannel;
import io.reverb.rpc.RpcChannel;
import io.reverb.services.health.HealthRpc;
import io.reverb.spring.boot.test.GrpcEchoGrpc;
import io.reverb.spring.boot.test.GrpcEchoRpc;
import io.reverb.spring.boot.test.NativeEchoRpc;

/**
 * The client side's bean: every kind of {@link ReverbClient} field, on the channel named "echo".
 */
public class EchoClients
{
    @ReverbClient("echo")
    NativeEchoRpc.NativeEchoReactorStub nativeEcho;
    @ReverbClient("echo")
    GrpcEchoRpc.GrpcEchoReactorStub nativeStubOfGrpcService;
    @ReverbClient("echo")
    GrpcEchoGrpc.GrpcEchoBlockingStub grpcEcho;
    @ReverbClient("echo")
    HealthRpc.HealthReactorStub health;
    @ReverbClient("echo")
    RpcChannel channel;
    @ReverbClient("echo")
    ManagedChannel grpcChannel;
}
