package io.reverb.spring.boot;

import io.reverb.grpc.ReverbChannelBuilder;

/**
 * A bean that adjusts each grpc-java channel of {@link ReverbGrpcChannelFactory} before it is built: grpc-java
 * {@code ClientInterceptor}s, service config, executors. Reverb-level settings of its connections come from the
 * {@code reverb.client.channels.NAME.*} properties and the {@link ReverbChannelCustomizer}s.
 */
@FunctionalInterface
public interface ReverbGrpcChannelCustomizer
{
    /**
     * @param name    the channel's name (or address).
     * @param builder the grpc-java channel's builder.
     */
    void customize(String name, ReverbChannelBuilder builder);
}
