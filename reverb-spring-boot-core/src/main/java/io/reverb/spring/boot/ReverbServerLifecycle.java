package io.reverb.spring.boot;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.RpcService;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.services.health.HealthCheckResponse.ServingStatus;
import io.reverb.services.health.HealthStatusManager;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.availability.ApplicationAvailability;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.boot.ssl.SslBundles;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.ApplicationEventPublisherAware;
import org.springframework.context.EnvironmentAware;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.Environment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.MutablePropertySources;

/**
 * The Reverb server of a Spring application: serves every {@link RpcService} bean (generated {@code FooImplBase}
 * subclasses) and, with reverb-grpc, every grpc-java {@code BindableService} bean, on {@code reverb.server.address},
 * together with Reverb's health service (unless Spring gRPC's or net.devh's gRPC server serves the
 * {@code BindableService} beans: {@code reverb.server.grpc-services}). Starts with the context when there is at least
 * one service bean, and stops with it, as Spring Boot's web servers do:
 *
 * <ul>
 *   <li>graceful ({@code reverb.server.shutdown}, by default Spring Boot's {@code server.shutdown}, graceful unless
 *   set): the health service turns NOT_SERVING, the server stops accepting and tells its clients to go away (GOAWAY),
 *   and calls in flight may finish within the grace period ({@code reverb.server.shutdown-grace-period}, by default
 *   {@code spring.lifecycle.timeout-per-shutdown-phase}); those still running then are cancelled;</li>
 *   <li>immediate: every call is cancelled (clients see UNAVAILABLE) and every connection closed at once.</li>
 * </ul>
 *
 * It stops in the phase of Spring Boot's web servers, before any bean is destroyed, so handlers can use other beans
 * until the last call ends. A server still running when its bean is destroyed (a refresh that failed after it started,
 * which stops no lifecycle on Spring 6.2) is closed then, at once, so that it neither holds its port nor keeps the JVM
 * alive.
 *
 * <p>Once bound, each service is SERVING in the health service, and so is the whole server
 * ({@value HealthStatusManager#SERVICE_NAME_ALL_SERVICES}) unless the context has Spring Boot's
 * {@code ApplicationAvailability}: then the whole server is NOT_SERVING until the application accepts traffic
 * ({@code ReadinessState.ACCEPTING_TRAFFIC}, after the {@code ApplicationRunner}s), and follows readiness from then
 * on ({@link ReverbReadiness}), so that balancing clients that health-check it pick it only once it is ready.
 *
 * <p>Once bound, as Spring Boot does for {@code local.server.port}, it puts {@value #LOCAL_ADDRESS} (the address as
 * bound) and {@value #LOCAL_PORT} (its port, when the address has one: {@code tcp://127.0.0.1:0} resolved) into the
 * environment, in the property source {@value #PORTS}, and publishes a {@link ReverbServerStartedEvent}.
 *
 * <p>{@code reverb.server.auth-token} and {@code reverb.server.tls.*} become the engine settings of the server's
 * transport (before the customizers, which may replace them). A server that listens beyond loopback with neither a
 * token nor TLS logs one warning when it starts.
 */
public class ReverbServerLifecycle
    implements SmartLifecycle, DisposableBean, EnvironmentAware, ApplicationEventPublisherAware
{
    /** The phase of Spring Boot's web server start/stop: started late, stopped early. */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 1024;
    /** The environment property of the address as bound. */
    public static final String LOCAL_ADDRESS = "local.reverb.address";
    /** The environment property of the bound port (absent when the address has none). */
    public static final String LOCAL_PORT = "local.reverb.port";
    /** The name of the property source that holds {@value #LOCAL_ADDRESS} and {@value #LOCAL_PORT}. */
    public static final String PORTS = "reverb.server.ports";
    /** How long an immediate shutdown (and the end of a graceful one) waits for connections to close. */
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

    private static final Logger LOG = LoggerFactory.getLogger(ReverbServerLifecycle.class);

    private final ReverbProperties.Server properties;
    private final List<RpcService> services;
    private final Serving.GrpcFactory grpc;
    private final List<ReverbServerCustomizer> customizers;
    private final HealthStatusManager health;
    private final ReverbProperties.Shutdown shutdown;
    private final Duration gracePeriod;
    private final SslBundles bundles;
    /** Spring Boot's availability, or null: the whole server is then SERVING once bound. */
    private final ApplicationAvailability availability;
    private final List<String> serviceNames = new ArrayList<>();
    /** reverb.server.max-inbound-message-size in bytes, or 0 for RpcServer's default. */
    private final int maxInboundMessageSize;
    private Environment environment;
    private ApplicationEventPublisher events;
    /** The token and TLS of reverb.server.*, made once so that every builder shares one engine. */
    private EngineConfig engine;
    private boolean engineMade;
    /** Whether the last configured builder's engine has a token or TLS (customizers included). */
    private boolean secured;
    private boolean warnedUnsecured;
    private Serving serving;
    /** Counted down when the server stops; a non-daemon thread waits on it, so the JVM lives while serving. */
    private CountDownLatch stopped;
    private volatile String boundAddress;
    private volatile boolean running;

    /**
     * @param properties  {@code reverb.server.*}.
     * @param services    the native services.
     * @param grpc        the grpc-java services and how to serve them, or null without reverb-grpc.
     * @param customizers applied to the server's builder after the properties, in this order.
     * @param health      the health service's state, or null for no health service.
     * @param shutdown    graceful or immediate.
     * @param gracePeriod how long calls in flight may run after a graceful shutdown began.
     * @param bundles     Spring Boot's SSL bundles for {@code reverb.server.tls.bundle}, or null if there are none.
     * @param availability Spring Boot's application availability, or null: without it the whole server is SERVING
     *                    once bound, with it only while the application accepts traffic.
     */
    ReverbServerLifecycle(
        final ReverbProperties.Server properties, final List<RpcService> services, final Serving.GrpcFactory grpc,
        final List<ReverbServerCustomizer> customizers, final HealthStatusManager health,
        final ReverbProperties.Shutdown shutdown, final Duration gracePeriod, final SslBundles bundles,
        final ApplicationAvailability availability)
    {
        this.bundles = bundles;
        this.availability = availability;
        this.properties = Objects.requireNonNull(properties, "properties");
        this.services = List.copyOf(services);
        this.grpc = grpc;
        this.customizers = List.copyOf(customizers);
        this.health = health;
        this.shutdown = Objects.requireNonNull(shutdown, "shutdown");
        this.gracePeriod = Objects.requireNonNull(gracePeriod, "gracePeriod");
        PropertyChecks.notNegative("reverb.server.shutdown-grace-period", gracePeriod);
        this.maxInboundMessageSize = properties.getMaxInboundMessageSize() == null ? 0 :
            PropertyChecks.messageSize("reverb.server.max-inbound-message-size", properties.getMaxInboundMessageSize());
    }

    /** The keep-alive and connection-lifetime properties, each checked (positive) and named when it is not. */
    private void connectionLifetimes(final RpcServer.Builder builder)
    {
        final Duration pingTime = properties.getKeepAliveTime();
        final Duration pingTimeout = properties.getKeepAliveTimeout();
        if (pingTime != null || pingTimeout != null)
        {
            if (pingTime != null)
            {
                PropertyChecks.positive("reverb.server.keep-alive-time", pingTime);
            }
            if (pingTimeout != null)
            {
                PropertyChecks.positive("reverb.server.keep-alive-timeout", pingTimeout);
            }
            builder.keepAlive(pingTime != null ? pingTime : Duration.ofNanos(builder.keepAliveTimeNanos()),
                pingTimeout != null ? pingTimeout : Duration.ofNanos(builder.keepAliveTimeoutNanos()));
        }
        if (properties.getMaxConnectionIdle() != null)
        {
            PropertyChecks.positive("reverb.server.max-connection-idle", properties.getMaxConnectionIdle());
            builder.maxConnectionIdle(properties.getMaxConnectionIdle());
        }
        if (properties.getMaxConnectionAge() != null)
        {
            PropertyChecks.positive("reverb.server.max-connection-age", properties.getMaxConnectionAge());
            if (properties.getMaxConnectionAgeGrace() != null)
            {
                PropertyChecks.notNegative("reverb.server.max-connection-age-grace", properties.getMaxConnectionAgeGrace());
            }
            builder.maxConnectionAge(properties.getMaxConnectionAge(), properties.getMaxConnectionAgeGrace());
        }
    }

    @Override
    public void setEnvironment(final Environment environment)
    {
        this.environment = environment;
    }

    @Override
    public void setApplicationEventPublisher(final ApplicationEventPublisher events)
    {
        this.events = events;
    }

    /**
     * @return the address the server listens on (an ephemeral port resolved), or null while it is not running.
     */
    public String address()
    {
        return running ? boundAddress : null;
    }

    /**
     * @return the names of the services served (native and grpc-java), empty before start.
     */
    public synchronized List<String> serviceNames()
    {
        return List.copyOf(serviceNames);
    }

    /**
     * @return whether there is anything to serve (a server starts only then).
     */
    public boolean hasServices()
    {
        return !services.isEmpty() || grpc != null && !grpc.serviceNames().isEmpty();
    }

    /**
     * @return graceful or immediate.
     */
    public ReverbProperties.Shutdown shutdownMode()
    {
        return shutdown;
    }

    /**
     * @return the grace period of a graceful shutdown.
     */
    public Duration gracePeriod()
    {
        return gracePeriod;
    }

    @Override
    public synchronized void start()
    {
        if (running)
        {
            return;
        }
        if (!hasServices())
        {
            LOG.debug("no Reverb service beans: no Reverb server started");
            return;
        }
        final String address = properties.getAddress();
        if (address == null || address.isBlank())
        {
            throw new IllegalStateException("reverb.server.address is empty: set where to serve, e.g. reverb://0.0.0.0:9090");
        }
        serving = grpc == null || grpc.serviceNames().isEmpty() ?
            Serving.of(configure(RpcServer.builder(address.trim())).build()) :
            grpc.create(address.trim(), this::configure);
        serving.start();
        boundAddress = serving.address();
        running = true;
        keepJvmAlive();
        if (health != null)
        {
            // a lifecycle started again after a stop (whose drain entered the terminal state) serves again
            health.leaveTerminalState();
            // the whole server follows readiness (ReverbReadiness): Boot says ACCEPTING_TRAFFIC only after the
            // ApplicationRunners, well after this phase; each service is SERVING once bound, as grpc-java's are
            final boolean ready = availability == null ||
                availability.getReadinessState() == ReadinessState.ACCEPTING_TRAFFIC;
            health.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES,
                ready ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
            for (final String name : serviceNames)
            {
                health.setStatus(name, ServingStatus.SERVING);
            }
        }
        LOG.info("Reverb server listening on {} ({} service(s): {})", boundAddress, serviceNames.size(), serviceNames);
        if (!secured && !warnedUnsecured && ReverbSecurity.beyondLoopback(address.trim()))
        {
            warnedUnsecured = true; // once: a restarted lifecycle says nothing new
            LOG.warn("Reverb server on {} listens beyond loopback with neither reverb.server.auth-token nor " +
                "reverb.server.tls: any host that reaches the port can call every service. Set a token or TLS, or " +
                "listen on 127.0.0.1 (or shm://)", boundAddress);
        }
        publishBound();
    }

    /** Tells the application where the server listens: the environment's local.reverb.* and an event. */
    private void publishBound()
    {
        final int port = port(boundAddress);
        if (environment instanceof ConfigurableEnvironment configurable)
        {
            final MutablePropertySources sources = configurable.getPropertySources();
            if (!(sources.get(PORTS) instanceof MapPropertySource))
            {
                sources.addFirst(new MapPropertySource(PORTS, new HashMap<>()));
            }
            final Map<String, Object> ports = ((MapPropertySource)sources.get(PORTS)).getSource();
            ports.put(LOCAL_ADDRESS, boundAddress);
            if (port >= 0)
            {
                ports.put(LOCAL_PORT, port);
            }
            else
            {
                ports.remove(LOCAL_PORT);
            }
        }
        if (events != null)
        {
            events.publishEvent(new ReverbServerStartedEvent(this, boundAddress, port));
        }
    }

    /**
     * @param address an address as bound.
     * @return its port, or -1 when it has none ({@code shm://name}) or is no URI.
     */
    static int port(final String address)
    {
        try
        {
            return URI.create(address).getPort();
        }
        catch (final IllegalArgumentException e)
        {
            return -1;
        }
    }

    /**
     * Reverb's threads are daemons: without a web server nothing else keeps the JVM running after {@code main}
     * returns. As Spring Boot's web servers do, a non-daemon thread waits until the server stops.
     */
    private void keepJvmAlive()
    {
        final CountDownLatch latch = new CountDownLatch(1);
        stopped = latch;
        final Thread awaiter = new Thread(() ->
        {
            try
            {
                latch.await();
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        }, "reverb-server-await");
        awaiter.setDaemon(false);
        awaiter.start();
    }

    private RpcServer.Builder configure(final RpcServer.Builder builder)
    {
        serviceNames.clear();
        for (final RpcService service : services)
        {
            final ServiceDefinition definition = service.bindService();
            builder.addService(definition);
            serviceNames.add(definition.serviceName());
        }
        if (grpc != null)
        {
            serviceNames.addAll(grpc.serviceNames());
        }
        if (health != null)
        {
            final ServiceDefinition definition = health.healthService().bindService();
            builder.addService(definition);
        }
        builder.shutdownGracePeriod(gracePeriod);
        if (maxInboundMessageSize > 0)
        {
            builder.maxInboundMessageSize(maxInboundMessageSize);
        }
        if (properties.getMaxConcurrentCallsPerConnection() != null)
        {
            builder.maxConcurrentCallsPerConnection(properties.getMaxConcurrentCallsPerConnection());
        }
        if (properties.getMaxInflatedBytesPerConnection() != null)
        {
            builder.maxInflatedBytesPerConnection(properties.getMaxInflatedBytesPerConnection().toBytes());
        }
        connectionLifetimes(builder);
        if (!engineMade)
        {
            engine = ReverbSecurity.server(properties, bundles);
            engineMade = true;
        }
        if (engine != null)
        {
            builder.transportOptions(builder.transportOptions().with(EngineOptions.ENGINE_CONFIG, engine));
        }
        for (final ReverbServerCustomizer customizer : customizers)
        {
            customizer.customize(builder);
        }
        secured = ReverbSecurity.secured(builder.transportOptions());
        return builder;
    }

    @Override
    public void stop()
    {
        stopServing();
    }

    @Override
    public void stop(final Runnable callback)
    {
        final Thread stopper = new Thread(() ->
        {
            try
            {
                stopServing();
            }
            finally
            {
                callback.run();
            }
        }, "reverb-server-shutdown");
        stopper.setDaemon(true);
        stopper.start();
    }

    private void stopServing()
    {
        final Running taken = takeRunning();
        if (taken == null)
        {
            return;
        }
        final Serving s = taken.serving();
        final CountDownLatch latch = taken.stopped();
        try
        {
            drain(s);
        }
        finally
        {
            latch.countDown();
        }
    }

    /** A running server, taken by the one step that stops it, with the latch its await thread waits on. */
    private record Running(Serving serving, CountDownLatch stopped)
    {
    }

    /** @return the running server, now marked stopped (by stop or destroy, whichever comes first); null if none. */
    private synchronized Running takeRunning()
    {
        if (!running)
        {
            return null;
        }
        running = false;
        return new Running(serving, stopped);
    }

    private void drain(final Serving s)
    {
        if (health != null)
        {
            health.enterTerminalState(); // balancing clients stop picking this replica while its calls finish
        }
        try
        {
            if (shutdown == ReverbProperties.Shutdown.GRACEFUL)
            {
                LOG.info("Reverb server on {}: graceful shutdown, calls in flight have {}", boundAddress, gracePeriod);
                s.shutdown(gracePeriod);
                if (s.awaitTermination(gracePeriod))
                {
                    LOG.info("Reverb server on {}: graceful shutdown complete", boundAddress);
                    return;
                }
                LOG.warn("Reverb server on {}: calls still running after {}: cancelling them", boundAddress, gracePeriod);
            }
            s.shutdownNow();
            if (!s.awaitTermination(CLOSE_WAIT))
            {
                LOG.warn("Reverb server on {}: not terminated {} s after closing", boundAddress, CLOSE_WAIT.toSeconds());
            }
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            s.shutdownNow();
        }
    }

    /**
     * Closes the server at once if it still runs: after a normal close the lifecycle has stopped it and this does
     * nothing; after a refresh that failed once the server had started (a {@code ContextRefreshedEvent} listener that
     * threw), Spring 6.2 destroys the beans without stopping the lifecycles, and the server would keep its port and,
     * through its await thread, the JVM.
     */
    @Override
    public void destroy()
    {
        final Running taken = takeRunning();
        if (taken == null)
        {
            return;
        }
        final Serving s = taken.serving();
        final CountDownLatch latch = taken.stopped();
        LOG.warn("Reverb server on {}: destroyed while running (the context failed to start?): closing it now",
            boundAddress);
        if (health != null)
        {
            health.enterTerminalState();
        }
        try
        {
            s.shutdownNow();
            if (!s.awaitTermination(CLOSE_WAIT))
            {
                LOG.warn("Reverb server on {}: not terminated {} s after closing", boundAddress, CLOSE_WAIT.toSeconds());
            }
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
        finally
        {
            latch.countDown();
        }
    }

    @Override
    public boolean isRunning()
    {
        return running;
    }

    @Override
    public int getPhase()
    {
        return PHASE;
    }

    @Override
    public String toString()
    {
        return "ReverbServerLifecycle{" + (running ? boundAddress : "not running") + "}";
    }
}
