package io.reverb.rdma.provider.shm;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.WorkCompletions;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;

/**
 * Fuzz targets for the shm provider's socket request parser (issue 13): the parser alone, and any bytes
 * sent to a live listener's Unix socket. Regression mode runs the checked-in corpus in {@code mvn verify};
 * see FUZZING.md at the repository root to fuzz one for minutes.
 *
 * <p>What must hold: the parser refuses with an IOException or returns a message within its limits; and
 * after any bytes the listener still accepts a well-behaved connector.
 */
class ShmWireFuzzTest
{
    private static Path directory;
    private static VerbsContext server;
    private static VerbsContext client;
    private static ConnectionListener listener;
    private static ProtectionDomain serverPd;
    private static CompletionQueue serverCq;
    private static final LinkedBlockingQueue<QueuePair> ACCEPTED = new LinkedBlockingQueue<>();
    private static Thread acceptor;
    private static volatile boolean running;

    @FuzzTest
    void requestDecodes(final byte[] input)
    {
        final ByteBuffer buffer = ByteBuffer.wrap(input);
        final Handshake message;
        try
        {
            if (input.length < 4)
            {
                return;
            }
            final int length = Handshake.bodyLength(buffer);
            assertThat(length).isBetween(1, Handshake.MAX_FRAME);
            buffer.position(4);
            buffer.limit(Math.min(input.length, 4 + length));
            message = Handshake.decode(buffer.slice());
        }
        catch (final IOException expected)
        {
            return;
        }
        assertThat(message.type).isBetween(Handshake.REQUEST, Handshake.REJECT);
        assertThat(message.privateData.length).isLessThanOrEqualTo(56);
        for (final String name : new String[] {message.prefix, message.recvQueueFile, message.recvCqFile})
        {
            assertThat(name).hasSizeLessThanOrEqualTo(Handshake.MAX_NAME).doesNotContain("/").doesNotContain("..");
        }
    }

    private static synchronized void start() throws IOException
    {
        // The target connects to its own local server on purpose: not a request forgery.
        BugDetectors.allowNetworkConnections();
        if (server != null)
        {
            return;
        }
        directory = ShmTestDirectories.newDirectory("fuzz");
        // Each input's socket is closed right after its bytes, so the deadline only bounds the good connector's own
        // handshake: long enough for a loaded machine.
        final VerbsConfig config = VerbsConfig.defaults().withShmDirectory(directory)
            .withHandshakeTimeoutNanos(TimeUnit.SECONDS.toNanos(2));
        server = new ShmVerbsProvider().open(config);
        client = new ShmVerbsProvider().open(config);
        listener = server.listen("fuzz", 16);
        serverPd = server.allocPd();
        serverCq = server.createCq(1024, null);
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
                        ACCEPTED.add(request.accept(new QueuePairAttributes().pd(serverPd).sendCq(serverCq)
                            .recvCq(serverCq).maxSendWr(8).maxRecvWr(8), null));
                    }
                }
                catch (final IOException | RuntimeException ex)
                {
                    // A hostile request may fail to be accepted (its files do not exist): the listener goes on.
                }
            }
        }, "fuzz-shm-acceptor");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    @AfterAll
    static void stop() throws Exception
    {
        if (server != null)
        {
            running = false;
            acceptor.join(2_000);
            client.close();
            server.close();
            ShmTestDirectories.delete(directory);
            server = null;
        }
    }

    /** Any bytes to the listener's socket, then a well-behaved connector. */
    @FuzzTest
    void requestsToTheListener(final byte[] input) throws Exception
    {
        start();
        try (SocketChannel socket = SocketChannel.open(StandardProtocolFamily.UNIX))
        {
            socket.connect(UnixDomainSocketAddress.of(directory.resolve("fuzz" + ShmFiles.SOCKET_SUFFIX)));
            socket.write(ByteBuffer.wrap(input));
        }
        final CompletionQueue cq = client.createCq(16, null);
        final ProtectionDomain pd = client.allocPd();
        final QueuePair qp = client.connect("fuzz", new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq)
            .maxSendWr(8).maxRecvWr(8), null);
        // connect() returned: the listener answered it. Its server-side QP is queued a moment later.
        final QueuePair accepted = ACCEPTED.poll(20, TimeUnit.SECONDS);
        assertThat(accepted).as("the good connector was accepted").isNotNull();
        final List<ShmQueuePair> closed = new ArrayList<>();
        closed.add((ShmQueuePair)accepted);
        for (QueuePair q; (q = ACCEPTED.poll()) != null; )
        {
            closed.add((ShmQueuePair)q);
        }
        for (final ShmQueuePair q : closed)
        {
            q.close();
        }
        retire(closed);
        qp.close();
        cq.close();
        pd.close();
    }

    /**
     * Polls the shared server CQ, as a poller does, until the closed QPs' inboxes are retired: a closed QP's receive
     * queue stays mapped until its CQ's poll has flushed it (or the CQ closes). Without this the run kept one mapping
     * per input and stopped after ~65,000 inputs on the kernel's map count ({@code vm.max_map_count}, "Map failed").
     */
    private static void retire(final List<ShmQueuePair> closed)
    {
        final WorkCompletions completions = new WorkCompletions(64);
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (closed.stream().anyMatch(ShmQueuePair::inboxAttached))
        {
            serverCq.poll(completions);
            assertThat(System.nanoTime() - deadline).as("closed QPs' inboxes retired by the CQ's polls").isNegative();
            Thread.onSpinWait();
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
        final Path decode = Files.createDirectories(root.resolve("requestDecodes"));
        final Path live = Files.createDirectories(root.resolve("requestsToTheListener"));
        final Handshake request = new Handshake();
        request.type = Handshake.REQUEST;
        request.pid = 42;
        request.prefix = "r0123456789abcdef";
        request.qpNum = 300;
        request.pdId = 1;
        request.recvCqId = 2;
        request.recvQueueFile = "r0123456789abcdef-rq300";
        request.recvCqFile = "r0123456789abcdef-cq2";
        request.privateData = new byte[] {1, 2, 3};
        final byte[] bytes = encode(request);
        Files.write(decode.resolve("request"), bytes);
        Files.write(live.resolve("request-of-missing-files"), bytes);
        Files.write(live.resolve("half-a-length"), new byte[] {0, 0});
        Files.write(live.resolve("length-max"), new byte[] {0x7f, (byte)0xff, (byte)0xff, (byte)0xff});
        request.recvQueueFile = "../../etc/passwd";
        Files.write(decode.resolve("path-escape"), encode(request));
    }

    private static byte[] encode(final Handshake message) throws IOException
    {
        final Path socketDir = Files.createTempDirectory("rvb-seed");
        final Path socket = socketDir.resolve("s.sock");
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX))
        {
            server.bind(UnixDomainSocketAddress.of(socket));
            try (SocketChannel out = SocketChannel.open(UnixDomainSocketAddress.of(socket));
                SocketChannel in = server.accept())
            {
                message.write(out);
                final ByteBuffer buffer = ByteBuffer.allocate(Handshake.MAX_FRAME + 4);
                in.configureBlocking(false);
                while (in.read(buffer) > 0)
                {
                    // drain what was written
                }
                buffer.flip();
                final byte[] bytes = new byte[buffer.remaining()];
                buffer.get(bytes);
                return bytes;
            }
        }
        finally
        {
            Files.deleteIfExists(socket);
            Files.deleteIfExists(socketDir);
        }
    }
}
