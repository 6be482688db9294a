package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.reverb.common.WriteClaim;
import io.reverb.common.counters.CounterValue;
import io.reverb.common.counters.CountersLayout;
import io.reverb.common.counters.ProcessCounters;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.VerbsProviders;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 38, item 5: a connection's counters go into the process's counters file only once its peer is authenticated.
 * A connector that completes the handshake and never proves the token holds no slot of the file (a flood of them
 * cannot fill it and hide the real connections), and no Micrometer meter either (a churn of them would add series
 * without end); an admitted one shows in both, with the counts it made.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EngineCountersAfterAuthTest
{
    private static final byte[] TOKEN = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    /** One of the per-connection meters (EngineConfig.meterRegistry): bound with the counters, after the proof. */
    private static final String CONNECTION_GAUGE = "reverb.engine.connection.credits.available";

    private static List<CounterValue> acceptedConnectionCounters(final String engine)
    {
        return ProcessCounters.current().view().counters().stream()
            .filter(c -> c.kind() == CountersLayout.KIND_CONNECTION && c.group().startsWith(engine + " #") &&
                c.group().endsWith("(accepted)"))
            .toList();
    }

    @Test
    void shouldAllocateNoCountersForAConnectorThatHasNotProvenItself() throws Exception
    {
        final String serverName = "auth-counters-" + ProcessHandle.current().pid();
        final SimpleMeterRegistry meters = new SimpleMeterRegistry();
        final EngineConfig serverConfig = config(PollingMode.EVENT).name(serverName).authToken(TOKEN)
            .meterRegistry(meters).errorHandler(t -> { })
            .verbsConfig(verbsConfig().withHandshakeTimeoutNanos(TimeUnit.SECONDS.toNanos(60)));
        final AtomicInteger delivered = new AtomicInteger();
        try (RdmaEngine server = RdmaEngine.open("shm", serverConfig);
            RdmaEngine client = RdmaEngine.open("shm", config(PollingMode.EVENT).authToken(TOKEN));
            VerbsContext raw = VerbsProviders.forScheme("shm").open(verbsConfig()))
        {
            final String name = uniqueName("silent-counters");
            final EngineListener listener = server.listen(name, c -> c.setHandler((b, o, l) -> delivered.incrementAndGet()));
            final ProtectionDomain pd = raw.allocPd();
            final CompletionQueue cq = raw.createCq(64, null);
            final MemoryRegion ready = pd.allocate(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            final QueuePair silent = raw.connect(name, new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq)
                .maxSendWr(8).maxRecvWr(8), Handshake.encodeRequest(server.config(), new byte[Handshake.NONCE_LENGTH],
                ready.address(), ready.rkey(), Handshake.VERSION));
            // The acceptor has the connection (its queue pair, its receives posted) and waits for the proof.
            await("silent connector held at the gate", () -> server.connections().size() == 1);
            assertThat(acceptedConnectionCounters(serverName)).as("no slot of the counters file before the proof").isEmpty();
            assertThat(meters.find(CONNECTION_GAUGE).gauges()).as("no meters before the proof either").isEmpty();

            final Connection good = client.connect(name);
            send(good, new WriteClaim(), 16, 1);
            await("good client served", () -> delivered.get() == 1);
            assertThat(listener.acceptedCount()).isEqualTo(1);
            assertThat(acceptedConnectionCounters(serverName)).as("the admitted connection, with its count")
                .anySatisfy(c -> assertThat(c.name()).isEqualTo("eager messages received"))
                .filteredOn(c -> c.name().equals("eager messages received"))
                .singleElement().satisfies(c -> assertThat(c.value()).isEqualTo(1));
            assertThat(meters.find(CONNECTION_GAUGE).gauges()).as("the admitted connection's").hasSize(1);
            good.close();
            await("the closed connection's meters removed", () -> meters.find(CONNECTION_GAUGE).gauges().isEmpty());
            silent.close();
        }
    }
}
