package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.await;
import static io.reverb.rdma.engine.EngineTestSupport.claimed;
import static io.reverb.rdma.engine.EngineTestSupport.check;
import static io.reverb.rdma.engine.EngineTestSupport.directMappingsOpen;
import static io.reverb.rdma.engine.EngineTestSupport.fill;
import static io.reverb.rdma.engine.EngineTestSupport.uniqueName;
import static io.reverb.rdma.engine.EngineTestSupport.verbsConfig;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.VerbsProviders;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import io.reverb.common.WriteClaim;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The grant (CTS) of a direct write comes from the peer: a raw verbs peer plays the receiving engine, answers the
 * client engine's RTS with a grant of its choosing, and checks what arrives. A valid grant is written in place and
 * announced by a zero-length RDMA_WRITE_WITH_IMM; every forged one (key, bounds, access, length, id) costs the peer
 * its connection, nothing is mapped and no byte is written.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ShmDirectWriteGrantTest
{
    private static final int LENGTH = 100_000;
    private static final int SLOTS = 16;
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(30);

    /** What the raw peer grants. */
    enum Grant
    {
        VALID, WRONG_KEY, PAST_THE_END, NO_REMOTE_WRITE, TOO_SHORT, UNKNOWN_ID
    }

    private RdmaEngine engine;
    private VerbsContext raw;
    private final List<Throwable> errors = new CopyOnWriteArrayList<>();

    @BeforeEach
    void open() throws Exception
    {
        engine = RdmaEngine.open("shm", EngineTestSupport.config(PollingMode.ADAPTIVE).name("grant-client")
            .errorHandler(errors::add));
        raw = VerbsProviders.forScheme("shm").open(verbsConfig());
    }

    @AfterEach
    void close()
    {
        engine.close();
        raw.close();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(Grant.class)
    void shouldWriteOnlyIntoAValidGrant(final Grant grant) throws Exception
    {
        final String name = uniqueName("grant");
        final ProtectionDomain pd = raw.allocPd();
        final CompletionQueue cq = raw.createCq(256, null);
        final MemoryRegion slots = pd.allocate(SLOTS * Wire.receiveSlotLength(1024), Access.LOCAL_WRITE);
        final MemoryRegion target = pd.allocate(128 * 1024, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        final MemoryRegion readOnly = pd.allocate(128 * 1024, Access.LOCAL_WRITE | Access.REMOTE_READ);
        final MemoryRegion out = pd.allocate(4096, Access.LOCAL_WRITE);
        final QueuePair qp;
        final Connection client;
        try (ConnectionListener listener = raw.listen(name, 4))
        {
            final CompletableFuture<Connection> connecting = CompletableFuture.supplyAsync(() ->
            {
                try
                {
                    return engine.connect(name);
                }
                catch (final Exception e)
                {
                    throw new IllegalStateException(e);
                }
            });
            final ConnectionRequest request = listener.accept(TIMEOUT_NANOS);
            assertThat(request).isNotNull();
            final ByteBuffer requestData = request.privateData();
            final Handshake.Hello hello = Handshake.decode(requestData);
            qp = request.accept(new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq).maxSendWr(64).maxRecvWr(SLOTS)
                .maxSge(4), Handshake.encodeAccept(EngineTestSupport.config(PollingMode.ADAPTIVE).receiveSlots(SLOTS),
                requestData, null, null));
            for (int i = 0; i < SLOTS; i++)
            {
                final RecvRequest receive = new RecvRequest().wrId(i);
                receive.setSge(slots, i * Wire.receiveSlotLength(1024), Wire.receiveSlotLength(1024));
                assertThat(qp.postRecv(receive)).isEqualTo(PostResult.OK);
            }
            out.buffer().putLong(0, Handshake.MAGIC);
            final SendRequest ready = new SendRequest().opcode(WrOpcode.RDMA_WRITE).wrId(100)
                .remoteAddress(hello.readyAddress).rkey(hello.readyRkey);
            ready.setSge(out, 0, 8);
            assertThat(qp.postSend(ready)).isEqualTo(PostResult.OK);
            client = connecting.get(30, TimeUnit.SECONDS);
        }
        final AtomicReference<Throwable> closedWith = new AtomicReference<>();
        client.onClose(cause -> closedWith.set(cause == null ? new AssertionError("closed gracefully") : cause));
        client.setHandler((buffer, offset, length) -> { });

        // The client announces: its RTS arrives in one of the raw peer's slots.
        final WriteClaim claim = new WriteClaim();
        assertThat(client.tryClaim(LENGTH, claim)).isEqualTo(Connection.BACK_PRESSURED);
        final WorkCompletions wc = new WorkCompletions(16);
        final long[] rts = awaitRts(cq, wc, slots.buffer());
        assertThat(rts[1]).isEqualTo(LENGTH);

        final long id = grant == Grant.UNKNOWN_ID ? rts[0] + 1 : rts[0];
        final MemoryRegion granted = grant == Grant.NO_REMOTE_WRITE ? readOnly : target;
        final long address = granted.address() + (grant == Grant.PAST_THE_END ? 64 * 1024 : 0);
        final int rkey = grant == Grant.WRONG_KEY ? granted.rkey() ^ 0x40 : granted.rkey();
        final int length = grant == Grant.TOO_SHORT ? LENGTH - 1 : 128 * 1024;
        sendCts(qp, out, id, address, rkey, length);

        if (grant == Grant.VALID)
        {
            await("claim over the grant", () -> client.tryClaim(LENGTH, claim) == Connection.OK);
            assertThat(directMappingsOpen(client)).isEqualTo(1);
            fill(claimed(claim), claim.offset(), LENGTH, 77);
            claim.commit();
            // The notification: a zero-length RDMA_WRITE_WITH_IMM naming the rendezvous; the bytes are already there.
            final long[] written = awaitWriteWithImm(cq, wc);
            assertThat(written[0]).isEqualTo((int)rts[0]);
            assertThat(written[1]).as("bytes the fabric carried").isZero();
            assertThat(check(target.buffer(), 0, LENGTH, 77)).as("content in the granted buffer").isTrue();
            await("mapping closed after the write completed", () -> directMappingsOpen(client) == 0);
            assertThat(client.isConnected()).isTrue();
            assertThat(client.stats().directWritesSent()).isEqualTo(1);
            client.abort(new EngineException("test done"));
        }
        else
        {
            await("client dropped the peer", () -> closedWith.get() != null);
            assertThat(closedWith.get()).isInstanceOf(PeerDisconnectedException.class);
            assertThat(closedWith.get().getMessage()).contains("protocol error");
            assertThat(client.tryClaim(LENGTH, claim)).isIn(Connection.NOT_CONNECTED, Connection.CLOSED);
            assertThat(directMappingsOpen(client)).isZero();
            for (int i = 0; i < LENGTH; i += 4096)
            {
                assertThat(target.buffer().getByte(i)).as("target byte %d", i).isZero();
                assertThat(readOnly.buffer().getByte(i)).as("read-only byte %d", i).isZero();
            }
        }
        await("client released", () -> client.isClosed() && client.poolBuffersInUse() == 0);
        qp.close();
        cq.close();
        pd.close();
    }

    /** @return {rendezvous id, announced length} of the first RTS frame the client sends. */
    private static long[] awaitRts(final CompletionQueue cq, final WorkCompletions wc, final UnsafeBuffer slots)
    {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        final int slotLength = Wire.receiveSlotLength(1024);
        while (System.nanoTime() - deadline < 0)
        {
            final int n = cq.poll(wc);
            for (int i = 0; i < n; i++)
            {
                if (wc.opcode(i) != WcOpcode.RECV || wc.status(i) != WcStatus.SUCCESS)
                {
                    continue;
                }
                final int base = (int)wc.wrId(i) * slotLength;
                final int end = base + wc.byteLen(i);
                int offset = base + Wire.BATCH_HEADER_LENGTH +
                    slots.getInt(base + BatchHeaderFlyweight.CONTROL_LENGTH_OFFSET);
                while (offset + Wire.FRAME_HEADER_LENGTH <= end)
                {
                    final int type = slots.getInt(offset + DataFrameFlyweight.TYPE_OFFSET);
                    final int length = slots.getInt(offset + DataFrameFlyweight.LENGTH_OFFSET);
                    if (type == Wire.FRAME_RTS)
                    {
                        return new long[] {slots.getLong(offset + DataFrameFlyweight.ID_OFFSET), length};
                    }
                    offset += Wire.frameSize(type, length);
                }
            }
            Thread.yield();
        }
        throw new AssertionError("no RTS from the client");
    }

    /** @return {immediate, byte length} of the next RDMA_WRITE_WITH_IMM received. */
    private static long[] awaitWriteWithImm(final CompletionQueue cq, final WorkCompletions wc)
    {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (System.nanoTime() - deadline < 0)
        {
            final int n = cq.poll(wc);
            for (int i = 0; i < n; i++)
            {
                if (wc.opcode(i) == WcOpcode.RECV_RDMA_WITH_IMM)
                {
                    assertThat(wc.status(i)).isEqualTo(WcStatus.SUCCESS);
                    return new long[] {wc.immData(i), wc.byteLen(i)};
                }
            }
            Thread.yield();
        }
        throw new AssertionError("no RDMA_WRITE_WITH_IMM from the client");
    }

    private static void sendCts(
        final QueuePair qp, final MemoryRegion out, final long id, final long address, final int rkey, final int length)
    {
        final UnsafeBuffer b = out.buffer();
        final int base = 64;
        b.setMemory(base, Wire.BATCH_HEADER_LENGTH + Wire.CONTROL_FRAME_LENGTH, (byte)0);
        new BatchHeaderFlyweight().wrap(b, base).credits(0).controlLength(Wire.CONTROL_FRAME_LENGTH).sequence(0);
        new ControlFrameFlyweight().wrap(b, base + Wire.BATCH_HEADER_LENGTH)
            .type(Wire.CONTROL_CTS).code(0).id(id).address(address).rkey(rkey).length(length);
        final SendRequest send = new SendRequest().opcode(WrOpcode.SEND).wrId(101);
        send.setSge(out, base, Wire.BATCH_HEADER_LENGTH + Wire.CONTROL_FRAME_LENGTH);
        assertThat(qp.postSend(send)).isEqualTo(PostResult.OK);
    }
}
