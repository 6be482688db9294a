package io.reverb.grpc;

import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.InternalChannelz;
import io.grpc.InternalInstrumented;
import io.grpc.InternalLogId;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.MethodDescriptor.MethodType;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.grpc.internal.GrpcAttributes;
import io.grpc.internal.GrpcUtil;
import io.grpc.internal.InternalServer;
import io.grpc.internal.ServerListener;
import io.grpc.internal.ServerTransport;
import io.grpc.internal.ServerTransportListener;
import io.grpc.internal.SharedResourceHolder;
import io.grpc.internal.StatsTraceContext;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.ServiceDefinition;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Operators;

import java.io.IOException;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.UnaryOperator;

/**
 * grpc-java's server transport over one {@link RpcServer}: the Reverb server listens, accepts connections and runs
 * the wire protocol; every call it receives becomes a {@link ReverbServerStream} handed to grpc-java's server, which
 * dispatches it to the service, its interceptors and executor as it would a Netty stream.
 *
 * <p>It is both grpc-java's {@link InternalServer} (the listener) and its one {@link ServerTransport}: grpc-java
 * sees all Reverb connections of the server as one transport, so its per-transport filters and channelz see one.
 */
final class ReverbServerTransport implements InternalServer, ServerTransport
{
    /** Graceful shutdown lets calls run to their end, as grpc-java's does; shutdownNow cancels them. */
    private static final Duration GRACEFUL = Duration.ofDays(365);

    private final InternalLogId logId;
    private final ReverbAddress address;
    private final RpcServer rpcServer;
    private final List<? extends ServerStreamTracer.Factory> tracerFactories;
    private final ScheduledExecutorService timer = SharedResourceHolder.get(GrpcUtil.TIMER_SERVICE);
    private final ConcurrentHashMap<String, Attributes> peerAttributes = new ConcurrentHashMap<>();
    private ServerListener serverListener;
    private volatile ServerTransportListener transportListener;
    private volatile ReverbAddress boundAddress;
    private boolean shutdown;
    private boolean terminated;

    ReverbServerTransport(
        final String uri, final List<ServerServiceDefinition> services,
        final List<? extends ServerStreamTracer.Factory> tracerFactories, final UnaryOperator<RpcServer.Builder> configure)
    {
        this.logId = InternalLogId.allocate(ReverbServerTransport.class, uri);
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
                    grpcMethod.getType() == MethodType.UNARY ?
                        new UnaryHandler(grpcMethod.getFullMethodName()) : new Handler(grpcMethod.getFullMethodName()));
            }
        }
        byService.values().forEach(b -> builder.addService(b.build()));
        this.rpcServer = configure.apply(builder).build();
    }

    ReverbAddress address()
    {
        return boundAddress;
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
            SharedResourceHolder.release(GrpcUtil.TIMER_SERVICE, timer);
            throw new IOException("cannot serve " + address + ": " + e.getMessage(), e);
        }
        boundAddress = new ReverbAddress(rpcServer.address());
        final ServerTransportListener transportListener = listener.transportCreated(this);
        transportListener.transportReady(Attributes.newBuilder()
            .set(Grpc.TRANSPORT_ATTR_LOCAL_ADDR, boundAddress)
            .build());
        this.transportListener = transportListener;
        final Thread watcher = new Thread(this::awaitTermination, "reverb-grpc-server-" + address);
        watcher.setDaemon(true);
        watcher.start();
    }

    @Override
    public void shutdown()
    {
        // both InternalServer.shutdown (stop listening) and ServerTransport.shutdown (drain calls) land here
        final boolean first;
        synchronized (this)
        {
            first = !shutdown;
            shutdown = true;
        }
        if (first)
        {
            rpcServer.shutdown(GRACEFUL);
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

    // ---------------------------------------------------------------- ServerTransport

    @Override
    public void shutdownNow(final Status reason)
    {
        shutdown();
        rpcServer.close();
    }

    @Override
    public ScheduledExecutorService getScheduledExecutorService()
    {
        return timer;
    }

    @Override
    public InternalLogId getLogId()
    {
        return logId;
    }

    @Override
    public ListenableFuture<InternalChannelz.SocketStats> getStats()
    {
        return Futures.immediateFuture(null); // no socket of its own to report
    }

    /**
     * @param peer a client's address as the Reverb transport describes it.
     * @return the attributes of its calls (cached: one set per connection, not per call).
     */
    Attributes attributesFor(final String peer)
    {
        final String key = peer == null ? "unknown" : peer;
        Attributes attributes = peerAttributes.get(key);
        if (attributes == null)
        {
            if (peerAttributes.size() > 4096)
            {
                peerAttributes.clear(); // peers come and go; bound the cache
            }
            attributes = Attributes.newBuilder()
                .set(Grpc.TRANSPORT_ATTR_REMOTE_ADDR, new ReverbAddress(key))
                .set(Grpc.TRANSPORT_ATTR_LOCAL_ADDR, boundAddress)
                .set(GrpcAttributes.ATTR_SECURITY_LEVEL, address.securityLevel())
                .build();
            peerAttributes.put(key, attributes);
        }
        return attributes;
    }

    private void awaitTermination()
    {
        try
        {
            while (!rpcServer.awaitTermination(1, TimeUnit.SECONDS))
            {
                // keep waiting: grpc-java's graceful shutdown has no deadline of its own
            }
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            return;
        }
        synchronized (this)
        {
            if (terminated)
            {
                return;
            }
            terminated = true;
        }
        SharedResourceHolder.release(GrpcUtil.TIMER_SERVICE, timer);
        transportListener.transportTerminated();
    }

    @Override
    public String toString()
    {
        return "ReverbServerTransport{" + boundAddress + "}";
    }

    /** Turns each Reverb call of one method into a grpc-java stream. */
    private class Handler implements ServerCallHandler<Payload, Payload>
    {
        private final String fullMethodName;

        Handler(final String fullMethodName)
        {
            this.fullMethodName = fullMethodName;
        }

        @Override
        public Publisher<Payload> handle(final Flux<Payload> requests)
        {
            return subscriber ->
            {
                final ReverbServerStream stream = open(subscriber);
                if (stream != null)
                {
                    requests.subscribe(stream);
                }
            };
        }

        /**
         * Creates the grpc-java stream of a call and subscribes rpc-core's subscriber to its responses.
         *
         * @return the stream, or null if the call could not start (the subscriber got the error).
         */
        final ReverbServerStream open(final Subscriber<? super Payload> subscriber)
        {
            final RpcContext context = subscriber instanceof CoreSubscriber ?
                RpcContext.from(((CoreSubscriber<?>)subscriber).currentContext()) : null;
            if (context == null)
            {
                // rpc-core subscribes with the call's context; anything else is a bug, not a client's doing
                // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's Status is imported, Reverb's is spelled out
                Operators.error(subscriber, io.reverb.rpc.Status.INTERNAL
                    .withDescription("no call context for " + fullMethodName).asException());
                // CHECKSTYLE.ON: InlineFullyQualifiedName
                return null;
            }
            final Metadata headers = GrpcBridge.toGrpc(context.metadata());
            // the deadline travels in the CALL frame; a peer's metadata must not pose as grpc-java's header
            headers.discardAll(GrpcUtil.TIMEOUT_KEY);
            final Deadline deadline = context.deadline();
            if (deadline != null)
            {
                headers.put(GrpcUtil.TIMEOUT_KEY, Math.max(1, deadline.timeRemainingNanos()));
            }
            final StatsTraceContext stats = StatsTraceContext.newServerContext(tracerFactories, fullMethodName, headers);
            final ReverbServerStream stream = new ReverbServerStream(ReverbServerTransport.this, context, stats);
            transportListener.streamCreated(stream, fullMethodName, headers);
            stream.responses().subscribe(subscriber);
            return stream;
        }
    }

    /**
     * A unary method: rpc-core invokes it with the request itself (its unary fast path, no request Flux), and the
     * stream gets that one message when grpc-java asks for it.
     */
    private final class UnaryHandler extends Handler implements ServerCallHandler.Unary<Payload, Payload>
    {
        UnaryHandler(final String fullMethodName)
        {
            super(fullMethodName);
        }

        @Override
        public Publisher<Payload> invoke(final Payload request)
        {
            return subscriber ->
            {
                final ReverbServerStream stream = open(subscriber);
                if (stream != null)
                {
                    stream.onSubscribe(new SingleRequest(stream, request));
                }
            };
        }
    }

    /** The one request of a unary call, given to the stream on its first demand, then the end of requests. */
    private static final class SingleRequest implements Subscription
    {
        private static final AtomicIntegerFieldUpdater<SingleRequest> STATE =
            AtomicIntegerFieldUpdater.newUpdater(SingleRequest.class, "state");

        private final ReverbServerStream stream;
        private final Payload request;
        /** 0 waiting, 1 delivered or cancelled. */
        private volatile int state;

        SingleRequest(final ReverbServerStream stream, final Payload request)
        {
            this.stream = stream;
            this.request = request;
        }

        @Override
        public void request(final long n)
        {
            if (n > 0 && STATE.compareAndSet(this, 0, 1))
            {
                stream.onNext(request);
                stream.onComplete();
            }
        }

        @Override
        public void cancel()
        {
            state = 1;
        }
    }
}
