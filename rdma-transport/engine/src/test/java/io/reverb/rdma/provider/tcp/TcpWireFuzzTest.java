package io.reverb.rdma.provider.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.junit.FuzzTest;
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
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;

/**
 * Fuzz targets for the tcp provider (issue 13): its handshake parser, and its frame parser (the NIC
 * thread) fed any bytes by a peer that completed a valid handshake. Regression mode runs the checked-in
 * corpus in {@code mvn verify}; see FUZZING.md at the repository root to fuzz one for minutes.
 *
 * <p>What must hold: the handshake parser refuses with an IOException or returns a message within the local
 * limits; hostile frames cost at most their own QP, and the NIC thread keeps serving a well-behaved QP.
 */
class TcpWireFuzzTest
{
    private static VerbsContext server;
    private static VerbsContext client;
    private static ConnectionListener listener;
    private static InetSocketAddress address;
    private static QueuePair goodServer;
    private static QueuePair goodClient;
    private static MemoryRegion goodRecv;
    private static MemoryRegion goodSend;
    private static final LinkedBlockingQueue<QueuePair> ACCEPTED = new LinkedBlockingQueue<>();
    private static Thread acceptor;
    private static volatile boolean running;

    @FuzzTest
    void handshakeDecodes(final byte[] input)
    {
        final TcpHandshake message;
        try
        {
            message = TcpHandshake.read(new ByteArrayInputStream(input));
        }
        catch (final IOException expected)
        {
            return;
        }
        assertThat(message.maxSendWr).isBetween(1, TcpHandshake.MAX_PEER_SEND_WR);
        assertThat(message.rnrRetryNanos).isBetween(0L, TcpHandshake.MAX_PEER_RNR_RETRY_NANOS);
        assertThat(message.privateData.length).isLessThanOrEqualTo(56);
        assertThat(message.type).isBetween(TcpHandshake.CONNECT, TcpHandshake.REJECT);
    }

    private static synchronized void start() throws Exception
    {
        // The target connects to its own local server on purpose: not a request forgery.
        BugDetectors.allowNetworkConnections();
        if (server != null)
        {
            return;
        }
        server = new TcpVerbsProvider().open(VerbsConfig.defaults());
        client = new TcpVerbsProvider().open(VerbsConfig.defaults());
        listener = server.listen("127.0.0.1:0", 16);
        address = TcpAddress.parse(listener.localAddress());
        final ProtectionDomain pd = server.allocPd();
        final CompletionQueue cq = server.createCq(1024, null);
        running = true;
        acceptor = new Thread(() ->
        {
            while (running)
            {
                try
                {
                    final ConnectionRequest request = listener.accept(TimeUnit.MILLISECONDS.toNanos(100));
                    if (request != null)
                    {
                        ACCEPTED.add(request.accept(new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq)
                            .maxSendWr(8).maxRecvWr(8), null));
                    }
                }
                catch (final IOException | RuntimeException ex)
                {
                    // A hostile peer's accept may fail; the listener goes on.
                }
            }
        }, "fuzz-acceptor");
        acceptor.setDaemon(true);
        acceptor.start();
        final CompletionQueue clientCq = client.createCq(64, null);
        final ProtectionDomain clientPd = client.allocPd();
        goodClient = client.connect(listener.localAddress(), new QueuePairAttributes().pd(clientPd).sendCq(clientCq)
            .recvCq(clientCq).maxSendWr(8).maxRecvWr(8), null);
        goodServer = ACCEPTED.poll(20, TimeUnit.SECONDS);
        goodRecv = pd.allocate(64, Access.LOCAL_WRITE);
        goodSend = clientPd.allocate(64, Access.LOCAL_WRITE);
    }

    @AfterAll
    static void stop() throws InterruptedException
    {
        if (server != null)
        {
            running = false;
            acceptor.join(2_000);
            client.close();
            server.close();
            server = null;
        }
    }

    /** Any bytes after a valid CONNECT/ACCEPT exchange: the NIC thread parses them as frames. */
    @FuzzTest
    void framesAfterHandshake(final byte[] frames) throws Exception
    {
        start();
        try (Socket socket = new Socket(address.getAddress(), address.getPort()))
        {
            socket.setSoTimeout(20_000);
            final OutputStream out = socket.getOutputStream();
            TcpHandshake.of(TcpHandshake.CONNECT, 8, 0, null).write(out);
            final InputStream in = socket.getInputStream();
            assertThat(TcpHandshake.read(in).type).isEqualTo(TcpHandshake.ACCEPT);
            out.write(frames);
            out.flush();
        }
        final QueuePair hostile = ACCEPTED.poll(20, TimeUnit.SECONDS);
        assertThat(hostile).as("the hostile peer's QP").isNotNull();
        hostile.close();
        assertGoodPairWorks();
    }

    private static void assertGoodPairWorks() throws InterruptedException
    {
        final RecvRequest recv = new RecvRequest().wrId(7);
        recv.setSge(goodRecv, 0, 64);
        assertThat(goodServer.postRecv(recv)).isEqualTo(PostResult.OK);
        final SendRequest send = new SendRequest().opcode(WrOpcode.SEND).wrId(8);
        send.setSge(goodSend, 0, 16);
        assertThat(goodClient.postSend(send)).isEqualTo(PostResult.OK);
        final WorkCompletions wc = new WorkCompletions(16);
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        boolean received = false;
        boolean sent = false;
        while (!(received && sent))
        {
            assertThat(System.nanoTime() - deadline).as("good pair completes in time").isNegative();
            final int n = goodServer.recvCq().poll(wc);
            for (int i = 0; i < n; i++)
            {
                if (wc.wrId(i) == 7)
                {
                    assertThat(wc.status(i)).isEqualTo(WcStatus.SUCCESS);
                    received = true;
                }
            }
            final int m = goodClient.sendCq().poll(wc);
            for (int i = 0; i < m; i++)
            {
                assertThat(wc.status(i)).isEqualTo(WcStatus.SUCCESS);
                sent = true;
            }
            if (n == 0 && m == 0)
            {
                Thread.sleep(1);
            }
        }
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
        final Path handshakes = Files.createDirectories(root.resolve("handshakeDecodes"));
        final Path frames = Files.createDirectories(root.resolve("framesAfterHandshake"));
        final ByteArrayOutputStream connect = new ByteArrayOutputStream();
        TcpHandshake.of(TcpHandshake.CONNECT, 8, 100_000_000L, ByteBuffer.wrap(new byte[] {1, 2, 3})).write(connect);
        Files.write(handshakes.resolve("connect"), connect.toByteArray());
        final ByteArrayOutputStream huge = new ByteArrayOutputStream();
        TcpHandshake.of(TcpHandshake.CONNECT, 1 << 27, 0, null).write(huge);
        Files.write(handshakes.resolve("depth-2-27"), huge.toByteArray());
        // Frames: one of each type the NIC knows, with a 16-byte payload announced, and absurd lengths.
        for (final int type : new int[] {TcpFrame.SEND, TcpFrame.SEND_IMM, TcpFrame.WRITE, TcpFrame.WRITE_IMM,
            TcpFrame.READ_REQUEST, TcpFrame.ACK, TcpFrame.NAK, TcpFrame.READ_RESPONSE})
        {
            final ByteBuffer frame = ByteBuffer.allocate(TcpFrame.HEADER_LENGTH + 16);
            frame.put(TcpFrame.TYPE_OFFSET, (byte)type).putInt(TcpFrame.LENGTH_OFFSET, 16)
                .putInt(TcpFrame.RKEY_OFFSET, 0x180).putLong(TcpFrame.ADDRESS_OFFSET, 1L << 32);
            Files.write(frames.resolve("type-" + type), frame.array());
        }
        final ByteBuffer absurd = ByteBuffer.allocate(TcpFrame.HEADER_LENGTH);
        absurd.put(TcpFrame.TYPE_OFFSET, (byte)TcpFrame.SEND).putInt(TcpFrame.LENGTH_OFFSET, Integer.MAX_VALUE);
        Files.write(frames.resolve("send-length-max"), absurd.array());
        // ACKs riding on frames: on a request (for requests that do not exist), on an answer, the most there can be.
        for (final int type : new int[] {TcpFrame.SEND, TcpFrame.WRITE, TcpFrame.ACK})
        {
            final ByteBuffer carrying = ByteBuffer.allocate(TcpFrame.HEADER_LENGTH + 16);
            carrying.put(TcpFrame.TYPE_OFFSET, (byte)type).putShort(TcpFrame.ACKS_OFFSET, (short)1)
                .putInt(TcpFrame.LENGTH_OFFSET, 16).putInt(TcpFrame.RKEY_OFFSET, 0x180)
                .putLong(TcpFrame.ADDRESS_OFFSET, 1L << 32);
            Files.write(frames.resolve("acks-on-type-" + type), carrying.array());
        }
        final ByteBuffer most = ByteBuffer.allocate(TcpFrame.HEADER_LENGTH);
        most.put(TcpFrame.TYPE_OFFSET, (byte)TcpFrame.READ_REQUEST).putShort(TcpFrame.ACKS_OFFSET, (short)0xFFFF);
        Files.write(frames.resolve("acks-max"), most.array());
    }
}
