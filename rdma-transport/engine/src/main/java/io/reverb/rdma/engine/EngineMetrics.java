package io.reverb.rdma.engine;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToDoubleFunction;

/**
 * Micrometer binding. The only class of the engine that names Micrometer types: it is loaded only
 * when {@link EngineConfig#meterRegistry(Object)} was given, so the engine runs without Micrometer.
 * Meters read the engine's plain counters when scraped; nothing is recorded on the hot path.
 */
final class EngineMetrics implements MetricsBinding
{
    private final MeterRegistry registry;
    private final List<Meter> meters = new ArrayList<>();
    private final Map<Connection, List<Meter>> perConnection = new ConcurrentHashMap<>();

    private final String engineName;
    private final String fabric;

    private EngineMetrics(final MeterRegistry registry, final String engineName, final String fabric)
    {
        this.registry = registry;
        this.engineName = engineName;
        this.fabric = fabric;
    }

    static EngineMetrics bind(final Object registryObject, final RdmaEngine engine)
    {
        // fabric: the verbs provider's scheme (shm, tcp, rdma), so that a reverb:// server's or channel's meters say
        // which fabric carried the traffic
        final String fabric = engine.context().provider().scheme();
        final EngineMetrics metrics = new EngineMetrics((MeterRegistry)registryObject, engine.config().name(), fabric);
        final Tags tags = Tags.of("engine", engine.config().name(), "fabric", fabric);
        metrics.counter("reverb.engine.messages.sent", tags.and("path", "eager"), engine, e -> e.stats().eagerMessagesSent());
        metrics.counter("reverb.engine.messages.sent", tags.and("path", "rendezvous"), engine,
            e -> e.stats().rendezvousMessagesSent());
        metrics.counter("reverb.engine.bytes.sent", tags.and("path", "eager"), engine, e -> e.stats().eagerBytesSent());
        metrics.counter("reverb.engine.bytes.sent", tags.and("path", "rendezvous"), engine, e -> e.stats().rendezvousBytesSent());
        metrics.counter("reverb.engine.messages.received", tags.and("path", "eager"), engine,
            e -> e.stats().eagerMessagesReceived());
        metrics.counter("reverb.engine.messages.received", tags.and("path", "rendezvous"), engine,
            e -> e.stats().rendezvousMessagesReceived());
        metrics.counter("reverb.engine.bytes.received", tags.and("path", "eager"), engine, e -> e.stats().eagerBytesReceived());
        metrics.counter("reverb.engine.bytes.received", tags.and("path", "rendezvous"), engine,
            e -> e.stats().rendezvousBytesReceived());
        metrics.counter("reverb.engine.sends", tags, engine, e -> e.stats().sendsPosted());
        metrics.counter("reverb.engine.credit.only.sends", tags, engine, e -> e.stats().creditOnlySends());
        metrics.counter("reverb.engine.credit.stalls", tags, engine, e -> e.stats().creditStalls());
        metrics.counter("reverb.engine.send.queue.stalls", tags, engine, e -> e.stats().sendQueueStalls());
        metrics.counter("reverb.engine.rendezvous.queued", tags, engine, e -> e.stats().rendezvousQueued());
        metrics.counter("reverb.engine.rendezvous.refused", tags, engine, e -> e.stats().rendezvousRefused());
        metrics.counter("reverb.engine.rendezvous.direct.writes", tags, engine, e -> e.stats().directWritesSent());
        metrics.counter("reverb.engine.rnr.errors", tags, engine, e -> e.stats().rnrErrors());
        metrics.counter("reverb.engine.failed.sends", tags, engine, e -> e.stats().failedSends());
        metrics.gauge("reverb.engine.rendezvous.queue", tags, engine, e -> e.queuedRendezvousRequests());
        metrics.gauge("reverb.engine.pool.bytes.used", tags, engine, e -> e.poolBytesInUse());
        metrics.gauge("reverb.engine.pool.bytes.registered", tags, engine, e -> e.poolBytesAllocated());
        metrics.gauge("reverb.engine.connections", tags, engine, e -> e.connections().size());
        // The engine's budget of registered memory for inbound large messages (EngineConfig.rendezvousMemoryBytes).
        metrics.gauge("reverb.engine.rendezvous.memory.reserved", tags, engine, RdmaEngine::rendezvousMemoryReserved);
        metrics.gauge("reverb.engine.rendezvous.memory.peak", tags, engine, RdmaEngine::rendezvousMemoryPeak);
        metrics.gauge("reverb.engine.rendezvous.memory.limit", tags, engine, e -> e.config().rendezvousMemoryBytes());
        metrics.counter("reverb.engine.rendezvous.budget.waits", tags, engine, e -> e.stats().rendezvousBudgetWaits());
        metrics.counter("reverb.engine.rendezvous.allocation.failures", tags, engine,
            e -> e.stats().rendezvousAllocationFailures());
        // Internals under load, totalled over open connections (per connection: bindConnection).
        metrics.gauge("reverb.engine.credits.available", tags, engine, e -> sum(e, Connection::creditsAvailable));
        metrics.gauge("reverb.engine.send.ring.bytes.used", tags, engine, e -> sum(e, Connection::sendBytesInFlight));
        metrics.gauge("reverb.engine.rendezvous.buffers.used", tags, engine, e -> sum(e, Connection::poolBuffersInUse));
        for (int i = 0; i < engine.pollerCount(); i++)
        {
            final int poller = i;
            final Tags pollerTags = tags.and("poller", Integer.toString(i));
            metrics.counter("reverb.engine.poller.polls", pollerTags, engine, e -> e.pollerPolls(poller));
            metrics.counter("reverb.engine.poller.empty.polls", pollerTags, engine, e -> e.pollerEmptyPolls(poller));
            metrics.counter("reverb.engine.poller.wakeups", pollerTags, engine, e -> e.pollerWakeups(poller));
            metrics.counter("reverb.engine.poller.sleeps", pollerTags, engine, e -> e.pollerSleeps(poller));
            metrics.counter("reverb.engine.poller.stalls", pollerTags, engine, e -> e.pollerStalls(poller));
            // Of all duty cycles so far, the share that ended in a sleep (near 0: spinning; near 1: idle).
            metrics.gauge("reverb.engine.poller.sleep.ratio", pollerTags, engine,
                e -> e.pollerPolls(poller) == 0 ? 0 : (double)e.pollerSleeps(poller) / e.pollerPolls(poller));
        }
        return metrics;
    }

    private static double sum(final RdmaEngine engine, final ToDoubleFunction<Connection> f)
    {
        double total = 0;
        for (final Connection connection : engine.connections())
        {
            total += f.applyAsDouble(connection);
        }
        return total;
    }

    /**
     * Gauges of one connection, tagged with its peer and a number unique in this engine; removed by
     * {@link #unbindConnection}.
     */
    @Override
    public void bindConnection(final Connection connection, final long number)
    {
        final Tags tags = Tags.of("engine", engineName, "fabric", fabric, "connection",
            number + "/" + connection.remoteAddress());
        final List<Meter> own = new ArrayList<>(3);
        own.add(Gauge.builder("reverb.engine.connection.credits.available", connection, Connection::creditsAvailable)
            .tags(tags).register(registry));
        own.add(Gauge.builder("reverb.engine.connection.send.ring.bytes.used", connection, Connection::sendBytesInFlight)
            .tags(tags).register(registry));
        own.add(Gauge.builder("reverb.engine.connection.rendezvous.buffers.used", connection, Connection::poolBuffersInUse)
            .tags(tags).register(registry));
        perConnection.put(connection, own);
    }

    @Override
    public void unbindConnection(final Connection connection)
    {
        final List<Meter> own = perConnection.remove(connection);
        if (own != null)
        {
            for (final Meter meter : own)
            {
                registry.remove(meter);
            }
        }
    }

    private void counter(final String name, final Tags tags, final RdmaEngine engine, final ToDoubleFunction<RdmaEngine> f)
    {
        meters.add(FunctionCounter.builder(name, engine, f).tags(tags).register(registry));
    }

    private void gauge(final String name, final Tags tags, final RdmaEngine engine, final ToDoubleFunction<RdmaEngine> f)
    {
        meters.add(Gauge.builder(name, engine, f).tags(tags).register(registry));
    }

    @Override
    public void close()
    {
        for (final Meter meter : meters)
        {
            registry.remove(meter);
        }
        for (final Connection connection : perConnection.keySet())
        {
            unbindConnection(connection);
        }
    }
}
