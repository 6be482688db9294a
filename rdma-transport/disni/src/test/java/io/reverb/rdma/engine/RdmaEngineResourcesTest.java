package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.common.WriteClaim;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What one rdma:// connection costs (issue 24, part 2 item 2): verbs objects, event threads and registered (pinned)
 * memory per connection endpoint, counted over the emulated device with the default engine settings, and checked
 * against the figures RDMA-HARDWARE.md gives. Counting, not timing. Runs in the {@code rdma-emulated} execution;
 * skipped elsewhere, and on a real device (its objects are not countable from here).
 */
@Timeout(300)
class RdmaEngineResourcesTest
{
    private static final int CONNECTIONS = 4;

    private static int pumpThreads()
    {
        int pumps = 0;
        for (final Thread thread : Thread.getAllStackTraces().keySet())
        {
            if (thread.isAlive() && thread.getName().endsWith("-cq-events"))
            {
                pumps++;
            }
        }
        return pumps;
    }

    @ParameterizedTest
    @EnumSource(value = PollingMode.class, names = {"BUSY", "ADAPTIVE", "EVENT"})
    void shouldCostWhatTheHardwareNotesSayPerConnection(final PollingMode mode) throws Exception
    {
        RdmaEngineFabric.assumeRdma();
        assumeTrue(RdmaTestDevice.isEmulated(), "counts verbs objects of the emulated device only");
        final EngineConfig config = new EngineConfig().verbsConfig(RdmaEngineFabric.RDMA.verbsConfig()).pollingMode(mode);
        final AtomicLong delivered = new AtomicLong();
        try (RdmaEngine server = RdmaEngine.open("rdma", config.copy().name("cost-server"));
             RdmaEngine client = RdmaEngine.open("rdma", config.copy().name("cost-client")))
        {
            final EngineListener listener = server.listen(RdmaEngineFabric.RDMA.listenAddress("cost"),
                c -> c.setHandler((buffer, offset, length) -> delivered.incrementAndGet()));
            final Map<String, Integer> before = RdmaTestDevice.liveEmulatedObjects();
            final long bytesBefore = RdmaTestDevice.emulatedRegisteredBytes();
            final int pumpsBefore = pumpThreads();
            final List<Connection> connections = new ArrayList<>();
            final WriteClaim claim = new WriteClaim();
            for (int i = 0; i < CONNECTIONS; i++)
            {
                final Connection connection = client.connect(listener.address());
                connections.add(connection);
                EngineTestSupport.send(connection, claim, 64, i);
            }
            EngineTestSupport.await("every message delivered", () -> delivered.get() == CONNECTIONS);
            // Pollers that sleep arm their CQs (starting their event pumps) once idle.
            if (mode != PollingMode.BUSY)
            {
                EngineTestSupport.await("event pumps started", () -> pumpThreads() - pumpsBefore == 4 * CONNECTIONS);
            }
            TimeUnit.MILLISECONDS.sleep(100);

            final Map<String, Integer> after = RdmaTestDevice.liveEmulatedObjects();
            // Per connection: both of its endpoints (connector and acceptor), in this one JVM.
            final Map<String, Integer> perConnection = new HashMap<>();
            for (final String kind : after.keySet())
            {
                final int delta = after.get(kind) - before.getOrDefault(kind, 0);
                assertThat(delta % CONNECTIONS).as(kind + " per connection is a whole number: " + delta).isZero();
                perConnection.put(kind, delta / CONNECTIONS);
            }
            final long bytesPerConnection = (RdmaTestDevice.emulatedRegisteredBytes() - bytesBefore) / CONNECTIONS;
            final int pumpsPerConnection = (pumpThreads() - pumpsBefore) / CONNECTIONS;
            final long eager = config.copy().conclude().eagerRegisteredBytesPerConnection();
            System.out.printf("[rdma cost, %s] per connection (both endpoints): %s, %d event-pump threads, %d registered " +
                "bytes (%.2f MiB); EngineConfig.eagerRegisteredBytesPerConnection: %d%n", mode, perConnection,
                pumpsPerConnection, bytesPerConnection, bytesPerConnection / (double)(1 << 20), eager);

            // The figures of RDMA-HARDWARE.md ("What one connection costs"), per endpoint: a PD, two CQs with a
            // completion channel each, a QP, an rdma_cm id; MRs: send ring, receive slots, control slots (and the
            // connector's ready word).
            assertThat(perConnection).containsEntry("Pd", 2).containsEntry("Cq", 4).containsEntry("CompChannel", 4)
                .containsEntry("Qp", 2).containsEntry("CmId", 2).containsEntry("EventChannel", 0).containsEntry("Mr", 7);
            assertThat(pumpsPerConnection).isEqualTo(mode == PollingMode.BUSY ? 0 : 4);
            // Eager memory only (nothing large was sent); the ready word is the connector's alone.
            assertThat(bytesPerConnection).isBetween(2 * eager - 128, 2 * eager);
            for (final Connection connection : connections)
            {
                connection.close();
            }
        }
    }
}
