package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.VerbsProviders;
import io.reverb.rdma.verbs.WrOpcode;
import io.reverb.common.WriteClaim;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 13, item 5: the engine's challenge-response. A captured handshake is useless: its proofs are
 * bound to nonces both sides choose afresh, and to both sides' parameters. Also the connection cap.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EngineAuthTest
{
    private static final byte[] TOKEN = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    private static ByteBuffer request(final byte[] nonce)
    {
        return Handshake.encodeRequest(config(PollingMode.EVENT).conclude(), nonce, 4096, 77, Handshake.VERSION);
    }

    private static byte[] nonce(final int seed)
    {
        final byte[] nonce = new byte[Handshake.NONCE_LENGTH];
        nonce[0] = (byte)seed;
        nonce[15] = (byte)(seed >> 8);
        return nonce;
    }

    @Test
    void shouldBindEachProofToBothNoncesAndBothSidesParameters()
    {
        final EngineConfig server = config(PollingMode.EVENT).conclude();
        final ByteBuffer request = request(nonce(1));
        final ByteBuffer accept = Handshake.encodeAccept(server, request, TOKEN, nonce(2));
        assertThat(Handshake.verifyAccept(TOKEN, request, accept, "server")).isNull();
        final byte[] proof = Handshake.connectorProof(TOKEN, request, accept);

        // The same request answered again: a new acceptor nonce, a different proof expected.
        final ByteBuffer again = Handshake.encodeAccept(server, request, TOKEN, nonce(3));
        assertThat(Handshake.connectorProof(TOKEN, request, again)).isNotEqualTo(proof);
        // A captured accept replayed to a new request (new connector nonce) does not verify.
        assertThat(Handshake.verifyAccept(TOKEN, request(nonce(4)), accept, "server"))
            .isNotNull().hasMessageContaining("authentication token mismatch");
        // Any parameter changed (here the ready rkey) changes the proof.
        final ByteBuffer tampered = request(nonce(1));
        tampered.putInt(32, 78);
        assertThat(Handshake.connectorProof(TOKEN, tampered, accept)).isNotEqualTo(proof);
        // Another token.
        assertThat(Handshake.verifyAccept("other".getBytes(StandardCharsets.US_ASCII), request, accept, "server"))
            .isNotNull().hasMessageContaining("authToken");
        // The token itself is never in the handshake.
        final byte[] wire = new byte[Handshake.REQUEST_LENGTH + Handshake.ACCEPT_LENGTH];
        request.duplicate().get(wire, 0, Handshake.REQUEST_LENGTH);
        accept.duplicate().get(wire, Handshake.REQUEST_LENGTH, Handshake.ACCEPT_LENGTH);
        assertThat(new String(wire, StandardCharsets.ISO_8859_1)).doesNotContain("0123456789abcdef");
    }

    @Test
    void shouldRefuseAServerThatDoesNotAuthenticateItself() throws Exception
    {
        try (RdmaEngine server = RdmaEngine.open("shm", config(PollingMode.EVENT).errorHandler(t -> { }));
            RdmaEngine client = RdmaEngine.open("shm", config(PollingMode.EVENT).authToken(TOKEN)))
        {
            final String name = uniqueName("noauth");
            server.listen(name, c -> c.setHandler((b, o, l) -> { }));
            assertThatThrownBy(() -> client.connect(name))
                .isInstanceOf(HandshakeException.class)
                .hasMessageContaining("does not authenticate itself");
        }
    }

    /**
     * An attacker who recorded a good client's whole handshake (its request and, from its first batch, its
     * proof) replays both: the server answers with a fresh nonce, so the recorded proof does not verify; the
     * connection is refused and a good client is served meanwhile.
     */
    @Test
    void shouldRefuseAReplayedHandshakeAndKeepServingGoodClients() throws Exception
    {
        final Queue<Throwable> serverErrors = new ConcurrentLinkedQueue<>();
        final AtomicInteger delivered = new AtomicInteger();
        try (RdmaEngine server = RdmaEngine.open("shm", config(PollingMode.EVENT).authToken(TOKEN)
            .errorHandler(serverErrors::add));
            RdmaEngine client = RdmaEngine.open("shm", config(PollingMode.EVENT).authToken(TOKEN));
            VerbsContext raw = VerbsProviders.forScheme("shm").open(verbsConfig()))
        {
            final String name = uniqueName("replay");
            final EngineListener listener = server.listen(name, c -> c.setHandler((b, o, l) -> delivered.incrementAndGet()));

            // What the attacker captured from an earlier good handshake: a request and the proof that followed it.
            final ByteBuffer capturedRequest = request(nonce(9));
            final ByteBuffer capturedAccept = Handshake.encodeAccept(server.config(), capturedRequest, TOKEN, nonce(10));
            final long[] capturedProof = Handshake.proofWords(Handshake.connectorProof(TOKEN, capturedRequest, capturedAccept));

            final ProtectionDomain pd = raw.allocPd();
            final CompletionQueue cq = raw.createCq(64, null);
            final MemoryRegion ready = pd.allocate(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            final ByteBuffer replayed = capturedRequest.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            replayed.putLong(24, ready.address()).putInt(32, ready.rkey());
            final QueuePair qp = raw.connect(name, new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq)
                .maxSendWr(8).maxRecvWr(8), replayed);
            assertThat(Handshake.verifyAccept(TOKEN, replayed, qp.remotePrivateData(), name))
                .as("the server proves itself to the real token holder").isNull();

            // The replayed first batch: the captured proof, then a data frame that must never be delivered.
            final MemoryRegion batch = pd.allocate(256, Access.LOCAL_WRITE);
            final UnsafeBuffer b = batch.buffer();
            b.putInt(BatchHeaderFlyweight.CREDITS_OFFSET, 8);
            b.putInt(BatchHeaderFlyweight.CONTROL_LENGTH_OFFSET, Wire.CONTROL_FRAME_LENGTH);
            final int control = Wire.BATCH_HEADER_LENGTH;
            b.putInt(control + ControlFrameFlyweight.TYPE_OFFSET, Wire.CONTROL_AUTH);
            b.putLong(control + ControlFrameFlyweight.ID_OFFSET, capturedProof[0]);
            b.putLong(control + ControlFrameFlyweight.ADDRESS_OFFSET, capturedProof[1]);
            final int frame = control + Wire.CONTROL_FRAME_LENGTH;
            b.putInt(frame + DataFrameFlyweight.LENGTH_OFFSET, 8);
            b.putInt(frame + DataFrameFlyweight.TYPE_OFFSET, Wire.FRAME_DATA);
            await("ready word written", () -> ready.buffer().getLongVolatile(0) == Handshake.MAGIC);
            final SendRequest send = new SendRequest().opcode(WrOpcode.SEND).wrId(1);
            send.setSge(batch, 0, frame + Wire.dataFrameLength(8));
            assertThat(qp.postSend(send)).isEqualTo(PostResult.OK);

            await("replay refused", () -> listener.refusedCount() == 1);
            assertThat(serverErrors).anySatisfy(t -> assertThat(t).isInstanceOf(HandshakeException.class)
                .hasMessageContaining("authentication token mismatch"));
            assertThat(listener.acceptedCount()).isZero();
            qp.close();

            final Connection good = client.connect(name);
            final WriteClaim claim = new WriteClaim();
            send(good, claim, 16, 1);
            await("good client served", () -> delivered.get() == 1);
            assertThat(listener.acceptedCount()).isEqualTo(1);
        }
    }

    @Test
    void shouldRefuseAConnectorThatNeverProvesItselfWithinTheHandshakeDeadline() throws Exception
    {
        final Queue<Throwable> serverErrors = new ConcurrentLinkedQueue<>();
        final EngineConfig serverConfig = config(PollingMode.EVENT).authToken(TOKEN).errorHandler(serverErrors::add)
            .verbsConfig(verbsConfig().withHandshakeTimeoutNanos(TimeUnit.MILLISECONDS.toNanos(300)));
        try (RdmaEngine server = RdmaEngine.open("shm", serverConfig);
            VerbsContext raw = VerbsProviders.forScheme("shm").open(verbsConfig()))
        {
            final String name = uniqueName("silent");
            final EngineListener listener = server.listen(name, c -> c.setHandler((b, o, l) -> { }));
            final QueuePair qp = new SilentConnectors(raw).connect(name, server, 5);
            // The listener counts the refusal, then reports it: wait for both.
            await("silent connector refused", () -> listener.refusedCount() == 1 && !serverErrors.isEmpty());
            assertThat(serverErrors).anySatisfy(t -> assertThat(t)
                .hasMessageContaining("no proof of the authentication token within 300 ms"));
            await("its resources released", () -> server.connections().isEmpty());
            qp.close();
        }
    }

    @Test
    void shouldRefuseConnectionsBeyondTheCapWithAClearReason() throws Exception
    {
        final Queue<Throwable> serverErrors = new ConcurrentLinkedQueue<>();
        try (RdmaEngine server = RdmaEngine.open("shm", config(PollingMode.EVENT).maxConnections(1)
            .errorHandler(serverErrors::add));
            RdmaEngine client = RdmaEngine.open("shm", config(PollingMode.EVENT)))
        {
            final String name = uniqueName("cap");
            final EngineListener listener = server.listen(name, c -> c.setHandler((b, o, l) -> { }));
            final Connection first = client.connect(name);
            assertThatThrownBy(() -> client.connect(name))
                .isInstanceOf(HandshakeException.class)
                .hasMessageContaining("connection limit reached (1)")
                .satisfies(t -> assertThat(((HandshakeException)t).reason()).isEqualTo(HandshakeException.Reason.UNAVAILABLE));
            await("the listener counted the refusal", () -> listener.refusedCount() == 1); // counted after the reject is sent
            assertThat(serverErrors).anySatisfy(t -> assertThat(t).hasMessageContaining("maxConnections"));
            first.close();
            await("first gone", () -> server.connections().isEmpty());
            client.connect(name).close();
        }
    }
    @Test
    void shouldCapTheConnectionsOfOneHostStillToProveTheTokenAndCountEachOutWhenDecided() throws Exception
    {
        // Silent connectors hold engine slots until their deadline (60 s here): one host may hold 2 at once. The
        // test's connectors all come from this process, one shm host.
        final Queue<Throwable> serverErrors = new ConcurrentLinkedQueue<>();
        final EngineConfig serverConfig = config(PollingMode.EVENT).authToken(TOKEN).maxUnprovenPerPeer(2)
            .errorHandler(serverErrors::add)
            .verbsConfig(verbsConfig().withHandshakeTimeoutNanos(TimeUnit.SECONDS.toNanos(60)));
        try (RdmaEngine server = RdmaEngine.open("shm", serverConfig);
            RdmaEngine client = RdmaEngine.open("shm", config(PollingMode.EVENT).authToken(TOKEN));
            VerbsContext raw = VerbsProviders.forScheme("shm").open(verbsConfig()))
        {
            final String name = uniqueName("unproven");
            final EngineListener listener = server.listen(name, c -> c.setHandler((b, o, l) -> { }));
            final SilentConnectors connectors = new SilentConnectors(raw);
            final List<QueuePair> silent = new ArrayList<>();
            for (int i = 0; i < 2; i++)
            {
                silent.add(connectors.connect(name, server, 20 + i));
            }
            await("both silent connectors held at the gate", () -> server.unprovenConnections() == 2);

            // a third from the same host, even one holding the token, is refused while they hold their slots
            assertThatThrownBy(() -> client.connect(name))
                .isInstanceOf(HandshakeException.class)
                .hasMessageContaining("too many unproven connections from host (2)")
                .satisfies(t -> assertThat(((HandshakeException)t).reason()).isEqualTo(HandshakeException.Reason.UNAVAILABLE));
            await("the listener counted the refusal", () -> listener.refusedCount() == 1);
            assertThat(serverErrors).anySatisfy(t -> assertThat(t).hasMessageContaining("maxUnprovenPerPeer"));

            // one silent connector goes: its gate refuses it and gives its count back; a client with the token fits
            silent.remove(0).close();
            await("the departed connector counted out", () -> server.unprovenConnections() == 1);
            final Connection good = client.connect(name);
            await("the good client admitted, and counted out", () -> listener.acceptedCount() == 1 &&
                server.unprovenConnections() == 1);
            good.close();
            silent.remove(0).close();
            await("nothing left to prove", () -> server.unprovenConnections() == 0 && server.connections().isEmpty());
        }
    }

    /** Connectors over raw verbs that send a valid handshake request and then nothing: they never prove the token. */
    private static final class SilentConnectors
    {
        private final VerbsContext raw;
        private final ProtectionDomain pd;
        private final CompletionQueue cq;
        private final MemoryRegion ready;

        SilentConnectors(final VerbsContext raw) throws IOException
        {
            this.raw = raw;
            this.pd = raw.allocPd();
            this.cq = raw.createCq(64, null);
            this.ready = pd.allocate(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        }

        QueuePair connect(final String name, final RdmaEngine server, final int seed) throws IOException
        {
            return raw.connect(name, new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq).maxSendWr(8).maxRecvWr(8),
                Handshake.encodeRequest(server.config(), nonce(seed), ready.address(), ready.rkey(), Handshake.VERSION));
        }
    }
}
