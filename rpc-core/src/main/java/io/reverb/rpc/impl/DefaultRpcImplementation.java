package io.reverb.rpc.impl;

import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcClientConnection;
import io.reverb.rpc.RpcImplementation;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.internal.ChannelConfig;
import io.reverb.rpc.internal.ClientTransportImpl;
import io.reverb.rpc.internal.ServerConfig;
import io.reverb.rpc.internal.ServerRuntime;
import io.reverb.rpc.lb.BalancedChannel;
import io.reverb.rpc.resolver.NameResolvers;

/**
 * rpc-core's implementation of its API, registered in {@code META-INF/services/io.reverb.rpc.RpcImplementation}: the
 * one place that knows both the API package and the implementation's ({@code lb} for the channel, {@code internal}
 * for connections and servers).
 */
public final class DefaultRpcImplementation implements RpcImplementation
{
    @Override
    public RpcChannel newChannel(final RpcChannel.Builder settings)
    {
        return new BalancedChannel(settings);
    }

    @Override
    public RpcClientConnection newConnection(final RpcChannel.Builder settings)
    {
        final String target = settings.target();
        // one connection is one transport to one address, as a grpc-java ClientTransport: picking among addresses,
        // reconnecting and retrying belong to its owner (a channel, or a bridge such as reverb-grpc's transports)
        if (settings.addresses() != null && settings.addresses().size() > 1 || NameResolvers.isResolverTarget(target))
        {
            throw new IllegalArgumentException("RpcClientConnection.create makes one connection to one transport " +
                "address, and " + target + " names several (or a name to resolve): build an RpcChannel from the same " +
                "builder (RpcChannel.Builder.build(), which balances over them and reconnects), or create one " +
                "RpcClientConnection per address from RpcChannel.builder(address)");
        }
        if (settings.loadBalancingPolicy() != null || settings.healthCheck() != null ||
            !settings.retryPolicies().isEmpty() || !settings.hedgingPolicies().isEmpty() || settings.retryMaxTokens() > 0)
        {
            throw new IllegalArgumentException("load balancing, health checking, retries and hedging act across " +
                "connections, so RpcClientConnection.create (one connection, one attempt per call) does not take them: " +
                "build an RpcChannel from the same builder for " + target);
        }
        final String address = settings.addresses() != null ? settings.addresses().get(0) : target;
        return new ClientTransportImpl(ChannelConfig.forConnection(settings, address));
    }

    @Override
    public RpcServer.Runtime newServer(final RpcServer.Builder settings)
    {
        return new ServerRuntime(ServerConfig.of(settings), settings.connectionListeners());
    }
}
