package io.reverb.services.health;

import io.reverb.rpc.RpcException;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.services.health.HealthCheckResponse.ServingStatus;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The server side of health checking: holds each service's {@link ServingStatus} and serves them through
 * {@link #healthService()} ({@code reverb.health.v1.Health}: {@code Check} and {@code Watch}).
 *
 * <pre>{@code
 * HealthStatusManager health = new HealthStatusManager();
 * RpcServer server = RpcServer.builder(uri).addService(new GreeterService())
 *     .addService(health.healthService()).build().start();
 * health.setStatus(GreeterRpc.SERVICE_NAME, ServingStatus.SERVING);
 * ...
 * health.enterTerminalState();      // before shutdown(grace): clients stop picking this replica
 * server.shutdown(Duration.ofSeconds(5));
 * }</pre>
 *
 * The server as a whole (service name {@value #SERVICE_NAME_ALL_SERVICES}) starts SERVING. Thread-safe.
 */
public final class HealthStatusManager
{
    /** The name that stands for the whole server. */
    public static final String SERVICE_NAME_ALL_SERVICES = "";
    /**
     * Most services whose status may be set, and most names without a status that clients may watch at once: a
     * client's names never count against the server's own, and a watch holds its name only while it is subscribed.
     */
    public static final int MAX_SERVICES = 1024;

    // guarded by this
    private final Map<String, ServingStatus> statuses = new HashMap<>();
    /** Names with a Watch subscribed now; a name's entry goes with its last subscriber. */
    private final Map<String, Watched> watchers = new HashMap<>();
    /** Entries of {@link #watchers} whose name has no status. */
    private int unknownWatched;
    private boolean terminal;
    private final HealthService service = new HealthService();

    /**
     * Creates a manager with the whole server SERVING.
     */
    public HealthStatusManager()
    {
        setStatus(SERVICE_NAME_ALL_SERVICES, ServingStatus.SERVING);
    }

    /**
     * @return the {@code reverb.health.v1.Health} service to add to the server.
     */
    public HealthRpc.HealthImplBase healthService()
    {
        return service;
    }

    /**
     * Sets a service's status; watchers hear of it if it changed. Ignored after {@link #enterTerminalState()}.
     *
     * @param serviceName the service, e.g. {@code GreeterRpc.SERVICE_NAME}, or {@value #SERVICE_NAME_ALL_SERVICES}.
     * @param status      SERVING or NOT_SERVING (or UNKNOWN).
     * @throws IllegalArgumentException for SERVICE_UNKNOWN (use {@link #clearStatus(String)}) or UNRECOGNIZED.
     * @throws IllegalStateException if {@link #MAX_SERVICES} services have a status already.
     */
    public synchronized void setStatus(final String serviceName, final ServingStatus status)
    {
        Objects.requireNonNull(serviceName, "serviceName");
        if (status == ServingStatus.SERVICE_UNKNOWN || status == ServingStatus.UNRECOGNIZED)
        {
            throw new IllegalArgumentException("cannot set " + status + "; use clearStatus to forget a service");
        }
        if (terminal)
        {
            return;
        }
        if (!statuses.containsKey(serviceName))
        {
            if (statuses.size() >= MAX_SERVICES)
            {
                throw new IllegalStateException("more than " + MAX_SERVICES + " services in the health status manager");
            }
            if (watchers.containsKey(serviceName))
            {
                unknownWatched--;
            }
        }
        statuses.put(serviceName, status);
        publish(serviceName, status);
    }

    /**
     * Forgets a service: Check answers NOT_FOUND, watchers hear SERVICE_UNKNOWN. Ignored after
     * {@link #enterTerminalState()}.
     *
     * @param serviceName the service.
     */
    public synchronized void clearStatus(final String serviceName)
    {
        if (terminal)
        {
            return;
        }
        if (statuses.remove(serviceName) != null)
        {
            if (watchers.containsKey(serviceName))
            {
                unknownWatched++;
            }
            publish(serviceName, ServingStatus.SERVICE_UNKNOWN);
        }
    }

    /**
     * Marks every known service NOT_SERVING for good (later {@link #setStatus} calls are ignored): call it before
     * draining the server so that clients stop picking it while calls in flight finish.
     */
    public synchronized void enterTerminalState()
    {
        terminal = true;
        for (final Map.Entry<String, ServingStatus> entry : statuses.entrySet())
        {
            entry.setValue(ServingStatus.NOT_SERVING);
            publish(entry.getKey(), ServingStatus.NOT_SERVING);
        }
    }

    /**
     * Undoes {@link #enterTerminalState()} for a server started again: {@link #setStatus} counts from now on. Every
     * service, the whole server ({@value #SERVICE_NAME_ALL_SERVICES}) included, stays NOT_SERVING until set again.
     */
    public synchronized void leaveTerminalState()
    {
        terminal = false;
    }

    /**
     * @param serviceName the service.
     * @return its status, or null if not known.
     */
    public synchronized ServingStatus status(final String serviceName)
    {
        return statuses.get(serviceName);
    }

    private void publish(final String serviceName, final ServingStatus status)
    {
        final Watched watched = watchers.get(serviceName);
        if (watched != null)
        {
            // serialised by this object's lock, so the sink never sees concurrent emissions
            watched.sink.tryEmitNext(status);
        }
    }

    /** @return the statuses of a service from now on, its current one first; the name is held while subscribed. */
    private Flux<ServingStatus> watch(final String serviceName)
    {
        return Flux.defer(() ->
        {
            final Watched watched = subscribe(serviceName);
            if (watched == null)
            {
                return Flux.error(Status.RESOURCE_EXHAUSTED
                    .withDescription("more than " + MAX_SERVICES + " services without a status watched").asException());
            }
            return watched.sink.asFlux().doFinally(signal -> unsubscribe(serviceName, watched));
        });
    }

    /** @return the name's entry with one more subscriber, or null if it has no status and too many such are watched */
    private synchronized Watched subscribe(final String serviceName)
    {
        Watched watched = watchers.get(serviceName);
        if (watched == null)
        {
            final ServingStatus now = statuses.get(serviceName);
            if (now == null)
            {
                if (unknownWatched >= MAX_SERVICES)
                {
                    return null;
                }
                unknownWatched++;
            }
            watched = new Watched();
            watched.sink.tryEmitNext(now != null ? now : ServingStatus.SERVICE_UNKNOWN);
            watchers.put(serviceName, watched);
        }
        watched.subscribers++;
        return watched;
    }

    /** A watch ended (cancelled, or its call over): the last one takes the name's entry with it. */
    private synchronized void unsubscribe(final String serviceName, final Watched watched)
    {
        if (--watched.subscribers == 0 && watchers.get(serviceName) == watched)
        {
            watchers.remove(serviceName);
            if (!statuses.containsKey(serviceName))
            {
                unknownWatched--;
            }
        }
    }

    /** A watched name: the latest status for late subscribers, and how many are subscribed (guarded by the manager). */
    private static final class Watched
    {
        final Sinks.Many<ServingStatus> sink = Sinks.many().replay().latest();
        int subscribers;
    }

    private static HealthCheckResponse response(final ServingStatus status)
    {
        return HealthCheckResponse.newBuilder().setStatus(status).build();
    }

    /** The generated service's implementation over this manager's state. */
    private final class HealthService extends HealthRpc.HealthImplBase
    {
        @Override
        public Mono<HealthCheckResponse> check(final HealthCheckRequest request)
        {
            final ServingStatus status = status(request.getService());
            if (status == null)
            {
                return Mono.error(new RpcException(Status.fromCode(StatusCode.NOT_FOUND)
                    .withDescription("unknown service '" + request.getService() + "'")));
            }
            return Mono.just(response(status));
        }

        @Override
        public Flux<HealthCheckResponse> watch(final HealthCheckRequest request)
        {
            return HealthStatusManager.this.watch(request.getService()).distinctUntilChanged()
                .map(HealthStatusManager::response)
                // a slow watcher needs only the latest status, never a backlog
                .onBackpressureLatest();
        }
    }
}
