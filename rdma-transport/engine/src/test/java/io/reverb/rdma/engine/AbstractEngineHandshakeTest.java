package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionRejectedException;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.VerbsProviders;
import io.reverb.common.WriteClaim;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;

/**
 * Connection set-up over each fabric ({@link ShmEngineHandshakeTest}, {@link TcpEngineHandshakeTest}):
 * authentication, versions, metrics. Configuration checks need no fabric: {@link EngineConfigTest}.
 */
abstract class AbstractEngineHandshakeTest
{
    /**
     * @return the fabric the suite runs over.
     */
    abstract EngineFabric fabric();

    /** The suite's configuration over {@link #fabric()} (hides the shm-only one of EngineTestSupport). */
    EngineConfig config(final PollingMode mode)
    {
        return EngineTestSupport.config(fabric(), mode);
    }

    @Test
    void shouldConnectWhenBothSidesPresentTheSameToken() throws Exception
    {
        try (EnginePair pair = new EnginePair(fabric(), config(PollingMode.EVENT).authToken("s3cret"),
            config(PollingMode.EVENT).authToken("s3cret"), (b, o, l) -> { }))
        {
            assertThat(pair.client.isConnected()).isTrue();
            assertThat(pair.listener.acceptedCount()).isEqualTo(1);
        }
    }

    @Test
    void shouldRefuseAWrongTokenWithAClearErrorOnBothSides() throws Exception
    {
        final Queue<Throwable> serverErrors = new ConcurrentLinkedQueue<>();
        try (RdmaEngine server = RdmaEngine.open(fabric().scheme(),
                config(PollingMode.EVENT).authToken("right").errorHandler(serverErrors::add));
            RdmaEngine client = RdmaEngine.open(fabric().scheme(), config(PollingMode.EVENT).authToken("wrong")))
        {
            final EngineListener listener = server.listen(fabric().listenAddress("auth"), c -> { });
            final String name = listener.address();
            assertThatThrownBy(() -> client.connect(name))
                .isInstanceOf(HandshakeException.class)
                .hasMessageContaining("authentication token mismatch")
                .hasMessageContaining("authToken")
                .satisfies(t -> assertThat(((HandshakeException)t).reason()).isEqualTo(HandshakeException.Reason.AUTHENTICATION));
            // The client refuses the server's proof and sends nothing: the server sees it go away unproven.
            await("server reported", () -> !serverErrors.isEmpty());
            assertThat(serverErrors.peek()).isInstanceOf(HandshakeException.class)
                .hasMessageContaining("refused connection from")
                .hasMessageContaining("before proving it holds the authentication token");
            await("the refusal counted", () -> listener.refusedCount() == 1);
            assertThat(listener.acceptedCount()).isZero();
            await("refused connection gone", () -> server.connections().isEmpty());
        }
    }

    @Test
    void shouldRefuseAMissingToken() throws Exception
    {
        final Queue<Throwable> serverErrors = new ConcurrentLinkedQueue<>();
        try (RdmaEngine server = RdmaEngine.open(fabric().scheme(),
                config(PollingMode.EVENT).authToken("right").errorHandler(serverErrors::add));
            RdmaEngine client = RdmaEngine.open(fabric().scheme(), config(PollingMode.EVENT)))
        {
            final String name = server.listen(fabric().listenAddress("auth"), c -> { }).address();
            assertThatThrownBy(() -> client.connect(name)).isInstanceOf(HandshakeException.class)
                .hasMessageContaining("authentication token required");
            await("server reported", () -> !serverErrors.isEmpty());
            assertThat(serverErrors.peek()).hasMessageContaining("no authentication token presented");
        }
    }

    @Test
    void shouldRefuseAnIncompatibleProtocolVersionWithoutHanging() throws Exception
    {
        final Queue<Throwable> serverErrors = new ConcurrentLinkedQueue<>();
        final EngineConfig clientSide = config(PollingMode.EVENT).conclude();
        try (RdmaEngine server = RdmaEngine.open(fabric().scheme(), config(PollingMode.EVENT).errorHandler(serverErrors::add));
            VerbsContext raw = VerbsProviders.forScheme(fabric().scheme()).open(fabric().verbsConfig()))
        {
            final String name = server.listen(fabric().listenAddress("version"), c -> { }).address();
            final ProtectionDomain pd = raw.allocPd();
            final CompletionQueue cq = raw.createCq(64, null);
            final MemoryRegion ready = pd.allocate(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            final QueuePairAttributes attributes = new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq);
            // A future engine version knocking.
            assertThatThrownBy(() -> raw.connect(name, attributes,
                Handshake.encodeRequest(clientSide, null, ready.address(), ready.rkey(), Handshake.VERSION + 1)))
                .isInstanceOf(ConnectionRejectedException.class)
                .satisfies(t ->
                {
                    final HandshakeException decoded = Handshake.fromReject(((ConnectionRejectedException)t).privateData(), name);
                    assertThat(decoded.reason()).isEqualTo(HandshakeException.Reason.VERSION);
                    assertThat(decoded.getMessage()).contains("engine protocol v" + Handshake.VERSION)
                        .contains("same Reverb version");
                });
            await("server reported", () -> !serverErrors.isEmpty());
            assertThat(serverErrors.peek()).hasMessageContaining("speaks engine protocol v" + (Handshake.VERSION + 1));
        }
    }

    @Test
    void shouldRefuseAPeerOfProtocolV2WhichWouldMisreadCompressedMessages() throws Exception
    {
        final Queue<Throwable> serverErrors = new ConcurrentLinkedQueue<>();
        final EngineConfig clientSide = config(PollingMode.EVENT).conclude();
        try (RdmaEngine server = RdmaEngine.open(fabric().scheme(), config(PollingMode.EVENT).errorHandler(serverErrors::add));
            VerbsContext raw = VerbsProviders.forScheme(fabric().scheme()).open(fabric().verbsConfig()))
        {
            final String name = server.listen(fabric().listenAddress("version2"), c -> { }).address();
            final ProtectionDomain pd = raw.allocPd();
            final CompletionQueue cq = raw.createCq(64, null);
            final MemoryRegion ready = pd.allocate(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            final QueuePairAttributes attributes = new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq);
            // the request a Reverb engine before compression sends: same layout, version 2
            assertThatThrownBy(() -> raw.connect(name, attributes,
                Handshake.encodeRequest(clientSide, null, ready.address(), ready.rkey(), 2)))
                .isInstanceOf(ConnectionRejectedException.class)
                .satisfies(t ->
                {
                    final HandshakeException decoded = Handshake.fromReject(((ConnectionRejectedException)t).privateData(), name);
                    assertThat(decoded.reason()).isEqualTo(HandshakeException.Reason.VERSION);
                    assertThat(decoded.getMessage()).contains("engine protocol v3").contains("same Reverb version");
                });
            await("server reported", () -> !serverErrors.isEmpty());
            assertThat(serverErrors.peek()).hasMessageContaining("speaks engine protocol v2, this side speaks v3")
                .hasMessageContaining("compressed messages");
        }
    }

    @Test
    void shouldExposeMetricsThroughMicrometer() throws Exception
    {
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        final SimpleMeterRegistry serverRegistry = new SimpleMeterRegistry();
        try (EnginePair pair = new EnginePair(fabric(), config(PollingMode.ADAPTIVE).meterRegistry(serverRegistry),
            config(PollingMode.ADAPTIVE).meterRegistry(registry), (b, o, l) -> { }))
        {
            final WriteClaim claim = new WriteClaim();
            for (int i = 0; i < 10; i++)
            {
                send(pair.client, claim, 100, i);
            }
            send(pair.client, claim, 100_000, 10);
            await("sent", () -> pair.client.stats().rendezvousMessagesSent() == 1 &&
                pair.client.stats().eagerMessagesSent() == 10);
            assertThat(registry.get("reverb.engine.messages.sent").tag("path", "eager").functionCounter().count())
                .isEqualTo(10);
            assertThat(registry.get("reverb.engine.bytes.sent").tag("path", "rendezvous").functionCounter().count())
                .isEqualTo(100_000);
            assertThat(registry.get("reverb.engine.poller.polls").tag("poller", "0").functionCounter().count()).isPositive();
            assertThat(registry.get("reverb.engine.rnr.errors").functionCounter().count()).isZero();
            // Over shm the large message was written straight into the server's grant: the client registered nothing.
            final boolean direct = ((EngineConnection)pair.client).directWrite();
            assertThat(direct).isEqualTo(fabric() == EngineFabric.SHM);
            assertThat(registry.get("reverb.engine.rendezvous.direct.writes").functionCounter().count())
                .isEqualTo(direct ? 1 : 0);
            if (direct)
            {
                assertThat(registry.get("reverb.engine.pool.bytes.registered").gauge().value()).isZero();
            }
            else
            {
                assertThat(registry.get("reverb.engine.pool.bytes.registered").gauge().value()).isPositive();
            }
            // Internals, totalled and per connection (the client engine has one connection).
            assertQuiescent(pair.client, pair.server);
            assertThat(registry.get("reverb.engine.credits.available").gauge().value())
                .isEqualTo(pair.client.creditsAvailable()).isPositive();
            assertThat(registry.get("reverb.engine.send.ring.bytes.used").gauge().value()).isZero();
            assertThat(registry.get("reverb.engine.rendezvous.buffers.used").gauge().value()).isZero();
            assertThat(registry.get("reverb.engine.poller.sleep.ratio").tag("poller", "0").gauge().value())
                .isBetween(0.0, 1.0);
            // The receiver's rendezvous memory budget: the 100,000-byte message needed a buffer of at least that.
            assertThat(serverRegistry.get("reverb.engine.rendezvous.memory.peak").gauge().value())
                .isEqualTo(pair.serverEngine.rendezvousMemoryPeak()).isGreaterThanOrEqualTo(100_000);
            assertThat(serverRegistry.get("reverb.engine.rendezvous.memory.reserved").gauge().value())
                .isEqualTo(pair.serverEngine.rendezvousMemoryReserved());
            assertThat(serverRegistry.get("reverb.engine.rendezvous.memory.limit").gauge().value())
                .isEqualTo(pair.serverEngine.config().rendezvousMemoryBytes()).isPositive();
            assertThat(serverRegistry.get("reverb.engine.rendezvous.budget.waits").functionCounter().count()).isZero();
            assertThat(registry.get("reverb.engine.rendezvous.memory.peak").gauge().value()).isZero();
            assertThat(registry.find("reverb.engine.connection.credits.available").gauges()).hasSize(1);
            assertThat(registry.get("reverb.engine.connection.credits.available").gauge().value())
                .isEqualTo(pair.client.creditsAvailable());
            pair.client.close();
            await("the closed connection's gauges removed",
                () -> registry.find("reverb.engine.connection.credits.available").gauges().isEmpty());
        }
    }
}
