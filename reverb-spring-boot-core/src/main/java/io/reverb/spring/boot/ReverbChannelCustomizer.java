package io.reverb.spring.boot;

import io.reverb.rpc.RpcChannel;

/**
 * A bean that adjusts each channel before it is built: interceptors, retry policies, transport options. Applied after
 * the {@code reverb.client.channels.NAME.*} properties, in {@link org.springframework.core.Ordered} order.
 *
 * <p>For a grpc-java channel ({@link ReverbGrpcChannelFactory}) it configures each of its Reverb connections: metrics,
 * Reverb interceptors, transport options and keep-alive apply; load balancing, health checking and retries are
 * grpc-java's there, and setting them in a customizer fails when the connection is made.
 */
@FunctionalInterface
public interface ReverbChannelCustomizer
{
    /**
     * @param name    the channel's name (the NAME of {@code reverb.client.channels.NAME}, or the address when the
     *                channel was asked for by address).
     * @param builder the channel's builder.
     */
    void customize(String name, RpcChannel.Builder builder);
}
