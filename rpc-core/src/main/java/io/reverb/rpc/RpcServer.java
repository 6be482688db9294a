package io.reverb.rpc;

import io.reverb.rpc.compression.CodecRegistry;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.transport.StreamHandling;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Serves {@link RpcService}s on a transport address:
 *
 * <pre>{@code
 * RpcServer server = RpcServer.builder("shm://greeter").addService(new GreeterImpl()).build().start();
 * ...
 * server.shutdown();            // graceful: stop accepting, let calls finish, then cancel what is left
 * }</pre>
 *
 * <p>Handlers run on the transport's thread (for RDMA, the completion poller) unless {@link Builder#scheduler(Scheduler)}
 * or {@link Builder#executor(Executor)} is given. Blocking in a handler on the transport's thread stalls every call on that
 * thread: give the server a scheduler for handlers that may block.
 */
public final class RpcServer implements AutoCloseable
{
    /** Default largest inbound message: 4 MiB, as gRPC. */
    public static final int DEFAULT_MAX_INBOUND_MESSAGE_SIZE = 4 * 1024 * 1024;
    /** Default grace period of {@link #shutdown()}. */
    public static final Duration DEFAULT_SHUTDOWN_GRACE_PERIOD = Duration.ofSeconds(10);

    private final Runtime runtime;

    private RpcServer(final Runtime runtime)
    {
        this.runtime = runtime;
    }

    /**
     * @param uri where to listen, e.g. {@code "shm://greeter"}, {@code "inproc://test"}.
     * @return a builder.
     */
    public static Builder builder(final String uri)
    {
        return new Builder(uri);
    }

    /**
     * Binds the address and starts accepting connections.
     *
     * @return this.
     * @throws RpcException UNAVAILABLE if the address cannot be bound or no transport serves the scheme; a server
     *                      that failed to start is shut down (it cannot be started again) and holds nothing.
     */
    public RpcServer start()
    {
        runtime.start();
        return this;
    }

    /**
     * @return the bound port, or -1 for transports without ports.
     */
    public int port()
    {
        return runtime.port();
    }

    /**
     * @return the bound address as a URI clients can connect to (an ephemeral port resolved).
     */
    public String address()
    {
        return runtime.address();
    }

    /**
     * Graceful shutdown with the builder's grace period: stops accepting connections, tells clients to go away
     * (GOAWAY), lets in-flight calls finish, then cancels those still running. Returns at once.
     */
    public void shutdown()
    {
        runtime.shutdown(runtime.gracePeriod());
    }

    /**
     * Graceful shutdown with the given grace period. Returns at once.
     *
     * @param gracePeriod how long in-flight calls may continue.
     */
    public void shutdown(final Duration gracePeriod)
    {
        runtime.shutdown(gracePeriod);
    }

    /**
     * @param timeout how long to wait.
     * @param unit    unit of timeout.
     * @return true if terminated in time.
     * @throws InterruptedException if interrupted.
     */
    public boolean awaitTermination(final long timeout, final TimeUnit unit) throws InterruptedException
    {
        return runtime.awaitTermination(timeout, unit);
    }

    /**
     * @param timeout how long to wait.
     * @return true if terminated in time.
     * @throws InterruptedException if interrupted.
     */
    public boolean awaitTermination(final Duration timeout) throws InterruptedException
    {
        return runtime.awaitTermination(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    /**
     * @return true once shutdown or close began.
     */
    public boolean isShutdown()
    {
        return runtime.isShutdown();
    }

    /**
     * @return true once every connection is closed and the listener released.
     */
    public boolean isTerminated()
    {
        return runtime.isTerminated();
    }

    /**
     * Immediate shutdown: cancels every call (clients see UNAVAILABLE), closes every connection, and waits
     * briefly (up to 5 s) for the transport to release its resources. Called from one of this server's handlers it
     * does not wait: the connections close once the handler returns ({@link #awaitTermination} elsewhere waits).
     */
    @Override
    public void close()
    {
        runtime.close();
    }

    @Override
    public String toString()
    {
        return "RpcServer{" + runtime + "}";
    }

    /**
     * Configures an {@link RpcServer}.
     */
    public static final class Builder
    {
        /** Messages smaller than this are not compressed unless {@link #minCompressionSize} says otherwise. */
        public static final int DEFAULT_MIN_COMPRESSION_SIZE = 1024;
        /**
         * Calls one connection may run at once unless {@link #maxConcurrentCallsPerConnection} says otherwise: finite,
         * so that one peer cannot open calls without bound, and high, because a Reverb client does not wait for a free
         * slot as an HTTP/2 client does (a call over the limit fails RESOURCE_EXHAUSTED): pipelined clients run
         * thousands of calls on one connection (the load matrix runs 2048).
         */
        public static final int DEFAULT_MAX_CONCURRENT_CALLS_PER_CONNECTION = 4096;
        /**
         * Bytes of request metadata a call may bring unless {@link #maxInboundMetadataSize} says otherwise: 8 KiB, as
         * grpc-java's servers.
         */
        public static final int DEFAULT_MAX_INBOUND_METADATA_SIZE = 8192;
        /** The server's keep-alive PINGs each connection this often unless {@link #keepAlive} says otherwise (grpc-java's). */
        public static final Duration DEFAULT_KEEP_ALIVE_TIME = Duration.ofHours(2);
        /** How long the server waits for an answer to its keep-alive PING by default (grpc-java's). */
        public static final Duration DEFAULT_KEEP_ALIVE_TIMEOUT = Duration.ofSeconds(20);
        /** The name the stream handler's calls to methods it did not list are counted under. */
        public static final String OTHER_METHOD = "unlisted/other";
        /** Bytes one connection's compressed requests may hold, copied and inflated, by default: 64 MiB. */
        public static final long DEFAULT_MAX_INFLATED_BYTES_PER_CONNECTION = 64L * 1024 * 1024;
        private final String uri;
        private final List<ServiceDefinition> services = new ArrayList<>();
        private final List<ServerInterceptor> interceptors = new ArrayList<>();
        private final List<AcceptedConnection.Listener> connectionListeners = new ArrayList<>();
        private Function<String, ServiceDefinition.ServerMethodDefinition<?, ?>> fallbackHandlerRegistry;
        private StreamHandling streamHandler;
        private List<String> streamMethods = List.of();
        private Scheduler handlerScheduler;
        private Executor handlerExecutor;
        private Scheduler timerScheduler = Schedulers.parallel();
        private int maxInboundMessageSize = DEFAULT_MAX_INBOUND_MESSAGE_SIZE;
        private CodecRegistry codecs = CodecRegistry.defaults();
        private String compression;
        private int minCompressionSize = DEFAULT_MIN_COMPRESSION_SIZE;
        private Object meterRegistry;
        private Duration shutdownGracePeriod = DEFAULT_SHUTDOWN_GRACE_PERIOD;
        private TransportOptions transportOptions = TransportOptions.EMPTY;
        private int maxConcurrentCallsPerConnection = DEFAULT_MAX_CONCURRENT_CALLS_PER_CONNECTION;
        private int maxInboundMetadataSize = DEFAULT_MAX_INBOUND_METADATA_SIZE;
        private long maxInflatedBytesPerConnection = DEFAULT_MAX_INFLATED_BYTES_PER_CONNECTION;
        private long keepAlivePermitNanos;
        private boolean permitKeepAliveWithoutCalls = true;
        private long maxConnectionAgeNanos = Long.MAX_VALUE;
        private long maxConnectionAgeGraceNanos = Long.MAX_VALUE;
        private long keepAliveTimeNanos = DEFAULT_KEEP_ALIVE_TIME.toNanos();
        private long keepAliveTimeoutNanos = DEFAULT_KEEP_ALIVE_TIMEOUT.toNanos();
        private long maxConnectionIdleNanos = Long.MAX_VALUE;

        private Builder(final String uri)
        {
            this.uri = Objects.requireNonNull(uri, "uri");
        }

        /**
         * @param service a service, e.g. a generated {@code FooImplBase} subclass.
         * @return this.
         */
        public Builder addService(final RpcService service)
        {
            return addService(service.bindService());
        }

        /**
         * @param service a service definition.
         * @return this.
         */
        public Builder addService(final ServiceDefinition service)
        {
            for (final ServiceDefinition existing : services)
            {
                if (existing.serviceName().equals(service.serviceName()))
                {
                    throw new IllegalArgumentException("service added twice: " + service.serviceName());
                }
            }
            services.add(service);
            return this;
        }

        /**
         * @param interceptor an interceptor; the first added runs outermost.
         * @return this.
         */
        public Builder intercept(final ServerInterceptor interceptor)
        {
            interceptors.add(Objects.requireNonNull(interceptor, "interceptor"));
            return this;
        }

        /**
         * Where the methods not among the services are looked up, as grpc-java's {@code fallbackHandlerRegistry}: a
         * call's method is looked up among the services first, then here; a method found in neither fails the call
         * with UNIMPLEMENTED. Unlike the services' methods (matched on the CALL frame's bytes), each lookup here gets
         * the method's name as a String; the registry may change what it returns over time.
         *
         * @param registry gives the definition of a full method name ({@code package.Service/Method}), or null when
         *                 it serves no such method; called on a transport thread, so it must not block.
         * @return this.
         */
        public Builder fallbackHandlerRegistry(
            final Function<String, ServiceDefinition.ServerMethodDefinition<?, ?>> registry)
        {
            this.fallbackHandlerRegistry = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /**
         * Where the calls that neither the services nor the {@link #fallbackHandlerRegistry fallback registry} serve
         * go, as streams of the stream-level SPI (a {@code io.reverb.rpc.transport.stream.ServerStreamHandler}): the
         * handler dispatches them itself, with no Reactor and no handler of rpc-core in between (reverb-grpc's server
         * hands them to grpc-java's). The server's {@link #intercept interceptors} and {@link #executor executor} do not apply to them: the callbacks
         * run on the transport's thread, and the handler runs its own. Without one, such calls end UNIMPLEMENTED.
         *
         * @param handler        takes the calls: a {@code ServerStreamHandler}.
         * @param countedMethods the methods the handler serves (full names): each is counted on its own in the
         *                       counters file and the metrics, as a service's method is; calls to any other name are
         *                       counted together, under {@value Builder#OTHER_METHOD}, so a client cannot add names without
         *                       bound.
         * @return this.
         */
        public Builder streamHandler(final StreamHandling handler, final Collection<String> countedMethods)
        {
            this.streamHandler = Objects.requireNonNull(handler, "handler");
            this.streamMethods = List.copyOf(countedMethods);
            return this;
        }

        /**
         * Tells a listener of every connection the server accepts and of its end; the handlers of the connection's
         * calls find it through {@link RpcContext#connection()}. Each listener added is told, in the order added.
         *
         * @param listener the listener.
         * @return this.
         */
        public Builder addConnectionListener(final AcceptedConnection.Listener listener)
        {
            connectionListeners.add(Objects.requireNonNull(listener, "listener"));
            return this;
        }

        /**
         * @param executor runs handlers (and their inbound signals, one call at a time) instead of the transport's
         *                 thread; use for handlers that may block. A call whose task the executor rejects (a bounded
         *                 queue full, an executor shut down) ends UNAVAILABLE.
         * @return this.
         */
        public Builder executor(final Executor executor)
        {
            // a call's tasks run one at a time, in order, whatever the executor (an ExecutorService given as a
            // Reactor scheduler got a task per signal, run concurrently, and a call's end disposed its worker from
            // another thread, which interrupted the handler still running); a rejected task ends its call
            this.handlerExecutor = Objects.requireNonNull(executor, "executor");
            this.handlerScheduler = null;
            return this;
        }

        /**
         * @param scheduler runs handlers instead of the transport's thread; use for handlers that may block.
         * @return this.
         */
        public Builder scheduler(final Scheduler scheduler)
        {
            this.handlerScheduler = scheduler;
            this.handlerExecutor = null;
            return this;
        }

        /**
         * @param scheduler schedules deadline timers (default {@link Schedulers#parallel()}); a virtual-time
         *                  scheduler makes deadline tests deterministic.
         * @return this.
         */
        public Builder timerScheduler(final Scheduler scheduler)
        {
            this.timerScheduler = Objects.requireNonNull(scheduler, "scheduler");
            return this;
        }

        /**
         * Compresses every response message of at least {@link #minCompressionSize} bytes with this codec, unless
         * the handler names another ({@link RpcContext#responseCompression(String)}).
         * Off by default, as in grpc-java: on shm:// and rdma:// compressing costs more time than it saves; it pays
         * where the link is slow (tcp:// between hosts) and the messages compress.
         *
         * @param codecName a codec of {@link #codecRegistry} ("gzip" is built in), or "identity" or null for none.
         * @return this.
         * @throws IllegalArgumentException if the registry has no codec of that name.
         */
        public Builder compression(final String codecName)
        {
            this.compression = codecs.defaultCodec(codecName);
            return this;
        }

        /**
         * @param registry the codecs this server compresses with and decompresses (default: {@link CodecRegistry#defaults()},
         *                 gzip). A peer's message compressed with a codec not in it fails its call (UNIMPLEMENTED on a
         *                 server, INTERNAL on a client).
         * @return this.
         */
        public Builder codecRegistry(final CodecRegistry registry)
        {
            this.codecs = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /**
         * @param bytes messages whose serialized size is below this are sent uncompressed whatever the codec
         *              (default {@value #DEFAULT_MIN_COMPRESSION_SIZE}): a small message gains little and costs a
         *              compressor's set-up. 0 compresses every message.
         * @return this.
         */
        public Builder minCompressionSize(final int bytes)
        {
            if (bytes < 0)
            {
                throw new IllegalArgumentException("minCompressionSize must not be negative: " + bytes);
            }
            this.minCompressionSize = bytes;
            return this;
        }

        /**
         * @return the codecs (see {@link #codecRegistry(CodecRegistry)}).
         */
        public CodecRegistry codecRegistry()
        {
            return codecs;
        }

        /**
         * @return the default codec's name, or null for none (see {@link #compression(String)}).
         */
        public String compression()
        {
            return compression;
        }

        /**
         * @return the size below which messages are not compressed.
         */
        public int minCompressionSize()
        {
            return minCompressionSize;
        }

        /**
         * @param bytes largest request payload accepted; larger ones fail the call with RESOURCE_EXHAUSTED.
         * @return this.
         */
        public Builder maxInboundMessageSize(final int bytes)
        {
            if (bytes <= 0)
            {
                throw new IllegalArgumentException("maxInboundMessageSize must be positive: " + bytes);
            }
            this.maxInboundMessageSize = bytes;
            return this;
        }

        /**
         * @param registry an {@code io.micrometer.core.instrument.MeterRegistry}. Typed as Object so that
         *                 micrometer need not be on the class path when metrics are not used.
         * @return this.
         */
        public Builder meterRegistry(final Object registry)
        {
            this.meterRegistry = registry;
            return this;
        }

        /**
         * @param gracePeriod how long {@link RpcServer#shutdown()} lets in-flight calls run.
         * @return this.
         */
        public Builder shutdownGracePeriod(final Duration gracePeriod)
        {
            this.shutdownGracePeriod = Objects.requireNonNull(gracePeriod, "gracePeriod");
            return this;
        }

        /**
         * @param options the transport's settings (for {@code shm://}, {@code tcp://}, {@code rdma://}:
         *                {@code io.reverb.rdma.rpc.EngineOptions}); the address's query parameters override single
         *                fields of them.
         * @return this.
         */
        public Builder transportOptions(final TransportOptions options)
        {
            this.transportOptions = Objects.requireNonNull(options, "options");
            return this;
        }

        /**
         * @param bytes most request metadata a call may bring (default {@value #DEFAULT_MAX_INBOUND_METADATA_SIZE}),
         *              counted as gRPC does: per entry its name's and value's bytes and 32. A call with more is
         *              answered RESOURCE_EXHAUSTED naming the limit, before any handler runs (as grpc-java's
         *              {@code ServerBuilder.maxInboundMetadataSize}).
         * @return this.
         */
        public Builder maxInboundMetadataSize(final int bytes)
        {
            if (bytes <= 0)
            {
                throw new IllegalArgumentException("maxInboundMetadataSize must be positive: " + bytes);
            }
            this.maxInboundMetadataSize = bytes;
            return this;
        }

        /** @return the most request metadata a call may bring, in bytes. */
        public int maxInboundMetadataSize()
        {
            return maxInboundMetadataSize;
        }

        /**
         * @param calls most calls one connection may run at once (default
         *              {@value #DEFAULT_MAX_CONCURRENT_CALLS_PER_CONNECTION}; {@code Integer.MAX_VALUE} for no limit);
         *              a call beyond it is answered RESOURCE_EXHAUSTED naming the limit, before any handler runs (a
         *              balancing client retries it on another replica).
         * @return this.
         */
        public Builder maxConcurrentCallsPerConnection(final int calls)
        {
            if (calls <= 0)
            {
                throw new IllegalArgumentException("maxConcurrentCallsPerConnection must be positive: " + calls);
            }
            this.maxConcurrentCallsPerConnection = calls;
            return this;
        }

        /**
         * Bounds what one connection's compressed requests may hold in memory: their compressed copies waiting to be
         * inflated, and the inflated bytes until the call consumes them (a streaming call's request once it is queued
         * for the handler, whose demand bounds that queue; a unary or server-streaming call's request until the call
         * ends). A compressed request that finds no room fails its call with RESOURCE_EXHAUSTED naming this setting;
         * the connection and its other calls go on. Uncompressed requests are bounded by the transport's own budget.
         *
         * @param bytes the bound (default {@value #DEFAULT_MAX_INFLATED_BYTES_PER_CONNECTION}); raised to
         *              {@link #minInflatedBytesPerConnection(int)} of the inbound limit, so that one message of the
         *              largest size always fits.
         * @return this.
         */
        public Builder maxInflatedBytesPerConnection(final long bytes)
        {
            if (bytes <= 0)
            {
                throw new IllegalArgumentException("maxInflatedBytesPerConnection must be positive: " + bytes);
            }
            this.maxInflatedBytesPerConnection = bytes;
            return this;
        }

        /**
         * @return the bound on what one connection's compressed requests may hold (see
         *         {@link #maxInflatedBytesPerConnection(long)}), as set.
         */
        public long maxInflatedBytesPerConnection()
        {
            return maxInflatedBytesPerConnection;
        }

        /**
         * @param maxInboundMessageSize the inbound limit.
         * @return the least inflation budget that holds one message of that size while it inflates: its compressed
         *         copy (at most the limit) and the growing array (the old and the new one during the last copy, twice
         *         the limit), with room for the per-entry overhead.
         */
        public static long minInflatedBytesPerConnection(final int maxInboundMessageSize)
        {
            return 3L * maxInboundMessageSize + 4096;
        }

        /**
         * Enforces keep-alive (off by default): a client that PINGs more often than {@code minTime}, or while it has
         * no call when {@code permitWithoutCalls} is false, gets strikes; at the third the server sends GOAWAY
         * (RESOURCE_EXHAUSTED, "too many pings") and closes the connection. A new call forgives the strikes.
         *
         * @param minTime            the shortest gap between two PINGs; keep it below the clients' keep-alive time.
         * @param permitWithoutCalls true to accept PINGs on a connection without calls.
         * @return this.
         */
        public Builder permitKeepAlive(final Duration minTime, final boolean permitWithoutCalls)
        {
            if (minTime.isNegative() || minTime.isZero())
            {
                throw new IllegalArgumentException("keep-alive minTime must be positive: " + minTime);
            }
            this.keepAlivePermitNanos = minTime.toNanos();
            this.permitKeepAliveWithoutCalls = permitWithoutCalls;
            return this;
        }

        /**
         * The shortest gap between two PINGs a client may send (grpc-java's {@code permitKeepAliveTime}); turns
         * keep-alive enforcement on (off by default): a client PINGing more often gets strikes, and at the third the
         * server answers GOAWAY (RESOURCE_EXHAUSTED, "too many pings") and closes the connection.
         *
         * @param minTime positive; keep it below the clients' keep-alive interval.
         * @return this.
         */
        public Builder permitKeepAliveTime(final Duration minTime)
        {
            if (minTime.isNegative() || minTime.isZero())
            {
                throw new IllegalArgumentException("keep-alive minTime must be positive: " + minTime);
            }
            this.keepAlivePermitNanos = minTime.toNanos();
            return this;
        }

        /**
         * Whether a client may PING a connection that has no call (grpc-java's {@code permitKeepAliveWithoutCalls};
         * default true here, since enforcement is off by default). False turns enforcement on: a PING on a connection
         * without calls is a strike, and at the third the server answers GOAWAY (RESOURCE_EXHAUSTED, "too many
         * pings") and closes the connection. Clients that set {@code RpcChannel.Builder.keepAliveWithoutCalls(true)}
         * need it true.
         *
         * @param permit true to accept PINGs on a connection without calls.
         * @return this.
         */
        public Builder permitKeepAliveWithoutCalls(final boolean permit)
        {
            this.permitKeepAliveWithoutCalls = permit;
            return this;
        }

        /**
         * Drains each connection once it is about {@code age} old (+-10% jitter): GOAWAY, so that clients open a
         * new connection (and rebalance over replicas), then up to {@code grace} for its calls, then close.
         *
         * @param age   the age, positive.
         * @param grace how long the calls of a drained connection may still run; null for as long as they take.
         * @return this.
         */
        public Builder maxConnectionAge(final Duration age, final Duration grace)
        {
            if (age.isNegative() || age.isZero())
            {
                throw new IllegalArgumentException("maxConnectionAge must be positive: " + age);
            }
            this.maxConnectionAgeNanos = age.toNanos();
            this.maxConnectionAgeGraceNanos = grace == null ? Long.MAX_VALUE : grace.toNanos();
            return this;
        }

        /**
         * The server's own keep-alive (grpc-java's server {@code keepAliveTime} and {@code keepAliveTimeout}): every
         * {@code time} it PINGs each connection, and if nothing at all came back from the client within
         * {@code timeout} it closes the connection, ending its calls with UNAVAILABLE (their handlers are cancelled).
         * That is how a server learns of a client whose host vanished without closing its connections (a crash, a
         * partition): over tcp:// or rdma:// nothing else tells it while it has nothing to send, and the calls and
         * memory of such a client would stay for ever. Default: {@link #DEFAULT_KEEP_ALIVE_TIME} and
         * {@link #DEFAULT_KEEP_ALIVE_TIMEOUT}, as grpc-java's server.
         *
         * @param time    between PINGs, positive; null for never.
         * @param timeout for an answer (or any frame) after a PING, positive.
         * @return this.
         */
        public Builder keepAlive(final Duration time, final Duration timeout)
        {
            if (time != null && (time.isNegative() || time.isZero()))
            {
                throw new IllegalArgumentException("keep-alive time must be positive: " + time);
            }
            if (timeout.isNegative() || timeout.isZero())
            {
                throw new IllegalArgumentException("keep-alive timeout must be positive: " + timeout);
            }
            this.keepAliveTimeNanos = time == null ? Long.MAX_VALUE : saturatedNanos(time);
            this.keepAliveTimeoutNanos = saturatedNanos(timeout);
            return this;
        }

        /**
         * Drains a connection that has had no call for {@code idle} (grpc-java's {@code maxConnectionIdle}): GOAWAY,
         * then close; its client opens a new connection at its next call. Off by default.
         *
         * @param idle positive; null for never.
         * @return this.
         */
        public Builder maxConnectionIdle(final Duration idle)
        {
            if (idle != null && (idle.isNegative() || idle.isZero()))
            {
                throw new IllegalArgumentException("maxConnectionIdle must be positive: " + idle);
            }
            this.maxConnectionIdleNanos = idle == null ? Long.MAX_VALUE : saturatedNanos(idle);
            return this;
        }

        private static long saturatedNanos(final Duration d)
        {
            return d.compareTo(Duration.ofNanos(Long.MAX_VALUE)) >= 0 ? Long.MAX_VALUE : d.toNanos();
        }

        /**
         * Builds a server from a copy of this builder's settings: changing or reusing the builder afterwards does
         * not affect the server.
         *
         * @return the server, not started.
         */
        public RpcServer build()
        {
            return new RpcServer(RpcImplementation.get().newServer(this));
        }

        // ------------------------------------------------------------------ the settings, read by the implementation

        /** @return the address to listen on. */
        public String uri()
        {
            return uri;
        }

        /** @return the services (a copy). */
        public List<ServiceDefinition> services()
        {
            return List.copyOf(services);
        }

        /** @return the interceptors, first outermost (a copy). */
        public List<ServerInterceptor> interceptors()
        {
            return List.copyOf(interceptors);
        }

        /** @return the scheduler handlers run on, or null (see {@link #handlerExecutor()}, else the transport's thread). */
        public Scheduler handlerScheduler()
        {
            return handlerScheduler;
        }

        /** @return the executor handlers run on (a call's tasks one at a time), or null. */
        public Executor handlerExecutor()
        {
            return handlerExecutor;
        }

        /** @return the timer scheduler. */
        public Scheduler timerScheduler()
        {
            return timerScheduler;
        }

        /** @return the largest request payload accepted. */
        public int maxInboundMessageSize()
        {
            return maxInboundMessageSize;
        }

        /** @return the Micrometer MeterRegistry, or null. */
        public Object meterRegistry()
        {
            return meterRegistry;
        }

        /** @return the grace period of {@link RpcServer#shutdown()}. */
        public Duration shutdownGracePeriod()
        {
            return shutdownGracePeriod;
        }

        /** @return the transport's settings. */
        public TransportOptions transportOptions()
        {
            return transportOptions;
        }

        /** @return the calls one connection may run at once. */
        public int maxConcurrentCallsPerConnection()
        {
            return maxConcurrentCallsPerConnection;
        }

        /** @return the shortest gap permitted between a client's PINGs, in nanoseconds (0: not enforced). */
        public long keepAlivePermitNanos()
        {
            return keepAlivePermitNanos;
        }

        /** @return whether PINGs on a connection without calls are accepted. */
        public boolean permitKeepAliveWithoutCalls()
        {
            return permitKeepAliveWithoutCalls;
        }

        /** @return the age after which a connection is drained, in nanoseconds (Long.MAX_VALUE: never). */
        public long maxConnectionAgeNanos()
        {
            return maxConnectionAgeNanos;
        }

        /** @return the time a drained old connection's calls get, in nanoseconds (Long.MAX_VALUE: unbounded). */
        public long maxConnectionAgeGraceNanos()
        {
            return maxConnectionAgeGraceNanos;
        }

        /** @return the gap between the server's keep-alive PINGs, in nanoseconds (Long.MAX_VALUE: none). */
        public long keepAliveTimeNanos()
        {
            return keepAliveTimeNanos;
        }

        /** @return how long the server waits for an answer to its keep-alive PING, in nanoseconds. */
        public long keepAliveTimeoutNanos()
        {
            return keepAliveTimeoutNanos;
        }

        /** @return the time without calls after which a connection is drained, in nanoseconds (Long.MAX_VALUE: never). */
        public long maxConnectionIdleNanos()
        {
            return maxConnectionIdleNanos;
        }

        /** @return the registry of methods not among the services, or null for none. */
        public Function<String, ServiceDefinition.ServerMethodDefinition<?, ?>> fallbackHandlerRegistry()
        {
            return fallbackHandlerRegistry;
        }

        /** @return the handler of calls to methods the server does not serve itself, or null for none. */
        public StreamHandling streamHandler()
        {
            return streamHandler;
        }

        /** @return the stream handler's methods counted each on its own. */
        public List<String> streamMethods()
        {
            return streamMethods;
        }

        /** @return the listeners told of each accepted connection, in the order added (a copy). */
        public List<AcceptedConnection.Listener> connectionListeners()
        {
            return List.copyOf(connectionListeners);
        }
    }

    /**
     * What a server's implementation does ({@link RpcImplementation#newServer}); {@link RpcServer} delegates to it, so
     * that this API package imports none of the implementation. Not for applications.
     */
    public interface Runtime
    {
        /** Binds the address and starts accepting connections. */
        void start();

        /** @return the bound port (network transports), or -1. */
        int port();

        /** @return the address as bound. */
        String address();

        /** @return the grace period of a graceful shutdown without one given. */
        Duration gracePeriod();

        /**
         * Graceful shutdown.
         *
         * @param gracePeriod how long running calls get.
         */
        void shutdown(Duration gracePeriod);

        /** Closes now. */
        void close();

        /**
         * @param timeout how long to wait.
         * @param unit    its unit.
         * @return true if terminated.
         * @throws InterruptedException if interrupted.
         */
        boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException;

        /** @return true once shut down. */
        boolean isShutdown();

        /** @return true once terminated. */
        boolean isTerminated();
    }
}
