package io.reverb.grpc;

import io.grpc.HandlerRegistry;
import io.grpc.InternalChannelz;
import io.grpc.InternalInstrumented;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.MethodDescriptor.MethodType;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerStreamTracer;
import io.grpc.internal.GrpcUtil;
import io.grpc.internal.InternalServer;
import io.grpc.internal.ServerListener;
import io.grpc.internal.ServerTransport;
import io.grpc.internal.SharedResourceHolder;
import io.grpc.internal.StatsTraceContext;
import io.reverb.rpc.AcceptedConnection;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Operators;

import java.io.IOException;
import java.io.InputStream;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.UnaryOperator;

/**
 * grpc-java's transport server (its {@link InternalServer}, the listener) over one {@link RpcServer}: the Reverb
 * server listens, accepts connections and runs the wire protocol. Each connection it accepts becomes one grpc-java
 * {@link ServerTransport} ({@link ReverbServerTransport}), as each accepted channel is one for Netty: grpc-java's
 * per-transport filters, channelz and handshake timeout see one transport per Reverb connection. Every call on a
 * connection becomes a {@link ReverbServerStream} handed to that transport's listener, which dispatches it to the
 * service, its interceptors and executor as it would a Netty stream.
 */
final class ReverbServer implements InternalServer
{
    /** The accept-encoding every Reverb client has. */
    private static final byte[] GZIP = "gzip".getBytes(StandardCharsets.US_ASCII);
    /** Graceful shutdown lets calls run to their end, as grpc-java's does; shutdownNow cancels them. */
    private static final Duration GRACEFUL = Duration.ofDays(365);

    private final ReverbAddress address;
    private final RpcServer rpcServer;
    private final List<? extends ServerStreamTracer.Factory> tracerFactories;
    private final ScheduledExecutorService timer = SharedResourceHolder.get(GrpcUtil.TIMER_SERVICE);
    private ServerListener serverListener;
    private volatile ReverbAddress boundAddress;
    /** Transports created and not yet terminated; with {@link #shutdown}, decides when the timer is released. */
    private int liveTransports;
    private boolean shutdown;
    private boolean timerReleased;

    ReverbServer(
        final String uri, final List<ServerServiceDefinition> services, final HandlerRegistry fallback,
        final List<? extends ServerStreamTracer.Factory> tracerFactories, final UnaryOperator<RpcServer.Builder> configure)
    {
        this.address = new ReverbAddress(uri);
        this.boundAddress = address;
        this.tracerFactories = tracerFactories;
        final RpcServer.Builder builder = RpcServer.builder(uri);
        final Map<String, ServiceDefinition.Builder> byService = new LinkedHashMap<>();
        for (final ServerServiceDefinition service : services)
        {
            final String serviceName = service.getServiceDescriptor().getName();
            final ServiceDefinition.Builder definition = byService.computeIfAbsent(serviceName, ServiceDefinition::builder);
            for (final ServerMethodDefinition<?, ?> method : service.getMethods())
            {
                final MethodDescriptor<?, ?> grpcMethod = method.getMethodDescriptor();
                definition.addMethod(
                    GrpcBridge.descriptor(grpcMethod.getFullMethodName(), grpcMethod.getType()),
                    handlerOf(grpcMethod));
            }
        }
        byService.values().forEach(b -> builder.addService(b.build()));
        if (fallback != null)
        {
            // the registered services are found first (by rpc-core, then again by grpc-java's ServerImpl, which
            // dispatches the stream); a method found in neither ends UNIMPLEMENTED, as on Netty
            builder.fallbackHandlerRegistry(name -> fallbackMethod(fallback, name));
        }
        // added after the user's settings, which may add listeners of their own
        this.rpcServer = configure.apply(builder).addConnectionListener(new Connections()).build();
    }

    private Handler handlerOf(final MethodDescriptor<?, ?> grpcMethod)
    {
        return grpcMethod.getType() == MethodType.UNARY ?
            new UnaryHandler(grpcMethod.getFullMethodName()) : new Handler(grpcMethod.getFullMethodName());
    }

    /**
     * A method of the fallback registry as a Reverb method: its type decides how rpc-core runs the call (the unary fast
     * path or a stream); grpc-java's server looks it up again when the stream reaches it, so a registry that changed
     * meanwhile answers that call as it now stands (UNIMPLEMENTED if the method went away).
     */
    private ServiceDefinition.ServerMethodDefinition<?, ?> fallbackMethod(final HandlerRegistry fallback,
        final String fullMethodName)
    {
        final ServerMethodDefinition<?, ?> method = fallback.lookupMethod(fullMethodName, null);
        if (method == null)
        {
            return null;
        }
        final MethodDescriptor<?, ?> grpcMethod = method.getMethodDescriptor();
        return ServiceDefinition.ServerMethodDefinition.of(
            GrpcBridge.descriptor(fullMethodName, grpcMethod.getType()), handlerOf(grpcMethod));
    }

    ReverbAddress address()
    {
        return boundAddress;
    }

    List<? extends ServerStreamTracer.Factory> tracerFactories()
    {
        return tracerFactories;
    }

    ScheduledExecutorService timer()
    {
        return timer;
    }

    // ---------------------------------------------------------------- InternalServer

    @Override
    public void start(final ServerListener listener) throws IOException
    {
        this.serverListener = listener;
        try
        {
            rpcServer.start();
        }
        catch (final RuntimeException e)
        {
            synchronized (this)
            {
                shutdown = true;
                releaseTimerIfDoneLocked();
            }
            throw new IOException("cannot serve " + address + ": " + e.getMessage(), e);
        }
        boundAddress = new ReverbAddress(rpcServer.address());
    }

    /**
     * Stops listening and tells grpc-java's server, which then shuts down (or, after its shutdownNow, closes) each
     * connection's transport. The Reverb server's own graceful shutdown sends every connection GOAWAY at once, so that
     * a connection accepted as the listener closed is drained too.
     */
    @Override
    public void shutdown()
    {
        synchronized (this)
        {
            if (shutdown)
            {
                return;
            }
            shutdown = true;
        }
        rpcServer.shutdown(GRACEFUL); // accepts no connection from here on
        synchronized (this)
        {
            releaseTimerIfDoneLocked();
        }
        if (serverListener != null)
        {
            serverListener.serverShutdown();
        }
    }

    @Override
    public SocketAddress getListenSocketAddress()
    {
        return boundAddress;
    }

    @Override
    public InternalInstrumented<InternalChannelz.SocketStats> getListenSocketStats()
    {
        return null;
    }

    @Override
    public List<? extends SocketAddress> getListenSocketAddresses()
    {
        return Collections.singletonList(boundAddress);
    }

    @Override
    public List<InternalInstrumented<InternalChannelz.SocketStats>> getListenSocketStatsList()
    {
        return null;
    }

    /** The grpc-java timer is shared (reference-counted): released once shut down and every transport ended. */
    private void releaseTimerIfDoneLocked()
    {
        if (shutdown && liveTransports == 0 && !timerReleased)
        {
            timerReleased = true;
            SharedResourceHolder.release(GrpcUtil.TIMER_SERVICE, timer);
        }
    }

    @Override
    public String toString()
    {
        return "ReverbServer{" + boundAddress + "}";
    }

    /** Makes one grpc-java transport of each connection the Reverb server accepts, and ends it with the connection. */
    private final class Connections implements AcceptedConnection.Listener
    {
        @Override
        public void connectionAccepted(final AcceptedConnection connection)
        {
            final ReverbServerTransport transport = new ReverbServerTransport(ReverbServer.this, connection);
            synchronized (ReverbServer.this)
            {
                if (timerReleased)
                {
                    // accepted as the server shut down: rpc-core refuses the connection (nothing was created for it)
                    throw new IllegalStateException("the grpc-java server is shut down");
                }
                liveTransports++;
            }
            connection.attach(transport);
            try
            {
                // before the first call on the connection reaches a handler (rpc-core's guarantee): before streamCreated
                transport.start(serverListener.transportCreated(transport), boundAddress);
            }
            catch (final RuntimeException | Error e)
            {
                connection.attach(null); // rpc-core refuses the connection and tells no end of it to this listener
                transportEnded();
                throw e;
            }
        }

        @Override
        public void connectionClosed(final AcceptedConnection connection, final Throwable cause)
        {
            final Object attached = connection.attachment();
            if (!(attached instanceof ReverbServerTransport))
            {
                return; // never ours: a listener added before this one refused the connection
            }
            ((ReverbServerTransport)attached).terminated();
            transportEnded();
        }

        private void transportEnded()
        {
            synchronized (ReverbServer.this)
            {
                liveTransports--;
                releaseTimerIfDoneLocked();
            }
        }
    }

    /** Turns each Reverb call of one method into a grpc-java stream. */
    private class Handler implements ServerCallHandler<InputStream, InputStream>
    {
        private final String fullMethodName;

        Handler(final String fullMethodName)
        {
            this.fullMethodName = fullMethodName;
        }

        @Override
        public Publisher<InputStream> handle(final Flux<InputStream> requests)
        {
            return subscriber ->
            {
                final ReverbServerStream stream = open(subscriber, null);
                if (stream != null)
                {
                    requests.subscribe(stream);
                }
            };
        }

        /**
         * Creates the grpc-java stream of a call and subscribes rpc-core's subscriber to its responses.
         *
         * @param unaryRequest a unary call's request, or null for a streaming call's stream.
         * @return the stream, or null if the call could not start (the subscriber got the error).
         */
        final ReverbServerStream open(final Subscriber<? super InputStream> subscriber, final InputStream unaryRequest)
        {
            final RpcContext.Carrier call = callOf(subscriber);
            if (call == null)
            {
                // rpc-core subscribes with the call's context; anything else is a bug, not a client's doing
                Operators.error(subscriber, Status.INTERNAL
                    .withDescription("no call context for " + fullMethodName).asException());
                return null;
            }
            final AcceptedConnection connection = call.connection();
            final Object attached = connection == null ? null : connection.attachment();
            if (!(attached instanceof ReverbServerTransport))
            {
                // every connection gets its transport when accepted, before its first call; anything else is a bug
                Operators.error(subscriber, Status.INTERNAL
                    .withDescription("no grpc-java transport for the connection of " + fullMethodName).asException());
                return null;
            }
            final ReverbServerTransport transport = (ReverbServerTransport)attached;
            // without a peer's grpc-timeout (the deadline travels in the CALL frame), with gzip accepted unless the
            // client said otherwise (every Reverb client decompresses gzip, engine protocol v3)
            final Metadata headers = GrpcBridge.serverHeaders(call.requestMetadataIfAny(), GZIP);
            final Deadline deadline = call.deadline();
            if (deadline != null)
            {
                headers.put(GrpcUtil.TIMEOUT_KEY, Math.max(1, deadline.timeRemainingNanos()));
            }
            final StatsTraceContext stats = StatsTraceContext.newServerContext(tracerFactories, fullMethodName, headers);
            final ReverbServerStream stream =
                new ReverbServerStream(transport.streamAttributes(), call, stats, unaryRequest);
            transport.streamCreated(stream, fullMethodName, headers);
            stream.responses().subscribe(subscriber);
            return stream;
        }
    }

    /**
     * @return the call whose responses the subscriber takes: rpc-core's own subscriber, read without making the call's
     *         context (a plain grpc-java call never needs it); another subscriber (e.g. an rpc-core interceptor's
     *         operator) has it in its Reactor context; null if neither.
     */
    private static RpcContext.Carrier callOf(final Subscriber<?> subscriber)
    {
        if (subscriber instanceof RpcContext.Carrier)
        {
            return (RpcContext.Carrier)subscriber;
        }
        final RpcContext context = RpcContext.of(subscriber);
        return context == null ? null : () -> context;
    }

    /**
     * A unary method: rpc-core invokes it with the request itself (its unary fast path, no request Flux), and the
     * stream gives that one message, with the end of requests, once grpc-java asked for it and rpc-core subscribed to
     * the responses ({@link ReverbServerStream#requestsReady}).
     */
    private final class UnaryHandler extends Handler implements ServerCallHandler.Unary<InputStream, InputStream>
    {
        UnaryHandler(final String fullMethodName)
        {
            super(fullMethodName);
        }

        @Override
        public Publisher<InputStream> invoke(final InputStream request)
        {
            return subscriber ->
            {
                final ReverbServerStream stream = open(subscriber, request);
                if (stream != null)
                {
                    stream.requestsReady();
                }
            };
        }
    }
}
