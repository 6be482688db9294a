package io.reverb.grpc;

import io.grpc.Context;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.observation.DefaultRpcServerObservationConvention;
import io.reverb.rpc.observation.ObservationServerInterceptor;
import io.reverb.rpc.observation.RpcObservationDocumentation;
import io.reverb.rpc.observation.RpcServerObservationContext;
import io.reverb.rpc.observation.RpcServerObservationConvention;

import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * rpc-core's {@link ObservationServerInterceptor} for grpc-java servers: a grpc-java {@link ServerInterceptor} that
 * makes the same observation per call ({@code rpc.server.duration}, the same keys and
 * {@link RpcServerObservationConvention}), so that a method's calls are one timer whether a native Reverb service or a
 * grpc-java service over {@link ReverbServerBuilder} serves them. grpc-java's calls on a Reverb server are streams
 * that grpc-java's server dispatches (rpc-core's server interceptors never see them): observation there is a grpc-java
 * interceptor, as Micrometer's own {@code ObservationGrpcServerInterceptor} is on Netty.
 *
 * <p>The observation starts when the call starts, with the client's metadata as its carrier (a tracing handler
 * continues the client's trace), is current while the handler starts the call and runs each callback, and stops when
 * the call ends: with its status when the server closed it, CANCELLED (DEADLINE_EXCEEDED once the deadline passed)
 * when it was cancelled. Add it last ({@code ServerInterceptors.intercept(service, ..., interceptor)} or
 * {@code builder.intercept(interceptor)}, which grpc-java runs first). With {@link ObservationRegistry#NOOP} it adds
 * nothing to a call.
 */
public final class ReverbObservationServerInterceptor implements ServerInterceptor
{
    private static final DefaultRpcServerObservationConvention DEFAULT_CONVENTION =
        new DefaultRpcServerObservationConvention();

    private final ObservationRegistry registry;
    private final RpcServerObservationConvention convention;
    /** Method descriptors kept at most (one per method served; more only behind a fallback registry). */
    private static final int MAX_CACHED = 1024;
    // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's MethodDescriptor is imported, Reverb's is spelled out
    /** Reverb's descriptor of each grpc-java method seen, for the observation's keys (one per method, not per call). */
    private final ConcurrentHashMap<String, io.reverb.rpc.MethodDescriptor<InputStream, InputStream>> methods =
        new ConcurrentHashMap<>();
    // CHECKSTYLE.ON: InlineFullyQualifiedName

    /**
     * @param registry where the observations go.
     */
    public ReverbObservationServerInterceptor(final ObservationRegistry registry)
    {
        this(registry, null);
    }

    /**
     * @param registry   where the observations go.
     * @param convention names and keys to use instead of the defaults, or null for the defaults.
     */
    public ReverbObservationServerInterceptor(final ObservationRegistry registry,
        final RpcServerObservationConvention convention)
    {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.convention = convention;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(final ServerCall<Q, R> call, final Metadata headers,
        final ServerCallHandler<Q, R> next)
    {
        if (registry.isNoop())
        {
            return next.startCall(call, headers);
        }
        final MethodDescriptor<Q, R> method = call.getMethodDescriptor();
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's Deadline beside Reverb's
        final io.grpc.Deadline grpcDeadline = Context.current().getDeadline();
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        final Deadline deadline = grpcDeadline == null ? null :
            Deadline.after(grpcDeadline.timeRemaining(TimeUnit.NANOSECONDS), TimeUnit.NANOSECONDS,
                Deadline.Ticker.SYSTEM);
        final RpcContext context = new RpcContext(descriptor(method), GrpcBridge.toReverb(headers), deadline,
            peerOf(call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR)));
        final RpcServerObservationContext observed = new RpcServerObservationContext(context);
        final Observation observation = RpcObservationDocumentation.SERVER.observation(
            convention, DEFAULT_CONVENTION, () -> observed, registry);
        observation.start();
        final Ending ending = new Ending(observed, observation);
        final ServerCall<Q, R> closing = new ForwardingServerCall.SimpleForwardingServerCall<>(call)
        {
            @Override
            public void close(final Status status, final Metadata trailers)
            {
                ending.status(status);
                super.close(status, trailers);
            }
        };
        final ServerCall.Listener<Q> listener;
        try (Observation.Scope scope = observation.openScope())
        {
            listener = next.startCall(closing, headers);
        }
        catch (final RuntimeException | Error e)
        {
            ending.failed(e);
            throw e;
        }
        return new ObservedListener<>(listener, observation, ending, deadline);
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - Reverb's MethodDescriptor and Status beside grpc-java's
    private io.reverb.rpc.MethodDescriptor<InputStream, InputStream> descriptor(final MethodDescriptor<?, ?> method)
    {
        final io.reverb.rpc.MethodDescriptor<InputStream, InputStream> known = methods.get(method.getFullMethodName());
        if (known != null)
        {
            return known;
        }
        // a server with a fallback registry may serve any name a client makes up: past MAX_CACHED, made per call
        return methods.size() >= MAX_CACHED ? GrpcBridge.descriptor(method.getFullMethodName(), method.getType()) :
            methods.computeIfAbsent(method.getFullMethodName(), name -> GrpcBridge.descriptor(name, method.getType()));
    }

    /** The end of one observed call, once: the status the server closed it with, or how it was cancelled. */
    private static final class Ending
    {
        private final RpcServerObservationContext context;
        private final Observation observation;
        private final AtomicBoolean stopped = new AtomicBoolean();
        private volatile Status closedWith;

        Ending(final RpcServerObservationContext context, final Observation observation)
        {
            this.context = context;
            this.observation = observation;
        }

        void status(final Status status)
        {
            closedWith = status;
        }

        void failed(final Throwable t)
        {
            // as grpc-java's server closes a call whose handler threw: its status exceptions keep their code
            stop(GrpcBridge.toReverb(Status.fromThrowable(t)), t);
        }

        /** The call is over: with the status it was closed with, or cancelled (then the deadline decides which). */
        void ended(final boolean cancelled, final Deadline deadline)
        {
            final Status closed = closedWith;
            if (!cancelled && closed != null)
            {
                final io.reverb.rpc.Status status = GrpcBridge.toReverb(closed);
                stop(status, status.isOk() ? null : status.asException());
                return;
            }
            stop(deadline != null && deadline.isExpired() ? io.reverb.rpc.Status.DEADLINE_EXCEEDED :
                io.reverb.rpc.Status.CANCELLED, null);
        }

        private void stop(final io.reverb.rpc.Status status, final Throwable error)
        {
            if (!stopped.compareAndSet(false, true))
            {
                return;
            }
            context.status(status);
            if (error != null)
            {
                observation.error(error);
            }
            observation.stop();
        }
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName

    /** Runs each callback with the observation current, and ends it with the call. */
    private static final class ObservedListener<Q> extends ForwardingServerCallListener.SimpleForwardingServerCallListener<Q>
    {
        private final Observation observation;
        private final Ending ending;
        private final Deadline deadline;

        ObservedListener(final ServerCall.Listener<Q> delegate, final Observation observation, final Ending ending,
            final Deadline deadline)
        {
            super(delegate);
            this.observation = observation;
            this.ending = ending;
            this.deadline = deadline;
        }

        @Override
        public void onMessage(final Q message)
        {
            try (Observation.Scope scope = observation.openScope())
            {
                super.onMessage(message);
            }
        }

        @Override
        public void onHalfClose()
        {
            try (Observation.Scope scope = observation.openScope())
            {
                super.onHalfClose();
            }
        }

        @Override
        public void onReady()
        {
            try (Observation.Scope scope = observation.openScope())
            {
                super.onReady();
            }
        }

        @Override
        public void onComplete()
        {
            try
            {
                super.onComplete();
            }
            finally
            {
                ending.ended(false, deadline);
            }
        }

        @Override
        public void onCancel()
        {
            try
            {
                super.onCancel();
            }
            finally
            {
                ending.ended(true, deadline);
            }
        }
    }

    /** @return the peer as native calls name it: {@code ip:port} for an IP transport's, the Reverb address otherwise. */
    private static String peerOf(final SocketAddress peer)
    {
        if (peer instanceof InetSocketAddress && ((InetSocketAddress)peer).getAddress() != null)
        {
            final InetSocketAddress inet = (InetSocketAddress)peer;
            final String ip = inet.getAddress().getHostAddress();
            return (ip.indexOf(':') >= 0 ? "[" + ip + "]" : ip) + ":" + inet.getPort();
        }
        return peer == null ? "unknown" : peer.toString();
    }
}
