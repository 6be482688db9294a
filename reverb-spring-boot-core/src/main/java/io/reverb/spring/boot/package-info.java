/**
 * Spring Boot auto-configuration of Reverb: service beans served on {@code reverb.server.address}
 * ({@link io.reverb.spring.boot.ReverbServerLifecycle}), channels from {@code reverb.client.channels.NAME.address}
 * ({@link io.reverb.spring.boot.ReverbChannelFactory}, {@link io.reverb.spring.boot.ReverbGrpcChannelFactory},
 * {@link io.reverb.spring.boot.ReverbClient}), Micrometer metrics and observations, and graceful shutdown with the
 * application context. Settings: {@link io.reverb.spring.boot.ReverbProperties}.
 */
package io.reverb.spring.boot;
