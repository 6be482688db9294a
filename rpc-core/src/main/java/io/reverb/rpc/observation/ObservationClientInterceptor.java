package io.reverb.rpc.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.ClientInterceptor;
import io.reverb.rpc.Status;
import java.util.Objects;
import reactor.core.publisher.Flux;
import reactor.core.publisher.SignalType;

/**
 * Observes every call of a channel: one {@link Observation} ({@code rpc.client.duration}) per call, started when the
 * call is subscribed, before the call is sent (so that a tracing handler can put the trace context into the request
 * metadata), and stopped when the status arrived or the subscriber cancelled. Its parent is the observation in the
 * subscriber's Reactor context (key {@value #OBSERVATION_CONTEXT_KEY}) or else the registry's current one.
 *
 * <p>Add it first ({@code RpcChannel.builder(uri).intercept(new ObservationClientInterceptor(registry))}) so that
 * it wraps the other interceptors. With {@link ObservationRegistry#NOOP} it costs a few allocations per call; not
 * adding it costs nothing.
 */
public final class ObservationClientInterceptor implements ClientInterceptor
{
    /**
     * Where Micrometer's context propagation keeps the current observation in a Reactor context
     * ({@code ObservationThreadLocalAccessor.KEY}).
     */
    public static final String OBSERVATION_CONTEXT_KEY = "micrometer.observation";

    private static final DefaultRpcClientObservationConvention DEFAULT_CONVENTION = new DefaultRpcClientObservationConvention();

    private final ObservationRegistry registry;
    private final RpcClientObservationConvention convention;

    /**
     * @param registry where the observations go.
     */
    public ObservationClientInterceptor(final ObservationRegistry registry)
    {
        this(registry, null);
    }

    /**
     * @param registry   where the observations go.
     * @param convention names and keys to use instead of the defaults, or null for the defaults.
     */
    public ObservationClientInterceptor(final ObservationRegistry registry, final RpcClientObservationConvention convention)
    {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.convention = convention;
    }

    @Override
    public <Req, Resp> Flux<Resp> interceptCall(final ClientCallContext call, final Flux<Req> requests,
        final Next<Req, Resp> next)
    {
        if (registry.isNoop())
        {
            return next.call(requests);
        }
        return Flux.deferContextual(reactorContext ->
        {
            final RpcClientObservationContext context = new RpcClientObservationContext(call);
            final Observation observation = RpcObservationDocumentation.CLIENT.observation(
                convention, DEFAULT_CONVENTION, () -> context, registry);
            final Observation parent = reactorContext.getOrDefault(OBSERVATION_CONTEXT_KEY, null);
            if (parent != null)
            {
                observation.parentObservation(parent);
            }
            // Starting writes the trace context into call.requestMetadata(), which the transport sends next.
            observation.start();
            return next.call(requests)
                .doOnError(observation::error)
                .doFinally(signal ->
                {
                    context.status(endStatus(call, signal));
                    observation.stop();
                })
                .contextWrite(c -> c.put(OBSERVATION_CONTEXT_KEY, observation));
        });
    }

    private static Status endStatus(final ClientCallContext call, final SignalType signal)
    {
        final Status status = call.status();
        if (status != null)
        {
            return status;
        }
        return signal == SignalType.ON_COMPLETE ? Status.OK : signal == SignalType.CANCEL ? Status.CANCELLED : Status.UNKNOWN;
    }
}
