package io.reverb.spring.boot;

import io.reverb.rpc.RpcServer;

/**
 * A bean that adjusts the Reverb server before it is built: interceptors, a handler scheduler for blocking handlers,
 * transport options, keep-alive enforcement. Applied after the {@code reverb.server.*} properties, in
 * {@link org.springframework.core.Ordered} order. When grpc-java services are served too, it configures the Reverb
 * server under them; its interceptors see the native calls, and grpc-java's calls are intercepted by grpc-java's own
 * {@code ServerInterceptor}s ({@link ReverbGrpcServerCustomizer}), as on Netty (the context's observation registry
 * observes both).
 */
@FunctionalInterface
public interface ReverbServerCustomizer
{
    /**
     * @param builder the server's builder.
     */
    void customize(RpcServer.Builder builder);
}
