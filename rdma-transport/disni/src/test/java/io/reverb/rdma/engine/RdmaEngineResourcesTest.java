package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.common.WriteClaim;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What rdma:// connections cost (issue 24, part 2 item 2): verbs objects, event threads and registered (pinned)
 * memory, counted over the emulated device with the default engine settings, and checked against the figures
 * RDMA-HARDWARE.md gives. Per connection: a PD, a QP, an rdma_cm id and three MRs on each endpoint; per poller, not
 * per connection: the native CQs its connections share (one per direction, another twice as large when one is full),
 * each with one completion channel and, once a sleeping poller arms it, one event-pump thread. Counting, not timing.
 * Runs in the {@code rdma-emulated} execution; skipped elsewhere, and on a real device (its objects are not
 * countable from here).
 */
@Timeout(300)
class RdmaEngineResourcesTest
{
    private static final int CONNECTIONS = 64;

    /**
     * The event pumps of the previous run's engines: closed, they end (and destroy their native CQs) once they leave
     * their native wait, which may be after the close returned. The next run waits for them before it counts.
     */
    private static final Set<Thread> PREVIOUS_RUN_PUMPS = ConcurrentHashMap.newKeySet();

    private static Set<Thread> pumpThreads()
    {
        final Set<Thread> pumps = new HashSet<>();
        for (final Thread thread : Thread.getAllStackTraces().keySet())
        {
            if (thread.isAlive() && thread.getName().endsWith("-cq-events"))
            {
                pumps.add(thread);
            }
        }
        return pumps;
    }

    /** @return event pumps alive now that were not in {@code before} (pumps of other engines may end meanwhile) */
    private static int pumpsStartedSince(final Set<Thread> before)
    {
        final Set<Thread> pumps = pumpThreads();
        pumps.removeAll(before);
        return pumps.size();
    }

    /**
     * Native CQs one poller needs in one direction for {@code cqs} CQs of {@code entries} each: 1,024 entries first,
     * each further one twice as large, up to 65,536, a CQ reserving its whole capacity in one of them (the rule
     * RDMA-HARDWARE.md states, computed here independently of the provider's code).
     */
    private static int nativeCqsFor(final int cqs, final int entries)
    {
        int placed = 0;
        int shares = 0;
        while (placed < cqs)
        {
            final int size = Math.max(entries, Math.min(65_536, 1024 << Math.min(shares, 16)));
            placed += size / entries;
            shares++;
        }
        return shares;
    }

    @ParameterizedTest
    @EnumSource(value = PollingMode.class, names = {"BUSY", "ADAPTIVE", "EVENT"})
    @Tag(RdmaTestDevice.EMULATION_ONLY_TAG)
    void shouldCostWhatTheHardwareNotesSay(final PollingMode mode) throws Exception
    {
        RdmaEngineFabric.assumeRdma();
        assumeTrue(RdmaTestDevice.isEmulated(), "counts verbs objects of the emulated device only");
        final EngineConfig config = new EngineConfig().verbsConfig(RdmaEngineFabric.RDMA.verbsConfig()).pollingMode(mode);
        EngineTestSupport.await("the previous run's event pumps ended (and their CQs destroyed)",
            () -> PREVIOUS_RUN_PUMPS.stream().noneMatch(Thread::isAlive));
        PREVIOUS_RUN_PUMPS.clear();
        final AtomicLong delivered = new AtomicLong();
        try (RdmaEngine server = RdmaEngine.open("rdma", config.copy().name("cost-server"));
             RdmaEngine client = RdmaEngine.open("rdma", config.copy().name("cost-client")))
        {
            final EngineListener listener = server.listen(RdmaEngineFabric.RDMA.listenAddress("cost"),
                c -> c.setHandler((buffer, offset, length) -> delivered.incrementAndGet()));
            final Map<String, Integer> before = RdmaTestDevice.liveEmulatedObjects();
            final long bytesBefore = RdmaTestDevice.emulatedRegisteredBytes();
            final Set<Thread> pumpsBefore = pumpThreads();
            final List<Connection> connections = new ArrayList<>();
            final WriteClaim claim = new WriteClaim();
            for (int i = 0; i < CONNECTIONS; i++)
            {
                final Connection connection = client.connect(listener.address());
                connections.add(connection);
                EngineTestSupport.send(connection, claim, 64, i);
            }
            EngineTestSupport.await("every message delivered", () -> delivered.get() == CONNECTIONS);

            // The engine sizes a CQ for the receives its peer posts (send CQ; the connector does not know them yet and
            // takes the most a peer may have) or it posts itself (receive CQ), + 8. Both engines have one poller: the
            // CQs of all connections of an endpoint share that poller's native CQs.
            final int slots = config.copy().conclude().receiveSlots() + 8;
            final int connectorSendCq = EngineConfig.MAX_RECEIVE_SLOTS + 8;
            final int nativeCqs = nativeCqsFor(CONNECTIONS, connectorSendCq) + nativeCqsFor(CONNECTIONS, slots) +
                2 * nativeCqsFor(CONNECTIONS, slots);
            // Pollers that sleep arm their CQs (starting the event pumps) once idle.
            if (mode != PollingMode.BUSY)
            {
                EngineTestSupport.await("event pumps started",
                    () -> pumpsStartedSince(pumpsBefore) == nativeCqs);
            }
            TimeUnit.MILLISECONDS.sleep(100);

            final Map<String, Integer> after = RdmaTestDevice.liveEmulatedObjects();
            final Map<String, Integer> delta = new HashMap<>();
            for (final String kind : after.keySet())
            {
                delta.put(kind, after.get(kind) - before.getOrDefault(kind, 0));
            }
            final long bytesPerConnection = (RdmaTestDevice.emulatedRegisteredBytes() - bytesBefore) / CONNECTIONS;
            final int pumps = pumpsStartedSince(pumpsBefore);
            final Set<Thread> started = pumpThreads();
            started.removeAll(pumpsBefore);
            PREVIOUS_RUN_PUMPS.addAll(started);
            final long eager = config.copy().conclude().eagerRegisteredBytesPerConnection();
            System.out.printf("[rdma cost, %s] %d connections (both endpoints in this JVM): %s, %d event-pump threads, " +
                "%d registered bytes per connection (%.2f MiB); EngineConfig.eagerRegisteredBytesPerConnection: %d%n",
                mode, CONNECTIONS, delta, pumps, bytesPerConnection, bytesPerConnection / (double)(1 << 20), eager);

            // Per connection, per endpoint: a PD, a QP, an rdma_cm id; MRs: send ring, receive slots, control slots
            // (and the connector's ready word).
            assertThat(delta).containsEntry("Pd", 2 * CONNECTIONS).containsEntry("Qp", 2 * CONNECTIONS)
                .containsEntry("CmId", 2 * CONNECTIONS).containsEntry("EventChannel", 0)
                .containsEntry("Mr", 7 * CONNECTIONS);
            // Per poller: its native CQs, one completion channel each; not two of each per connection as before.
            // 19 for 64 connections (7 + 4 on the connector, 4 + 4 on the acceptor), where it was 4 per connection.
            assertThat(nativeCqs).isEqualTo(19);
            assertThat(delta).containsEntry("Cq", nativeCqs).containsEntry("CompChannel", nativeCqs);
            assertThat(pumps).isEqualTo(mode == PollingMode.BUSY ? 0 : nativeCqs);
            // Eager memory only (nothing large was sent); the ready word is the connector's alone.
            assertThat(bytesPerConnection).isBetween(2 * eager - 128, 2 * eager);
            for (final Connection connection : connections)
            {
                connection.close();
            }
        }
    }
}
