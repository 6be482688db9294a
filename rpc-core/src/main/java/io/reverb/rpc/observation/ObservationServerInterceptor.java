package io.reverb.rpc.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.ServerInterceptor;
import io.reverb.rpc.Status;
import io.reverb.rpc.internal.GrpcStatusExceptions;
import java.util.Objects;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;

/**
 * Observes every call a server handles: one {@link Observation} ({@code rpc.server.duration}) per call, started
 * before the handler is invoked (a tracing handler reads the client's trace context from the call's metadata, so
 * the server span continues the client's trace), and stopped when the handler's responses ended or the call was
 * cancelled. The handler's publisher sees the observation in its Reactor context (key
 * {@value ObservationClientInterceptor#OBSERVATION_CONTEXT_KEY}), so calls it makes with an observed channel are
 * its children.
 *
 * <p>Add it first ({@code RpcServer.builder(uri).intercept(new ObservationServerInterceptor(registry))}) so that
 * it wraps the other interceptors. With {@link ObservationRegistry#NOOP} it costs nothing but a check per call;
 * not adding it costs nothing.
 */
public final class ObservationServerInterceptor implements ServerInterceptor
{
    private static final DefaultRpcServerObservationConvention DEFAULT_CONVENTION = new DefaultRpcServerObservationConvention();

    private final ObservationRegistry registry;
    private final RpcServerObservationConvention convention;

    /**
     * @param registry where the observations go.
     */
    public ObservationServerInterceptor(final ObservationRegistry registry)
    {
        this(registry, null);
    }

    /**
     * @param registry   where the observations go.
     * @param convention names and keys to use instead of the defaults, or null for the defaults.
     */
    public ObservationServerInterceptor(final ObservationRegistry registry, final RpcServerObservationConvention convention)
    {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.convention = convention;
    }

    @Override
    public <Req, Resp> Publisher<Resp> interceptCall(
        final RpcContext rpcContext, final Flux<Req> requests, final ServerCallHandler<Req, Resp> next)
    {
        if (registry.isNoop())
        {
            return next.handle(requests);
        }
        final RpcServerObservationContext context = new RpcServerObservationContext(rpcContext);
        final Observation observation = RpcObservationDocumentation.SERVER.observation(
            convention, DEFAULT_CONVENTION, () -> context, registry);
        return Flux.defer(() ->
            {
                observation.start();
                // The scope makes the observation (and its span) current while the handler assembles its publisher.
                try (Observation.Scope scope = observation.openScope())
                {
                    return Flux.from(next.handle(requests));
                }
            })
            .doOnError(error ->
            {
                // the status the call ends with: a grpc-java status exception's, as the client sees (not UNKNOWN)
                context.status(Status.fromThrowable(GrpcStatusExceptions.translate(error)));
                observation.error(error);
            })
            .doOnComplete(() -> context.status(Status.OK))
            .doOnCancel(() -> context.status(cancelStatus(rpcContext)))
            .doFinally(signal -> observation.stop())
            .contextWrite(c -> c.put(ObservationClientInterceptor.OBSERVATION_CONTEXT_KEY, observation));
    }

    private static Status cancelStatus(final RpcContext rpcContext)
    {
        final Deadline deadline = rpcContext.deadline();
        return deadline != null && deadline.isExpired() ? Status.DEADLINE_EXCEEDED : Status.CANCELLED;
    }
}
