package io.reverb.grpc;

import io.grpc.BindableService;
import io.grpc.DecompressorRegistry;
import io.grpc.ForwardingServerBuilder;
import io.grpc.HandlerRegistry;
import io.grpc.ServerBuilder;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerStreamTracer;
import io.grpc.internal.InternalServer;
import io.grpc.internal.ServerImplBuilder;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.transport.Transports;

import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * Builds an ordinary grpc-java {@link io.grpc.Server} that serves over a Reverb transport:
 *
 * <pre>{@code
 * Server server = ReverbServerBuilder.forAddress("shm://greeter")   // was: ServerBuilder.forPort(50051)
 *     .addService(new GreeterImpl())                               // unchanged grpc-java service
 *     .build().start();
 * }</pre>
 *
 * Everything above the transport is grpc-java's own server: {@code BindableService}s, {@code ServerInterceptor}s,
 * executors, {@code Context} deadlines and cancellation, {@code grpc-services} (health, reflection). Below it, a
 * Reverb {@link RpcServer} accepts connections and speaks Reverb's wire protocol, so grpc-java channels built with
 * {@link ReverbChannelBuilder} and native Reverb stubs can both call it.
 *
 * <p>Message compression works as over Netty: {@code ServerCall.setCompression("gzip")} (or a codec of
 * {@code compressorRegistry}) compresses a call's responses into Reverb MESSAGE frames flagged COMPRESSED, and
 * requests compressed with a codec of {@link #decompressorRegistry} (gzip unless that registry lacks it) are
 * decompressed by the Reverb server, at most {@link #maxInboundMessageSize} bytes each (more: RESOURCE_EXHAUSTED).
 *
 * <p>Methods are looked up as on Netty: the services added first, then {@link #fallbackHandlerRegistry}; a method in
 * neither fails UNIMPLEMENTED.
 */
public final class ReverbServerBuilder extends ForwardingServerBuilder<ReverbServerBuilder>
{
    /** As grpc-java's Netty server: an age or grace this long or longer means none. */
    private static final long AS_LARGE_AS_INFINITE_NANOS = TimeUnit.DAYS.toNanos(1000L);

    private final String uri;
    private final ServerImplBuilder delegate;
    private final List<ServerServiceDefinition> services = new ArrayList<>();
    private UnaryOperator<RpcServer.Builder> reverbConfig = UnaryOperator.identity();
    /** From {@link #fallbackHandlerRegistry}, or null. */
    private HandlerRegistry fallback;
    /** From {@link #decompressorRegistry}, or null for the default (gzip). */
    private CodecRegistry codecs;
    private int maxInboundMessageSize = -1;
    private int maxInboundMetadataSize = -1;
    private Duration permitKeepAliveTime;
    private Boolean permitKeepAliveWithoutCalls;
    private Duration maxConnectionAge;
    private Duration maxConnectionAgeGrace;
    /** The server's keep-alive: unset (null) is rpc-core's default, grpc-java's; {@link #keepAliveOff} turns it off. */
    private Duration keepAliveTime;
    private boolean keepAliveOff;
    private Duration keepAliveTimeout;
    private Duration maxConnectionIdle;

    private ReverbServerBuilder(final String uri)
    {
        this.uri = uri;
        Transports.parse(uri);
        this.delegate = new ServerImplBuilder((tracerFactories, metricRecorder) -> buildTransportServer(tracerFactories));
    }

    /**
     * @param uri where to serve: {@code shm://name}, {@code tcp://host:port} (port 0: ephemeral),
     *            {@code rdma://host:port}, {@code inproc://name}.
     * @return a builder.
     */
    public static ReverbServerBuilder forAddress(final String uri)
    {
        return new ReverbServerBuilder(Objects.requireNonNull(uri, "uri"));
    }

    /**
     * Always fails: a Reverb address is a URI (use {@link #forAddress}).
     *
     * @param port ignored.
     * @return never.
     */
    public static ReverbServerBuilder forPort(final int port)
    {
        throw new UnsupportedOperationException("use ReverbServerBuilder.forAddress(\"tcp://0.0.0.0:" + port + "\")");
    }

    /**
     * Settings of the underlying Reverb server (handler scheduler for rpc-core, metrics, timers...). Connection
     * listeners added here ({@link RpcServer.Builder#addConnectionListener}) are told before the one that makes each
     * connection's grpc-java transport; the connections' {@code attachment} belongs to that one (do not replace it).
     *
     * @param configure applied to the {@link RpcServer.Builder}.
     * @return this.
     */
    public ReverbServerBuilder reverbServer(final UnaryOperator<RpcServer.Builder> configure)
    {
        this.reverbConfig = Objects.requireNonNull(configure, "configure");
        return this;
    }

    @Override
    public ReverbServerBuilder addService(final ServerServiceDefinition service)
    {
        services.add(Objects.requireNonNull(service, "service"));
        delegate.addService(service);
        return this;
    }

    @Override
    public ReverbServerBuilder addService(final BindableService bindableService)
    {
        return addService(bindableService.bindService());
    }

    /**
     * Where the methods not among the services added are looked up, as on Netty (a {@code MutableHandlerRegistry}
     * may change while the server runs): grpc-java's server looks every call's method up once, as over Netty (the
     * Reverb server hands it every call as a stream).
     *
     * @param fallbackRegistry the registry, or null for none.
     * @return this.
     */
    @Override
    public ReverbServerBuilder fallbackHandlerRegistry(final HandlerRegistry fallbackRegistry)
    {
        this.fallback = fallbackRegistry;
        delegate.fallbackHandlerRegistry(fallbackRegistry);
        return this;
    }

    /**
     * The codecs requests may be compressed with, as over Netty; also the Reverb server's registry, which
     * decompresses them: only its codecs (grpc-java's default
     * registry has gzip; a registry without gzip turns receiving gzip off, as over Netty).
     *
     * @param registry grpc-java's registry.
     * @return this.
     */
    @Override
    public ReverbServerBuilder decompressorRegistry(final DecompressorRegistry registry)
    {
        delegate.decompressorRegistry(registry);
        this.codecs = GrpcCodecs.of(registry);
        return this;
    }

    @Override
    public ReverbServerBuilder maxInboundMessageSize(final int bytes)
    {
        if (bytes <= 0)
        {
            throw new IllegalArgumentException("maxInboundMessageSize must be positive: " + bytes);
        }
        this.maxInboundMessageSize = bytes;
        return this;
    }

    /**
     * The most request metadata a call may bring ({@link RpcServer.Builder#maxInboundMetadataSize}; default 8 KiB, as
     * Netty's): a call with more fails RESOURCE_EXHAUSTED before any handler runs.
     */
    @Override
    public ReverbServerBuilder maxInboundMetadataSize(final int bytes)
    {
        if (bytes <= 0)
        {
            throw new IllegalArgumentException("maxInboundMetadataSize must be positive: " + bytes);
        }
        this.maxInboundMetadataSize = bytes;
        return this;
    }

    /**
     * The shortest gap between two PINGs a client may send ({@link RpcServer.Builder#permitKeepAliveTime}): a client
     * that PINGs more often is closed with GOAWAY "too many pings" at its third strike. Unlike Netty's server,
     * enforcement is off unless this or {@link #permitKeepAliveWithoutCalls}{@code (false)} is set (native Reverb
     * channels PING every 30 s while calls are open, by default).
     */
    @Override
    public ReverbServerBuilder permitKeepAliveTime(final long keepAliveTime, final TimeUnit timeUnit)
    {
        if (keepAliveTime <= 0)
        {
            throw new IllegalArgumentException("permitKeepAliveTime must be positive: " + keepAliveTime);
        }
        this.permitKeepAliveTime = Duration.ofNanos(timeUnit.toNanos(keepAliveTime));
        return this;
    }

    /**
     * Whether clients may PING a connection without calls ({@link RpcServer.Builder#permitKeepAliveWithoutCalls});
     * false turns enforcement on: such PINGs are strikes, and at the third the connection is closed with GOAWAY
     * "too many pings". Channels built with {@code keepAliveWithoutCalls(true)} need it true (the default here).
     */
    @Override
    public ReverbServerBuilder permitKeepAliveWithoutCalls(final boolean permit)
    {
        this.permitKeepAliveWithoutCalls = permit;
        return this;
    }

    /**
     * Drains each connection once it is about this old (+-10% jitter), as Netty's server does: GOAWAY, so that its
     * client opens a new connection (maybe to another replica), then up to {@link #maxConnectionAgeGrace} for the
     * calls still running on it ({@link RpcServer.Builder#maxConnectionAge}). Each connection is one grpc-java
     * transport, so its transport ends with it. Off by default; 1000 days or more is off.
     */
    @Override
    public ReverbServerBuilder maxConnectionAge(final long maxConnectionAge, final TimeUnit timeUnit)
    {
        if (maxConnectionAge <= 0)
        {
            throw new IllegalArgumentException("maxConnectionAge must be positive: " + maxConnectionAge);
        }
        final long nanos = timeUnit.toNanos(maxConnectionAge);
        this.maxConnectionAge = nanos >= AS_LARGE_AS_INFINITE_NANOS ? null : Duration.ofNanos(nanos);
        return this;
    }

    /**
     * How long the calls of a connection drained by {@link #maxConnectionAge} may still run before it is closed
     * (their clients then see UNAVAILABLE). Unlimited by default; 1000 days or more is unlimited.
     */
    @Override
    public ReverbServerBuilder maxConnectionAgeGrace(final long maxConnectionAgeGrace, final TimeUnit timeUnit)
    {
        if (maxConnectionAgeGrace < 0)
        {
            throw new IllegalArgumentException("maxConnectionAgeGrace must not be negative: " + maxConnectionAgeGrace);
        }
        final long nanos = timeUnit.toNanos(maxConnectionAgeGrace);
        this.maxConnectionAgeGrace = nanos >= AS_LARGE_AS_INFINITE_NANOS ? null : Duration.ofNanos(nanos);
        return this;
    }

    /**
     * How often the server PINGs each connection ({@link RpcServer.Builder#keepAlive}), as Netty's server: a client
     * that answers nothing within {@link #keepAliveTimeout} (its host vanished without closing its connections) is
     * closed and its calls cancelled. Default 2 hours, as grpc-java's; 1000 days or more is off.
     */
    @Override
    public ReverbServerBuilder keepAliveTime(final long keepAliveTime, final TimeUnit timeUnit)
    {
        if (keepAliveTime <= 0)
        {
            throw new IllegalArgumentException("keepAliveTime must be positive: " + keepAliveTime);
        }
        final long nanos = timeUnit.toNanos(keepAliveTime);
        this.keepAliveOff = nanos >= AS_LARGE_AS_INFINITE_NANOS;
        this.keepAliveTime = keepAliveOff ? null : Duration.ofNanos(nanos);
        return this;
    }

    /** How long the server waits for an answer to its keep-alive PING (see {@link #keepAliveTime}); default 20 s. */
    @Override
    public ReverbServerBuilder keepAliveTimeout(final long keepAliveTimeout, final TimeUnit timeUnit)
    {
        if (keepAliveTimeout <= 0)
        {
            throw new IllegalArgumentException("keepAliveTimeout must be positive: " + keepAliveTimeout);
        }
        this.keepAliveTimeout = Duration.ofNanos(Math.min(timeUnit.toNanos(keepAliveTimeout), AS_LARGE_AS_INFINITE_NANOS));
        return this;
    }

    /**
     * Drains a connection that has had no call for this long ({@link RpcServer.Builder#maxConnectionIdle}), as Netty's
     * server: GOAWAY, then close; its client reconnects at its next call. Off by default; 1000 days or more is off.
     */
    @Override
    public ReverbServerBuilder maxConnectionIdle(final long maxConnectionIdle, final TimeUnit timeUnit)
    {
        if (maxConnectionIdle <= 0)
        {
            throw new IllegalArgumentException("maxConnectionIdle must be positive: " + maxConnectionIdle);
        }
        final long nanos = timeUnit.toNanos(maxConnectionIdle);
        this.maxConnectionIdle = nanos >= AS_LARGE_AS_INFINITE_NANOS ? null : Duration.ofNanos(nanos);
        return this;
    }

    @Override
    public ReverbServerBuilder useTransportSecurity(final File certChain, final File privateKey)
    {
        throw new UnsupportedOperationException(
            "grpc-java TLS is not used over Reverb; tcp:// encryption is a Reverb transport setting");
    }

    @Override
    public ReverbServerBuilder handshakeTimeout(final long timeout, final TimeUnit unit)
    {
        return this; // Reverb transports run their own handshake deadlines
    }

    @Override
    protected ServerBuilder<?> delegate()
    {
        return delegate;
    }

    private InternalServer buildTransportServer(final List<? extends ServerStreamTracer.Factory> tracerFactories)
    {
        final int maxInbound = maxInboundMessageSize;
        final int maxMetadata = maxInboundMetadataSize;
        final Duration permitTime = permitKeepAliveTime;
        final Boolean permitIdle = permitKeepAliveWithoutCalls;
        final Duration maxAge = maxConnectionAge;
        final Duration maxAgeGrace = maxConnectionAgeGrace;
        final boolean pingsOff = keepAliveOff;
        final Duration pingTime = keepAliveTime;
        final Duration pingTimeout = keepAliveTimeout;
        final Duration maxIdle = maxConnectionIdle;
        final UnaryOperator<RpcServer.Builder> user = reverbConfig;
        final CodecRegistry registry = codecs;
        return new ReverbServer(uri, List.copyOf(services), tracerFactories, b ->
        {
            if (registry != null)
            {
                b.codecRegistry(registry);
            }
            if (maxInbound > 0)
            {
                b.maxInboundMessageSize(maxInbound);
            }
            if (maxMetadata > 0)
            {
                b.maxInboundMetadataSize(maxMetadata);
            }
            if (permitTime != null)
            {
                b.permitKeepAliveTime(permitTime);
            }
            if (permitIdle != null)
            {
                b.permitKeepAliveWithoutCalls(permitIdle);
            }
            if (maxAge != null)
            {
                b.maxConnectionAge(maxAge, maxAgeGrace);
            }
            if (pingsOff || pingTime != null || pingTimeout != null)
            {
                b.keepAlive(pingsOff ? null : pingTime != null ? pingTime : Duration.ofNanos(b.keepAliveTimeNanos()),
                    pingTimeout != null ? pingTimeout : Duration.ofNanos(b.keepAliveTimeoutNanos()));
            }
            if (maxIdle != null)
            {
                b.maxConnectionIdle(maxIdle);
            }
            return user.apply(b);
        });
    }

    @Override
    public String toString()
    {
        return "ReverbServerBuilder{" + uri + "}";
    }
}
