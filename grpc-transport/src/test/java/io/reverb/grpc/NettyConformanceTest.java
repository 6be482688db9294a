package io.reverb.grpc;

import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;

import java.net.InetSocketAddress;

/** The reference: grpc-java over Netty loopback, the behaviour Reverb must reproduce. */
class NettyConformanceTest extends AbstractGrpcConformanceTest
{
    @Override
    protected ServerBuilder<?> newServerBuilder()
    {
        return NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0));
    }

    @Override
    protected ManagedChannelBuilder<?> newChannelBuilder(final Server server)
    {
        return NettyChannelBuilder.forAddress((InetSocketAddress)server.getListenSockets().get(0)).usePlaintext();
    }

    @Override
    protected ManagedChannelBuilder<?> newUnreachableChannelBuilder()
    {
        return NettyChannelBuilder.forAddress(new InetSocketAddress("127.0.0.1", 1)).usePlaintext();
    }

    @Override
    protected void assertTransportResourcesReleased()
    {
        // Netty's buffers are its own business; the Reverb subclasses check theirs
    }
}
