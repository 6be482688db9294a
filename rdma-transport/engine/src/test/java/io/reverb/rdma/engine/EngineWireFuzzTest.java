package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.MemoryRegion;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;

/**
 * Fuzz targets for what the engine reads from a peer (issue 13): the connect/accept/reject private data,
 * and batches (header, control frames, data and RTS frames) sent by a peer that completed a valid
 * handshake. Regression mode runs the checked-in corpus in {@code mvn verify}; see FUZZING.md at the
 * repository root to fuzz one for minutes.
 *
 * <p>What must hold for any bytes: the private-data checks answer (never throw), accept only what is within
 * this side's limits, and a hostile batch costs at most its own connection: the server keeps serving a
 * well-behaved connection, and the hostile one goes away.
 */
class EngineWireFuzzTest
{
    private static final byte[] TOKEN = "fuzz-token-0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    private static final EngineConfig CONFIG = config(PollingMode.EVENT).conclude();

    private static RdmaEngine server;
    private static RdmaEngine client;
    private static VerbsContext raw;
    private static Connection good;
    private static String name;
    private static final AtomicLong DELIVERED = new AtomicLong();
    private static final AtomicLong GOOD_SENT = new AtomicLong();

    @FuzzTest
    void privateDataDecodes(final byte[] data)
    {
        final ByteBuffer b = ByteBuffer.wrap(data).asReadOnlyBuffer();
        final HandshakeException refusal = Handshake.validateRequest(b, CONFIG, null, "fuzz");
        if (refusal == null)
        {
            final Handshake.Hello hello = Handshake.decode(b);
            assertThat(data.length).isGreaterThanOrEqualTo(Handshake.REQUEST_LENGTH);
            assertThat(hello.receiveSlots).isBetween(EngineConfig.MIN_RECEIVE_SLOTS, EngineConfig.MAX_RECEIVE_SLOTS);
            assertThat(hello.eagerLimit).isBetween(0, EngineConfig.MAX_EAGER_LIMIT);
            assertThat(hello.maxInbound).isBetween(0, EngineConfig.MAX_SIZE_CLASS);
        }
        else
        {
            assertThat(refusal.getMessage()).startsWith("refused connection from fuzz");
        }
        Handshake.validateRequest(b, CONFIG, TOKEN, "fuzz");
        assertThat(Handshake.fromReject(b, "fuzz")).isNotNull();
        final ByteBuffer request = Handshake.encodeRequest(CONFIG, new byte[Handshake.NONCE_LENGTH], 0, 0, Handshake.VERSION);
        // A random accept never carries a valid proof (2^-128), and checking it never throws.
        assertThat(Handshake.verifyAccept(TOKEN, request, b, "fuzz")).isNotNull();
    }

    private static synchronized void start() throws IOException
    {
        // The target connects to its own local server on purpose: not a request forgery.
        BugDetectors.allowNetworkConnections();
        if (server != null)
        {
            return;
        }
        server = RdmaEngine.open("shm", config(PollingMode.EVENT).name("fuzz-server").errorHandler(t -> { }));
        client = RdmaEngine.open("shm", config(PollingMode.EVENT).name("fuzz-client").errorHandler(t -> { }));
        raw = VerbsProviders.forScheme("shm").open(verbsConfig());
        name = uniqueName("fuzz");
        // Only the first connection (the good one) counts its deliveries; hostile ones may deliver what they like.
        final AtomicBoolean first = new AtomicBoolean(true);
        server.listen(name, c ->
        {
            final boolean counted = first.getAndSet(false);
            c.setHandler((buffer, offset, length) ->
            {
                if (counted)
                {
                    DELIVERED.incrementAndGet();
                }
            });
        });
        good = client.connect(name);
        // connect() returns once the ready word is written, a moment before the server lists the connection.
        await("good connection listed", () -> server.connections().size() == 1);
    }

    @AfterAll
    static void stop()
    {
        if (server != null)
        {
            client.close();
            server.close();
            raw.close();
            server = null;
        }
    }

    /** One batch of any bytes from a peer that completed a valid (unauthenticated) handshake. */
    @FuzzTest
    void batchesFromAPeer(final byte[] batch) throws Exception
    {
        start();
        final int before = 1; // the good connection
        final ProtectionDomain pd = raw.allocPd();
        final CompletionQueue cq = raw.createCq(64, null);
        try
        {
            final MemoryRegion ready = pd.allocate(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            final MemoryRegion source = pd.allocate(Math.max(1, batch.length), Access.LOCAL_WRITE);
            final QueuePair qp = raw.connect(name, new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq)
                .maxSendWr(8).maxRecvWr(8),
                    Handshake.encodeRequest(CONFIG, null, ready.address(), ready.rkey(), Handshake.VERSION));
            await("ready word", () -> ready.buffer().getLongVolatile(0) == Handshake.MAGIC);
            if (batch.length > 0)
            {
                source.buffer().putBytes(0, batch);
                final SendRequest send = new SendRequest().opcode(WrOpcode.SEND).wrId(1);
                send.setSge(source, 0, batch.length);
                qp.postSend(send);
            }
            qp.close();
        }
        finally
        {
            cq.close();
            pd.close();
        }
        // The server still serves a well-behaved connection...
        final long expected = DELIVERED.get() + 1;
        send(good, new WriteClaim(), 32, GOOD_SENT.incrementAndGet());
        await("good message delivered", () -> DELIVERED.get() >= expected);
        // ...and the hostile one goes away.
        await("hostile connection gone", () -> server.connections().size() <= before);
    }

    /**
     * Writes the seed corpus (run once by hand; the files are checked in).
     *
     * @param args the corpus directory.
     * @throws IOException if writing fails.
     */
    public static void main(final String[] args) throws IOException
    {
        final Path root = Path.of(args[0]);
        final Path pd = Files.createDirectories(root.resolve("privateDataDecodes"));
        final Path batches = Files.createDirectories(root.resolve("batchesFromAPeer"));
        final ByteBuffer request = Handshake.encodeRequest(CONFIG, new byte[Handshake.NONCE_LENGTH], 4096, 9, Handshake.VERSION);
        Files.write(pd.resolve("request"), request.array());
        Files.write(pd.resolve("accept"),
            Handshake.encodeAccept(CONFIG, request, TOKEN, new byte[Handshake.NONCE_LENGTH]).array());
        Files.write(pd.resolve("reject"), Handshake.encodeReject(HandshakeException.Reason.AUTHENTICATION, "no").array());

        // Batches: credits only; a data frame; an RTS; CTS/REFUSE/CLOSE/AUTH control frames; a bad length.
        Files.write(batches.resolve("credits"), batch(8, new int[0], new byte[0]));
        final ByteBuffer data = ByteBuffer.allocate(Wire.dataFrameLength(5)).order(ByteOrder.nativeOrder());
        data.putInt(DataFrameFlyweight.LENGTH_OFFSET, 5).putInt(DataFrameFlyweight.TYPE_OFFSET, Wire.FRAME_DATA)
            .putLong(DataFrameFlyweight.ID_OFFSET, 1);
        Files.write(batches.resolve("data"), batch(8, new int[0], data.array()));
        final ByteBuffer rts = ByteBuffer.allocate(Wire.FRAME_HEADER_LENGTH).order(ByteOrder.nativeOrder());
        rts.putInt(DataFrameFlyweight.LENGTH_OFFSET, 100_000).putInt(DataFrameFlyweight.TYPE_OFFSET, Wire.FRAME_RTS)
            .putLong(DataFrameFlyweight.ID_OFFSET, 3);
        Files.write(batches.resolve("rts"), batch(8, new int[0], rts.array()));
        Files.write(batches.resolve("control-frames"),
            batch(8, new int[] {Wire.CONTROL_CTS, Wire.CONTROL_REFUSE, Wire.CONTROL_CLOSE, Wire.CONTROL_AUTH}, new byte[0]));
        final ByteBuffer overrun = ByteBuffer.allocate(Wire.FRAME_HEADER_LENGTH).order(ByteOrder.nativeOrder());
        overrun.putInt(DataFrameFlyweight.LENGTH_OFFSET, Integer.MAX_VALUE)
            .putInt(DataFrameFlyweight.TYPE_OFFSET, Wire.FRAME_DATA);
        Files.write(batches.resolve("overrun"), batch(-1, new int[0], overrun.array()));
    }

    private static byte[] batch(final int credits, final int[] controlTypes, final byte[] frames)
    {
        final int control = controlTypes.length * Wire.CONTROL_FRAME_LENGTH;
        final ByteBuffer b = ByteBuffer.allocate(Wire.BATCH_HEADER_LENGTH + control + frames.length)
            .order(ByteOrder.nativeOrder());
        b.putInt(BatchHeaderFlyweight.CREDITS_OFFSET, credits)
            .putInt(BatchHeaderFlyweight.CONTROL_LENGTH_OFFSET, control).putLong(BatchHeaderFlyweight.SEQUENCE_OFFSET, 0);
        for (int i = 0; i < controlTypes.length; i++)
        {
            final int at = Wire.BATCH_HEADER_LENGTH + i * Wire.CONTROL_FRAME_LENGTH;
            b.putInt(at + ControlFrameFlyweight.TYPE_OFFSET, controlTypes[i]).putLong(at + ControlFrameFlyweight.ID_OFFSET, 0)
                .putInt(at + ControlFrameFlyweight.LENGTH_OFFSET, 1 << 20);
        }
        b.position(Wire.BATCH_HEADER_LENGTH + control);
        b.put(frames);
        return b.array();
    }
}
