package io.reverb.rpc.internal;

import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServerInterceptor;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.transport.stream.ServerStreamHandler;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
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
    final int maxConcurrentCallsPerConnection;
    /** Most request metadata a call may bring (gRPC's count); a call with more is refused. */
    final int maxInboundMetadataSize;
    final long keepAlivePermitNanos;
    final boolean permitKeepAliveWithoutCalls;
    final long maxConnectionAgeNanos;
    final long maxConnectionAgeGraceNanos;
    /** The server's keep-alive: PINGs this often (Long.MAX_VALUE: never), closing a connection silent this long after. */
    final long keepAliveTimeNanos;
    final long keepAliveTimeoutNanos;
    /** A connection without calls this long is drained (Long.MAX_VALUE: never). */
    final long maxConnectionIdleNanos;
    /** The codecs requests are decompressed with and responses may be compressed with. */
    final CodecRegistry codecs;
    /** The codec of responses whose handler names none, or null for none. */
    final String compression;
    /** Messages smaller than this are sent uncompressed. */
    final int minCompressionSize;
    /**
     * Bytes one connection's compressed requests may hold, copied and inflated (see {@link InflationBudget}): the
     * builder's value, raised to what one largest message needs while it inflates.
     */
    final long maxInflatedBytesPerConnection;
    /** Where methods not among {@link #services} are looked up, or null for nowhere. */
    final Function<String, ServiceDefinition.ServerMethodDefinition<?, ?>> fallbackHandlerRegistry;
    /** Takes the calls no service or fallback serves, or null for none. */
    final ServerStreamHandler<?> streamHandler;
    /** The stream handler's methods counted each on its own. */
    final List<String> streamMethods;

    /**
     * @param settings a server builder's settings.
     * @return them, frozen.
     */
    public static ServerConfig of(final RpcServer.Builder settings)
    {
        return new ServerConfig(settings.uri(), settings.services(), settings.interceptors(),
            settings.handlerExecutor() != null ? new HandlerExecutorScheduler(settings.handlerExecutor()) :
                settings.handlerScheduler(), settings.timerScheduler(), settings.maxInboundMessageSize(),
            settings.meterRegistry(), settings.shutdownGracePeriod(), settings.transportOptions(),
            settings.maxConcurrentCallsPerConnection(), settings.keepAlivePermitNanos(),
            settings.permitKeepAliveWithoutCalls(), settings.maxConnectionAgeNanos(),
            settings.maxConnectionAgeGraceNanos(), settings.codecRegistry(), settings.compression(),
            settings.minCompressionSize(), settings.maxInflatedBytesPerConnection(), settings.fallbackHandlerRegistry(),
            streamHandlerOf(settings), settings.streamMethods(), settings.maxInboundMetadataSize(),
            settings.keepAliveTimeNanos(), settings.keepAliveTimeoutNanos(), settings.maxConnectionIdleNanos());
    }

    private static ServerStreamHandler<?> streamHandlerOf(final RpcServer.Builder settings)
    {
        final Object handler = settings.streamHandler();
        if (handler != null && !(handler instanceof ServerStreamHandler))
        {
            throw new IllegalArgumentException("not a ServerStreamHandler: " + handler);
        }
        return (ServerStreamHandler<?>)handler;
    }

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
        this(uri, services, interceptors, handlerScheduler, timerScheduler, maxInboundMessageSize, meterRegistry,
            shutdownGracePeriod, transportOptions, Integer.MAX_VALUE, 0, true, Long.MAX_VALUE, Long.MAX_VALUE);
    }

    /**
     * Copies the builder's values, with the connection limits of issue 12.
     *
     * @param uri                             address to listen on.
     * @param services                        services.
     * @param interceptors                    interceptors, first outermost.
     * @param handlerScheduler                runs handlers, or null for the transport's thread.
     * @param timerScheduler                  timers for deadlines.
     * @param maxInboundMessageSize           largest inbound payload.
     * @param meterRegistry                   a Micrometer MeterRegistry, or null.
     * @param shutdownGracePeriod             grace period of a graceful shutdown.
     * @param transportOptions                the transport's settings.
     * @param maxConcurrentCallsPerConnection calls one connection may run at once; more are refused.
     * @param keepAlivePermitNanos            shortest gap between a client's PINGs, 0 for no enforcement.
     * @param permitKeepAliveWithoutCalls     true to accept PINGs on a connection without calls.
     * @param maxConnectionAgeNanos           age after which a connection is drained, Long.MAX_VALUE for never.
     * @param maxConnectionAgeGraceNanos      time the calls of a drained old connection get, Long.MAX_VALUE for
     *                                        as long as they take.
     */
    public ServerConfig(final String uri, final List<ServiceDefinition> services,
        final List<ServerInterceptor> interceptors, final Scheduler handlerScheduler, final Scheduler timerScheduler,
        final int maxInboundMessageSize, final Object meterRegistry, final Duration shutdownGracePeriod,
        final TransportOptions transportOptions, final int maxConcurrentCallsPerConnection,
        final long keepAlivePermitNanos, final boolean permitKeepAliveWithoutCalls, final long maxConnectionAgeNanos,
        final long maxConnectionAgeGraceNanos)
    {
        this(uri, services, interceptors, handlerScheduler, timerScheduler, maxInboundMessageSize, meterRegistry,
            shutdownGracePeriod, transportOptions, maxConcurrentCallsPerConnection, keepAlivePermitNanos,
            permitKeepAliveWithoutCalls, maxConnectionAgeNanos, maxConnectionAgeGraceNanos, CodecRegistry.defaults(),
            null, RpcServer.Builder.DEFAULT_MIN_COMPRESSION_SIZE, RpcServer.Builder.DEFAULT_MAX_INFLATED_BYTES_PER_CONNECTION,
            null, null, List.of(), RpcServer.Builder.DEFAULT_MAX_INBOUND_METADATA_SIZE,
            RpcServer.Builder.DEFAULT_KEEP_ALIVE_TIME.toNanos(), RpcServer.Builder.DEFAULT_KEEP_ALIVE_TIMEOUT.toNanos(),
            Long.MAX_VALUE);
    }

    private ServerConfig(final String uri, final List<ServiceDefinition> services,
        final List<ServerInterceptor> interceptors, final Scheduler handlerScheduler, final Scheduler timerScheduler,
        final int maxInboundMessageSize, final Object meterRegistry, final Duration shutdownGracePeriod,
        final TransportOptions transportOptions, final int maxConcurrentCallsPerConnection,
        final long keepAlivePermitNanos, final boolean permitKeepAliveWithoutCalls, final long maxConnectionAgeNanos,
        final long maxConnectionAgeGraceNanos, final CodecRegistry codecs, final String compression,
        final int minCompressionSize, final long maxInflatedBytesPerConnection,
        final Function<String, ServiceDefinition.ServerMethodDefinition<?, ?>> fallbackHandlerRegistry,
        final ServerStreamHandler<?> streamHandler, final List<String> streamMethods, final int maxInboundMetadataSize,
        final long keepAliveTimeNanos, final long keepAliveTimeoutNanos, final long maxConnectionIdleNanos)
    {
        this.keepAliveTimeNanos = keepAliveTimeNanos;
        this.keepAliveTimeoutNanos = keepAliveTimeoutNanos;
        this.maxConnectionIdleNanos = maxConnectionIdleNanos;
        this.maxInboundMetadataSize = maxInboundMetadataSize;
        this.fallbackHandlerRegistry = fallbackHandlerRegistry;
        this.streamHandler = streamHandler;
        this.streamMethods = List.copyOf(streamMethods);
        this.maxInflatedBytesPerConnection = Math.max(maxInflatedBytesPerConnection,
            RpcServer.Builder.minInflatedBytesPerConnection(maxInboundMessageSize));
        this.codecs = Objects.requireNonNull(codecs, "codecs");
        this.compression = compression;
        this.minCompressionSize = minCompressionSize;
        this.maxConcurrentCallsPerConnection = maxConcurrentCallsPerConnection;
        this.keepAlivePermitNanos = keepAlivePermitNanos;
        this.permitKeepAliveWithoutCalls = permitKeepAliveWithoutCalls;
        this.maxConnectionAgeNanos = maxConnectionAgeNanos;
        this.maxConnectionAgeGraceNanos = maxConnectionAgeGraceNanos;
        this.uri = Objects.requireNonNull(uri, "uri");
        this.services = List.copyOf(services);
        this.interceptors = interceptors.toArray(new ServerInterceptor[0]);
        this.handlerScheduler = handlerScheduler;
        this.timerScheduler = Objects.requireNonNull(timerScheduler, "timerScheduler");
        this.maxInboundMessageSize = maxInboundMessageSize;
        this.meterRegistry = meterRegistry;
        this.shutdownGracePeriod = Objects.requireNonNull(shutdownGracePeriod, "shutdownGracePeriod");
        // the transport learns the RPC limit, so that it can refuse larger messages before buffering them
        this.transportOptions = Objects.requireNonNull(transportOptions, "transportOptions")
            .with(TransportOptions.MAX_INBOUND_MESSAGE_SIZE, maxInboundMessageSize);
    }
}
