package io.reverb.rpc.internal;

import io.reverb.rpc.ServerInterceptor;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.transport.TransportOptions;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import reactor.core.scheduler.Scheduler;

/**
 * A server's configuration, frozen when the builder builds: nothing reads the builder afterwards.
 */
public final class ServerConfig
{
    final String uri;
    final List<ServiceDefinition> services;
    final ServerInterceptor[] interceptors;
    final Scheduler handlerScheduler;
    final Scheduler timerScheduler;
    final int maxInboundMessageSize;
    final Object meterRegistry;
    final Duration shutdownGracePeriod;
    final TransportOptions transportOptions;

    /**
     * Copies the builder's values (the lists too).
     *
     * @param uri                   address to listen on.
     * @param services              services.
     * @param interceptors          interceptors, first outermost.
     * @param handlerScheduler      runs handlers, or null for the transport's thread.
     * @param timerScheduler        timers for deadlines.
     * @param maxInboundMessageSize largest inbound payload.
     * @param meterRegistry         a Micrometer MeterRegistry, or null.
     * @param shutdownGracePeriod   grace period of a graceful shutdown.
     * @param transportOptions      the transport's settings.
     */
    public ServerConfig(final String uri, final List<ServiceDefinition> services,
        final List<ServerInterceptor> interceptors, final Scheduler handlerScheduler, final Scheduler timerScheduler,
        final int maxInboundMessageSize, final Object meterRegistry, final Duration shutdownGracePeriod,
        final TransportOptions transportOptions)
    {
        this.uri = Objects.requireNonNull(uri, "uri");
        this.services = List.copyOf(services);
        this.interceptors = interceptors.toArray(new ServerInterceptor[0]);
        this.handlerScheduler = handlerScheduler;
        this.timerScheduler = Objects.requireNonNull(timerScheduler, "timerScheduler");
        this.maxInboundMessageSize = maxInboundMessageSize;
        this.meterRegistry = meterRegistry;
        this.shutdownGracePeriod = Objects.requireNonNull(shutdownGracePeriod, "shutdownGracePeriod");
        this.transportOptions = Objects.requireNonNull(transportOptions, "transportOptions");
    }
}
