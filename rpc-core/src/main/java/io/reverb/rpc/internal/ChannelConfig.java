package io.reverb.rpc.internal;

import io.reverb.rpc.ClientInterceptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.transport.TransportOptions;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import reactor.core.scheduler.Scheduler;

/**
 * A channel's configuration, frozen when the builder builds: nothing reads the builder afterwards, so reusing or
 * changing a builder never changes a channel it built.
 */
public final class ChannelConfig
{
    /**
     * While calls want a connection (waiting, or failing fast and coming again), attempts are at most this far apart,
     * however far the exponential backoff has grown.
     */
    public static final Duration DEFAULT_RECONNECT_WHILE_CALLS_WAIT = RpcChannel.Builder.DEFAULT_RECONNECT_WHILE_CALLS_WAIT;

    final String uri;
    final ClientInterceptor[] interceptors;
    final Duration defaultDeadline;
    final int maxInboundMessageSize;
    /** Most response metadata (headers, trailers) a call accepts, in bytes. */
    final int maxInboundMetadataSize;
    final Object meterRegistry;
    final Duration keepAliveTime;
    final Duration keepAliveTimeout;
    final boolean keepAliveWithoutCalls;
    final boolean transparentRetry;
    final Duration initialBackoff;
    final Duration maxBackoff;
    /** While calls want a connection, the longest gap between a failed attempt and the next. */
    final Duration reconnectWhileCallsWait;
    final Scheduler timerScheduler;
    final TransportOptions transportOptions;
    /** The codecs calls may compress with and responses are decompressed with. */
    final CodecRegistry codecs;
    /** The codec of calls whose options name none, or null for none. */
    final String compression;
    /** Messages smaller than this are sent uncompressed. */
    final int minCompressionSize;

    /**
     * The settings of one connection of the connection-level API ({@code RpcClientConnection}): its calls run the
     * builder's interceptors and default deadline themselves; nothing resends a refused call (its owner decides).
     *
     * @param settings the builder.
     * @param address  the connection's address.
     * @return the configuration.
     */
    public static ChannelConfig forConnection(final RpcChannel.Builder settings, final String address)
    {
        return new ChannelConfig(address, settings.interceptors(), settings.defaultDeadline(),
            settings.maxInboundMessageSize(), settings.meterRegistry(), settings.keepAliveTime(),
            settings.keepAliveTimeout(), settings.keepAliveWithoutCalls(), false, settings.initialBackoff(),
            settings.maxBackoff(), settings.reconnectWhileCallsWait(), settings.timerScheduler(),
            settings.transportOptions(), settings.codecRegistry(), settings.compression(), settings.minCompressionSize(),
            settings.maxInboundMetadataSize());
    }

    /**
     * The settings of a channel's subchannel to one address: the channel runs the interceptors, applies the default
     * deadline and resends refused calls once per call, above the subchannels, whatever the number of addresses; a
     * subchannel does none of that.
     *
     * @param settings the channel's builder.
     * @param address  the subchannel's address.
     * @return the configuration.
     */
    public static ChannelConfig forSubchannel(final RpcChannel.Builder settings, final String address)
    {
        return new ChannelConfig(address, List.of(), null, settings.maxInboundMessageSize(), settings.meterRegistry(),
            settings.keepAliveTime(), settings.keepAliveTimeout(), settings.keepAliveWithoutCalls(), false,
            settings.initialBackoff(), settings.maxBackoff(), settings.reconnectWhileCallsWait(),
            settings.timerScheduler(), settings.transportOptions(), settings.codecRegistry(), settings.compression(),
            settings.minCompressionSize(), settings.maxInboundMetadataSize());
    }

    /**
     * Copies the builder's values (the interceptor list too).
     *
     * @param uri                   server address.
     * @param interceptors          interceptors, first outermost.
     * @param defaultDeadline       deadline of calls whose options set none, or null.
     * @param maxInboundMessageSize largest inbound payload.
     * @param meterRegistry         a Micrometer MeterRegistry, or null.
     * @param keepAliveTime         PING interval while calls are active.
     * @param keepAliveTimeout      how long to wait for a PING's answer.
     * @param initialBackoff        first reconnect delay.
     * @param maxBackoff            largest reconnect delay.
     * @param timerScheduler        timers for deadlines, keep-alive and backoff.
     * @param transportOptions      the transport's settings.
     */
    public ChannelConfig(final String uri, final List<ClientInterceptor> interceptors, final Duration defaultDeadline,
        final int maxInboundMessageSize, final Object meterRegistry, final Duration keepAliveTime,
        final Duration keepAliveTimeout, final Duration initialBackoff, final Duration maxBackoff,
        final Scheduler timerScheduler, final TransportOptions transportOptions)
    {
        this(uri, interceptors, defaultDeadline, maxInboundMessageSize, meterRegistry, keepAliveTime, keepAliveTimeout,
            false, true, initialBackoff, maxBackoff, DEFAULT_RECONNECT_WHILE_CALLS_WAIT, timerScheduler, transportOptions);
    }

    /**
     * Copies the builder's values (the interceptor list too).
     *
     * @param uri                   server address.
     * @param interceptors          interceptors, first outermost.
     * @param defaultDeadline       deadline of calls whose options set none, or null.
     * @param maxInboundMessageSize largest inbound payload.
     * @param meterRegistry         a Micrometer MeterRegistry, or null.
     * @param keepAliveTime         PING interval (while calls are active, or always with keepAliveWithoutCalls).
     * @param keepAliveTimeout      how long to wait for a PING's answer.
     * @param keepAliveWithoutCalls PING also while the connection has no call.
     * @param transparentRetry      send again, on a new connection, a unary call the server refused before any
     *                              handler ran (GOAWAY, or refused while shutting down).
     * @param initialBackoff        first reconnect delay.
     * @param maxBackoff            largest reconnect delay.
     * @param reconnectWhileCallsWait while calls want a connection, the longest gap between a failed attempt and the
     *                              next, however far the backoff has grown.
     * @param timerScheduler        timers for deadlines, keep-alive and backoff.
     * @param transportOptions      the transport's settings.
     */
    public ChannelConfig(final String uri, final List<ClientInterceptor> interceptors, final Duration defaultDeadline,
        final int maxInboundMessageSize, final Object meterRegistry, final Duration keepAliveTime,
        final Duration keepAliveTimeout, final boolean keepAliveWithoutCalls, final boolean transparentRetry,
        final Duration initialBackoff, final Duration maxBackoff, final Duration reconnectWhileCallsWait,
        final Scheduler timerScheduler, final TransportOptions transportOptions)
    {
        this(uri, interceptors, defaultDeadline, maxInboundMessageSize, meterRegistry, keepAliveTime, keepAliveTimeout,
            keepAliveWithoutCalls, transparentRetry, initialBackoff, maxBackoff, reconnectWhileCallsWait, timerScheduler,
            transportOptions, CodecRegistry.defaults(), null, RpcChannel.Builder.DEFAULT_MIN_COMPRESSION_SIZE,
            RpcServer.Builder.DEFAULT_MAX_INBOUND_METADATA_SIZE);
    }

    private ChannelConfig(final String uri, final List<ClientInterceptor> interceptors, final Duration defaultDeadline,
        final int maxInboundMessageSize, final Object meterRegistry, final Duration keepAliveTime,
        final Duration keepAliveTimeout, final boolean keepAliveWithoutCalls, final boolean transparentRetry,
        final Duration initialBackoff, final Duration maxBackoff, final Duration reconnectWhileCallsWait,
        final Scheduler timerScheduler, final TransportOptions transportOptions, final CodecRegistry codecs,
        final String compression, final int minCompressionSize, final int maxInboundMetadataSize)
    {
        this.maxInboundMetadataSize = maxInboundMetadataSize;
        this.codecs = Objects.requireNonNull(codecs, "codecs");
        this.compression = compression;
        this.minCompressionSize = minCompressionSize;
        this.keepAliveWithoutCalls = keepAliveWithoutCalls;
        this.transparentRetry = transparentRetry;
        this.uri = Objects.requireNonNull(uri, "uri");
        this.interceptors = interceptors.toArray(new ClientInterceptor[0]);
        this.defaultDeadline = defaultDeadline;
        this.maxInboundMessageSize = maxInboundMessageSize;
        this.meterRegistry = meterRegistry;
        this.keepAliveTime = Objects.requireNonNull(keepAliveTime, "keepAliveTime");
        this.keepAliveTimeout = Objects.requireNonNull(keepAliveTimeout, "keepAliveTimeout");
        this.initialBackoff = Objects.requireNonNull(initialBackoff, "initialBackoff");
        this.maxBackoff = Objects.requireNonNull(maxBackoff, "maxBackoff");
        this.reconnectWhileCallsWait = Objects.requireNonNull(reconnectWhileCallsWait, "reconnectWhileCallsWait");
        this.timerScheduler = Objects.requireNonNull(timerScheduler, "timerScheduler");
        // the transport learns the RPC limit, so that it can refuse larger messages before buffering them
        this.transportOptions = Objects.requireNonNull(transportOptions, "transportOptions")
            .with(TransportOptions.MAX_INBOUND_MESSAGE_SIZE, maxInboundMessageSize);
    }
}
