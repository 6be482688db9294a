package io.reverb.rpc.internal;

import io.reverb.rpc.compression.Codec;
import io.reverb.common.LogLimiter;
import io.reverb.common.counters.ProcessCounters;
import io.reverb.rpc.AcceptedConnection;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServerInterceptor;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportProvider;
import io.reverb.rpc.transport.Transports;
import io.reverb.rpc.transport.stream.ServerStreamHandler;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The runtime behind {@code io.reverb.rpc.RpcServer} (which depends on it, never the reverse): method registry,
 * listener, connections, graceful shutdown.
 */
public final class ServerRuntime implements RpcServer.Runtime
{
    /** A connection listener that fails does so for every connection a peer opens: its lines are rate-limited. */
    private static final LogLimiter LISTENER_FAILURE_LOG = new LogLimiter();
    private final ServerConfig config;
    private final OutboundCompression defaultCompression;
    private final URI uri;
    private final TransportProvider provider;
    private final Map<String, ServiceDefinition.ServerMethodDefinition<?, ?>> methods = new HashMap<>();
    private final Set<String> services = new HashSet<>();
    private final MethodRegistry<ServiceDefinition.ServerMethodDefinition<?, ?>> registry;
    private final ServerInterceptor[] interceptors;
    /** The stream handler's listed methods, as descriptors of its marshaller; empty without a handler. */
    private final MethodRegistry<MethodDescriptor<Object, Object>> streamMethods;
    /** The descriptor every other call of the stream handler is counted under, or null without a handler. */
    private final MethodDescriptor<Object, Object> otherStreamMethod;
    private final CallMetrics metrics;
    /** The process's counters file, or null where Agrona cannot run (the in-process transport without the flag). */
    private final ProcessCounters processCounters;
    /** Each method's counters (immutable after construction; empty without processCounters). */
    private final IdentityHashMap<MethodDescriptor<?, ?>, ServerMethodCounters> methodCounters = new IdentityHashMap<>();
    private final AtomicBoolean countersReleased = new AtomicBoolean();
    private final AcceptedConnection.Listener[] connectionListeners;
    private final Set<ServerWireConnection> connections = ConcurrentHashMap.newKeySet();
    private final CountDownLatch terminated = new CountDownLatch(1);
    private volatile ServerListener listener;
    private volatile boolean started;
    private volatile boolean shutdown;
    private volatile Disposable graceTimer;
    /** Tests only: runs the inflater lanes of connections accepted from now on, instead of the shared pool. */
    volatile Executor inflaterOverride;

    /**
     * @param config the server's configuration.
     */
    public ServerRuntime(final ServerConfig config)
    {
        this(config, List.of());
    }

    /**
     * @param config              the server's configuration.
     * @param connectionListeners told of each accepted connection and its end, in order.
     */
    public ServerRuntime(final ServerConfig config, final List<AcceptedConnection.Listener> connectionListeners)
    {
        this(config, connectionListeners, null);
    }

    /**
     * @param config              the server's configuration.
     * @param connectionListeners told of each accepted connection and its end, in order.
     * @param provider            the transport, or null for the one registered for the address's scheme (tests
     *                            give their own).
     */
    ServerRuntime(final ServerConfig config, final List<AcceptedConnection.Listener> connectionListeners,
        final TransportProvider provider)
    {
        this.config = config;
        final Codec codec = config.compression == null ? null : config.codecs.lookup(config.compression);
        this.defaultCompression = codec == null ? OutboundCompression.NONE :
            new OutboundCompression(codec, config.minCompressionSize);
        this.connectionListeners = connectionListeners.toArray(new AcceptedConnection.Listener[0]);
        this.uri = Transports.parse(config.uri);
        this.provider = provider != null ? provider : Transports.providerFor(uri);
        for (final ServiceDefinition service : config.services)
        {
            services.add(service.serviceName());
            for (final ServiceDefinition.ServerMethodDefinition<?, ?> method : service.methods())
            {
                methods.put(method.method().fullMethodName(), method);
            }
        }
        this.registry = new MethodRegistry<>(methods);
        this.interceptors = config.interceptors;
        final Map<String, MethodDescriptor<Object, Object>> byName = new HashMap<>();
        if (config.streamHandler != null)
        {
            for (final String name : config.streamMethods)
            {
                byName.put(name, streamDescriptor(config.streamHandler, name));
            }
            otherStreamMethod = streamDescriptor(config.streamHandler, RpcServer.Builder.OTHER_METHOD);
        }
        else
        {
            otherStreamMethod = null;
        }
        this.streamMethods = new MethodRegistry<>(byName);
        this.processCounters = ProcessCounters.accessible() ? ProcessCounters.acquire() : null;
        if (processCounters != null)
        {
            for (final ServiceDefinition.ServerMethodDefinition<?, ?> method : methods.values())
            {
                methodCounters.put(method.method(),
                    new ServerMethodCounters(processCounters, String.valueOf(config.uri), method.method().fullMethodName()));
            }
            for (final MethodDescriptor<Object, Object> method : byName.values())
            {
                methodCounters.put(method,
                    new ServerMethodCounters(processCounters, String.valueOf(config.uri), method.fullMethodName()));
            }
            if (otherStreamMethod != null)
            {
                methodCounters.put(otherStreamMethod, new ServerMethodCounters(processCounters,
                    String.valueOf(config.uri), otherStreamMethod.fullMethodName()));
            }
        }
        this.metrics = CallMetrics.create(config.meterRegistry, "server", processCounters == null ? null : this::callsInFlight);
    }

    /**
     * @param method a method of this server.
     * @return its counters, or null when this process keeps none.
     */
    ServerMethodCounters counters(final MethodDescriptor<?, ?> method)
    {
        return methodCounters.get(method);
    }

    /** @return calls started and not finished, over every method (from the counters). */
    private long callsInFlight()
    {
        long total = 0;
        for (final ServerMethodCounters counters : methodCounters.values())
        {
            total += counters.inFlight();
        }
        return total;
    }

    /** Frees the methods' counters once every call has ended. */
    private void releaseCounters()
    {
        if (processCounters != null && countersReleased.compareAndSet(false, true))
        {
            for (final ServerMethodCounters counters : methodCounters.values())
            {
                counters.close();
            }
            processCounters.release();
        }
    }

    /**
     * @return what responses are compressed with when the handler names no codec (the server's {@code compression}).
     */
    OutboundCompression defaultCompression()
    {
        return defaultCompression;
    }

    ServerConfig config()
    {
        return config;
    }

    ServiceDefinition.ServerMethodDefinition<?, ?> method(final String fullMethodName)
    {
        return methods.get(fullMethodName);
    }

    /**
     * @param fullMethodName a method not among the services.
     * @return its definition in the fallback registry ({@code RpcServer.Builder.fallbackHandlerRegistry}), or null.
     */
    boolean hasFallback()
    {
        return config.fallbackHandlerRegistry != null;
    }

    ServiceDefinition.ServerMethodDefinition<?, ?> fallbackMethod(final String fullMethodName)
    {
        return config.fallbackHandlerRegistry == null ? null : config.fallbackHandlerRegistry.apply(fullMethodName);
    }

    MethodRegistry<ServiceDefinition.ServerMethodDefinition<?, ?>> methods()
    {
        return registry;
    }

    @SuppressWarnings("unchecked")
    private static MethodDescriptor<Object, Object> streamDescriptor(final ServerStreamHandler<?> handler,
        final String name)
    {
        final Marshaller<Object> marshaller = (Marshaller<Object>)handler.marshaller();
        return MethodDescriptor.<Object, Object>newBuilder()
            .fullMethodName(name)
            .type(MethodDescriptor.MethodType.BIDI_STREAMING) // what a stream is: its owner knows the method's type
            .requestMarshaller(marshaller)
            .responseMarshaller(marshaller)
            .build();
    }

    /** @return the handler of the calls no service or fallback serves, or null. */
    ServerStreamHandler<?> streamHandler()
    {
        return config.streamHandler;
    }

    /**
     * @param buffer a CALL frame's buffer.
     * @param offset where its method name starts.
     * @param length the name's length.
     * @return the descriptor a stream handler's call of that method is counted under: the method's if listed, else
     *         the shared {@link RpcServer.Builder#OTHER_METHOD}'s.
     */
    MethodDescriptor<Object, Object> streamMethod(final ByteBuffer buffer, final int offset, final int length)
    {
        final MethodDescriptor<Object, Object> listed = streamMethods.find(buffer, offset, length);
        return listed != null ? listed : otherStreamMethod;
    }

    boolean hasService(final String serviceName)
    {
        return services.contains(serviceName);
    }

    ServerInterceptor[] interceptors()
    {
        return interceptors;
    }

    Scheduler handlerScheduler()
    {
        return config.handlerScheduler;
    }

    /**
     * @return what runs the connections' inflater lanes: null for the process's shared inflater pool.
     */
    Executor inflater()
    {
        return inflaterOverride;
    }

    Scheduler timer()
    {
        return config.timerScheduler;
    }

    /** A call's deadline: see {@link ClientCallStarter#scheduleDeadline}. */
    Disposable scheduleDeadline(final Runnable task, final long delayNanos)
    {
        return config.timerScheduler == Schedulers.parallel() ? DeadlineTimer.shared().schedule(task, delayNanos) :
            config.timerScheduler.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
    }

    CallMetrics metrics()
    {
        return metrics;
    }

    /**
     * Binds and starts accepting.
     */
    public synchronized void start()
    {
        if (started)
        {
            throw new IllegalStateException("already started");
        }
        if (shutdown)
        {
            throw new IllegalStateException("shut down");
        }
        try
        {
            listener = provider.listen(uri, config.transportOptions, connection ->
            {
                if (shutdown)
                {
                    return null;
                }
                final ServerWireConnection serverConnection = new ServerWireConnection(this, connection);
                connections.add(serverConnection);
                if (shutdown)
                {
                    // shutdown began after the check above: its GOAWAY loop and its grace timer may have missed
                    // this connection, which would then stay open (and the server unterminated, or terminated
                    // with it open). Refused like one a listener refuses; the transport closes it.
                    serverConnection.refused();
                    connectionClosed(serverConnection);
                    return null;
                }
                if (!announce(serverConnection))
                {
                    serverConnection.refused(); // the transport closes it: no handler, no event
                    connectionClosed(serverConnection);
                    return null;
                }
                return serverConnection;
            });
        }
        catch (final IOException | RuntimeException e)
        {
            // a server that could not start is done: what it acquired at build (its counters in the process's file)
            // goes now, as a caller with `builder.build().start()` has no server to close
            shutdown = true;
            checkTerminated();
            if (e instanceof RuntimeException)
            {
                throw (RuntimeException)e;
            }
            throw Status.UNAVAILABLE.withDescription("cannot listen on " + config.uri + ": " + e.getMessage())
                .withCause(e).asException();
        }
        started = true;
    }

    /**
     * @return bound port or -1.
     */
    public int port()
    {
        final ServerListener l = listener;
        return l == null ? -1 : l.port();
    }

    /**
     * @return bound address.
     */
    public String address()
    {
        final ServerListener l = listener;
        return l == null ? config.uri : l.address();
    }

    /**
     * @return configured grace period.
     */
    public Duration gracePeriod()
    {
        return config.shutdownGracePeriod;
    }

    /**
     * Graceful shutdown.
     *
     * @param gracePeriod how long calls may still run.
     */
    public void shutdown(final Duration gracePeriod)
    {
        synchronized (this)
        {
            if (shutdown)
            {
                return;
            }
            shutdown = true;
        }
        final ServerListener l = listener;
        if (l != null)
        {
            l.close();
        }
        for (final ServerWireConnection connection : connections)
        {
            connection.goAway();
        }
        if (!connections.isEmpty())
        {
            graceTimer = timer().schedule(() -> closeConnections(Status.UNAVAILABLE.withDescription("server shut down")),
                gracePeriod.toNanos(), TimeUnit.NANOSECONDS);
        }
        checkTerminated();
    }

    private void closeConnections(final Status status)
    {
        for (final ServerWireConnection connection : connections)
        {
            try
            {
                connection.closeNow(status);
            }
            catch (final RuntimeException e)
            {
                WireConnection.PEER_LOG.log("closing a connection threw", "closing " + connection.peer() + " threw", e);
            }
        }
    }

    /**
     * Immediate shutdown, then waits up to 5 s for connections to close; not from one of this server's handlers,
     * where the connection that runs it (and, inline, every connection of its thread) closes only once it returns.
     */
    public void close()
    {
        shutdown(Duration.ofDays(1));
        closeConnections(Status.UNAVAILABLE.withDescription("server closed"));
        if (ServerCallScope.inHandlerOf(this))
        {
            return; // waiting here would wait on this thread for 5 s (grpc-java's shutdownNow never waits)
        }
        try
        {
            awaitTermination(5, TimeUnit.SECONDS);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Tells the connection listeners of a new connection, before any of its events.
     *
     * @return false if one of them threw: the connection is refused, and those told before are told of its end.
     */
    private boolean announce(final ServerWireConnection connection)
    {
        for (int i = 0; i < connectionListeners.length; i++)
        {
            try
            {
                connectionListeners[i].connectionAccepted(connection);
            }
            catch (final RuntimeException e)
            {
                logListenerFailure("connectionAccepted", connection, e);
                final Exception cause = new IllegalStateException("refused: a connection listener failed", e);
                for (int j = 0; j < i; j++)
                {
                    notifyClosed(connectionListeners[j], connection, cause);
                }
                return false;
            }
        }
        connection.announced();
        return true;
    }

    void connectionClosed(final ServerWireConnection connection)
    {
        connections.remove(connection);
        checkTerminated();
    }

    /**
     * Tells the connection listeners that an announced connection ended (after the runtime let go of it).
     *
     * @param connection the connection.
     * @param cause      null for an orderly close.
     */
    void announceClosed(final ServerWireConnection connection, final Throwable cause)
    {
        for (final AcceptedConnection.Listener listener : connectionListeners)
        {
            notifyClosed(listener, connection, cause);
        }
    }

    private static void notifyClosed(
        final AcceptedConnection.Listener listener, final ServerWireConnection connection, final Throwable cause)
    {
        try
        {
            listener.connectionClosed(connection, cause);
        }
        catch (final RuntimeException e)
        {
            logListenerFailure("connectionClosed", connection, e);
        }
    }

    private static void logListenerFailure(final String event, final ServerWireConnection connection, final Throwable e)
    {
        final long left = LISTENER_FAILURE_LOG.admit(event);
        if (left != LogLimiter.SUPPRESS)
        {
            WireConnection.LOG.warn("a connection listener failed in {} (connection from {}){}", event,
                connection.remoteAddress(), left > 0 ? " (" + left + " more such failures were not logged)" : "", e);
        }
    }

    private void checkTerminated()
    {
        if (shutdown && connections.isEmpty())
        {
            final Disposable timer = graceTimer;
            if (timer != null)
            {
                timer.dispose();
            }
            releaseCounters();
            terminated.countDown();
        }
    }

    /**
     * @param timeout how long.
     * @param unit    unit.
     * @return true if terminated.
     * @throws InterruptedException if interrupted.
     */
    public boolean awaitTermination(final long timeout, final TimeUnit unit) throws InterruptedException
    {
        return terminated.await(timeout, unit);
    }

    /**
     * @return true once shutdown began.
     */
    public boolean isShutdown()
    {
        return shutdown;
    }

    /**
     * @return true once terminated.
     */
    public boolean isTerminated()
    {
        return terminated.getCount() == 0;
    }

    @Override
    public String toString()
    {
        return address();
    }
}
