package io.reverb.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.observation.DefaultRpcClientObservationConvention;
import io.reverb.rpc.observation.ObservationClientInterceptor;
import io.reverb.rpc.observation.RpcClientObservationContext;
import io.reverb.rpc.observation.RpcClientObservationConvention;
import io.reverb.rpc.observation.RpcObservationDocumentation;
import java.io.InputStream;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * rpc-core's {@link ObservationClientInterceptor} for grpc-java channels: a grpc-java {@link ClientInterceptor} that
 * makes the same observation per call ({@code rpc.client.duration}, the keys of {@link RpcObservationDocumentation},
 * the same {@link RpcClientObservationConvention}), so that a service's calls are one timer whether they come from
 * Reverb's Reactor stubs or grpc-java's stubs over {@link ReverbChannelBuilder}. grpc-java's calls over Reverb do not
 * pass through rpc-core's call interceptors (each is one Reverb stream, with no Reactor call around it): on a
 * grpc-java channel, observation is a grpc-java interceptor, as Micrometer's own {@code ObservationGrpcClientInterceptor}
 * is on Netty's.
 *
 * <p>The observation starts when the call starts, before its headers are sent (a tracing handler's entries, such as
 * {@code traceparent}, are added to them), with the registry's current observation as its parent, and stops when the
 * call closes (with its status; cancelled calls close CANCELLED). Add it last
 * ({@code ReverbChannelBuilder.forTarget(uri).intercept(..., new ReverbObservationClientInterceptor(registry))}):
 * grpc-java runs the last interceptor first, so it wraps the others. With {@link ObservationRegistry#NOOP} it adds
 * nothing to a call.
 */
public final class ReverbObservationClientInterceptor implements ClientInterceptor
{
    private static final DefaultRpcClientObservationConvention DEFAULT_CONVENTION = new DefaultRpcClientObservationConvention();

    private final ObservationRegistry registry;
    private final RpcClientObservationConvention convention;
    // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's MethodDescriptor is imported, Reverb's is spelled out
    /** Reverb's descriptor of each grpc-java method seen, for the observation's keys (one per method, not per call). */
    private final ConcurrentHashMap<String, io.reverb.rpc.MethodDescriptor<InputStream, InputStream>> methods =
        new ConcurrentHashMap<>();
    // CHECKSTYLE.ON: InlineFullyQualifiedName

    /**
     * @param registry where the observations go.
     */
    public ReverbObservationClientInterceptor(final ObservationRegistry registry)
    {
        this(registry, null);
    }

    /**
     * @param registry   where the observations go.
     * @param convention names and keys to use instead of the defaults, or null for the defaults.
     */
    public ReverbObservationClientInterceptor(final ObservationRegistry registry,
        final RpcClientObservationConvention convention)
    {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.convention = convention;
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(final MethodDescriptor<Q, R> method, final CallOptions callOptions,
        final Channel next)
    {
        final ClientCall<Q, R> call = next.newCall(method, callOptions);
        if (registry.isNoop())
        {
            return call;
        }
        return new ObservedCall<>(call, descriptor(method));
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - Reverb's MethodDescriptor, CallOptions, Metadata, Status beside grpc-java's
    private io.reverb.rpc.MethodDescriptor<InputStream, InputStream> descriptor(final MethodDescriptor<?, ?> method)
    {
        final io.reverb.rpc.MethodDescriptor<InputStream, InputStream> known = methods.get(method.getFullMethodName());
        return known != null ? known : methods.computeIfAbsent(
            method.getFullMethodName(), name -> GrpcBridge.descriptor(name, method.getType()));
    }

    /** One observed call: the observation starts with the call and stops when its listener is told it closed. */
    private final class ObservedCall<Q, R> extends ForwardingClientCall.SimpleForwardingClientCall<Q, R>
    {
        private final io.reverb.rpc.MethodDescriptor<InputStream, InputStream> method;

        ObservedCall(final ClientCall<Q, R> delegate, final io.reverb.rpc.MethodDescriptor<InputStream, InputStream> method)
        {
            super(delegate);
            this.method = method;
        }

        @Override
        public void start(final Listener<R> listener, final Metadata headers)
        {
            // Reverb's view of the call, as rpc-core's interceptor sees its calls: the tracing handler writes into its
            // request metadata, which goes out with grpc-java's headers
            final ClientCallContext call = new ClientCallContext(method, io.reverb.rpc.CallOptions.DEFAULT);
            final RpcClientObservationContext context = new RpcClientObservationContext(call);
            final Observation observation = RpcObservationDocumentation.CLIENT.observation(
                convention, DEFAULT_CONVENTION, () -> context, registry);
            observation.start();
            final io.reverb.rpc.Metadata added = call.requestMetadataToSend();
            if (added != null && !added.isEmpty())
            {
                headers.merge(GrpcBridge.toGrpc(added));
            }
            try
            {
                super.start(new ObservedListener<>(listener, call, observation), headers);
            }
            catch (final RuntimeException | Error e)
            {
                // grpc-java never calls back a call whose start threw: the observation ends here
                call.closed(io.reverb.rpc.Status.fromThrowable(e), null);
                observation.error(e);
                observation.stop();
                throw e;
            }
        }
    }

    /** Ends the observation with the call's status, before the application's listener hears of it. */
    private static final class ObservedListener<R> extends ForwardingClientCallListener.SimpleForwardingClientCallListener<R>
    {
        private final ClientCallContext call;
        private final Observation observation;

        ObservedListener(final ClientCall.Listener<R> delegate, final ClientCallContext call,
            final Observation observation)
        {
            super(delegate);
            this.call = call;
            this.observation = observation;
        }

        @Override
        public void onHeaders(final Metadata headers)
        {
            call.responseHeaders(GrpcBridge.toReverb(headers));
            super.onHeaders(headers);
        }

        @Override
        public void onClose(final Status status, final Metadata trailers)
        {
            final io.reverb.rpc.Status ended = GrpcBridge.toReverb(status);
            call.closed(ended, GrpcBridge.toReverb(trailers));
            if (!status.isOk())
            {
                // as rpc-core's interceptor: a call that ends with an error status is an observation's error
                observation.error(ended.asException());
            }
            // stopped before the application's listener runs: a caller that reads the timers once it has its
            // answer finds its call counted
            observation.stop();
            super.onClose(status, trailers);
        }
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName
}
