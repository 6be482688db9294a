package io.reverb.spring.boot;

import io.reverb.grpc.ReverbServerBuilder;

/**
 * A bean that adjusts the grpc-java server (reverb-grpc's {@link ReverbServerBuilder}) that serves the application's
 * grpc-java {@code BindableService} beans: grpc-java {@code ServerInterceptor}s, an executor, handshake settings.
 * Used only when there is at least one such service; Reverb-level settings go in a {@link ReverbServerCustomizer}.
 */
@FunctionalInterface
public interface ReverbGrpcServerCustomizer
{
    /**
     * @param builder the grpc-java server's builder.
     */
    void customize(ReverbServerBuilder builder);
}
