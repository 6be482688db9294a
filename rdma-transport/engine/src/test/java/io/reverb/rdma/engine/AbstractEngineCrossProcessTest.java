package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.WriteClaim;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.agrona.DirectBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The engine between this JVM and a child JVM ({@link EngineChild}), over each fabric
 * ({@link ShmEngineCrossProcessTest}, {@link TcpEngineCrossProcessTest}).
 */
abstract class AbstractEngineCrossProcessTest
{
    Process child;
    private RdmaEngine engine;

    /**
     * @return the fabric the suite runs over.
     */
    abstract EngineFabric fabric();

    @AfterEach
    void tearDown() throws Exception
    {
        if (engine != null)
        {
            engine.close();
        }
        if (child != null)
        {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
    }

    String startChild(final String mode, final boolean withMicrometer) throws Exception
    {
        String classPath = System.getProperty("java.class.path");
        if (!withMicrometer)
        {
            classPath = Stream.of(classPath.split(File.pathSeparator))
                .filter(entry -> !entry.contains("micrometer"))
                .collect(Collectors.joining(File.pathSeparator));
        }
        final List<String> command = new ArrayList<>(List.of(
            System.getProperty("java.home") + "/bin/java",
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-Xmx256m",
            "-Dreverb.test.shm.dir=" + shmDirectory(),
            "-cp", classPath,
            EngineChild.class.getName(), mode, fabric().name(), fabric().listenAddress("child-" + mode)));
        child = new ProcessBuilder(command).redirectErrorStream(true).start();
        final BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        final String line = out.readLine();
        assertThat(line).as("child's first line").startsWith("READY ");
        assertThat(line).endsWith(" micrometer=" + withMicrometer);
        final Thread drain = new Thread(() -> out.lines().forEach(l -> System.out.println("[child] " + l)));
        drain.setDaemon(true);
        drain.start();
        // READY <address> micrometer=<bool>: the address to connect to (a tcp child reports its port)
        return line.split(" ")[1];
    }

    static final class Acks implements MessageHandler
    {
        final Queue<int[]> acks = new ConcurrentLinkedQueue<>();

        @Override
        public void onMessage(final DirectBuffer buffer, final int offset, final int length)
        {
            acks.add(new int[] {buffer.getInt(offset), buffer.getInt(offset + 4), buffer.getInt(offset + 8),
                buffer.getInt(offset + 12), (int)buffer.getLong(offset + 16)});
        }
    }

    private Connection connect(final String address, final Acks acks) throws Exception
    {
        return connect(address, acks, true);
    }

    /** @param directWrite {@link EngineConfig#directWrite(boolean)} of this side (shm only). */
    Connection connect(final String address, final Acks acks, final boolean directWrite) throws Exception
    {
        final int max = 64 * 1024 * 1024;
        engine = RdmaEngine.open(fabric().scheme(), config(fabric(), PollingMode.ADAPTIVE).name("parent")
            .maxInboundMessageSize(max).maxOutboundMessageSize(max).rendezvousPoolBytes(2L * max).directWrite(directWrite));
        final Connection connection = engine.connect(address);
        connection.setHandler(acks);
        return connection;
    }

    @Test
    void shouldDeliverMessagesFromZeroBytesTo64MiBToAnotherProcess() throws Exception
    {
        final Acks acks = new Acks();
        final Connection connection = connect(startChild("verify", true), acks);
        final int s = connection.eagerLimit();
        final int[] sizes = {0, 1, 100, s - 1, s, s + 1, 65_536, 1 << 20, 16 << 20, 64 << 20};
        final WriteClaim claim = new WriteClaim();
        for (int i = 0; i < sizes.length; i++)
        {
            send(connection, claim, sizes[i], i);
        }
        await("all acknowledged", () -> acks.acks.size() == sizes.length);
        int i = 0;
        for (final int[] ack : acks.acks)
        {
            assertThat(ack[0]).isEqualTo(i);
            assertThat(ack[1]).as("length of message " + i).isEqualTo(sizes[i]);
            assertThat(ack[2]).as("content of message " + i + " checked by the child").isEqualTo(1);
            // Granted buffers: the message being delivered plus those granted ahead (pipelined RTS).
            assertThat(ack[3]).as("child's pool buffers in use").isBetween(sizes[i] > s ? 1 : 0,
                EngineConnection.MAX_PIPELINED_RENDEZVOUS);
            if (i == sizes.length - 1)
            {
                assertThat(ack[3]).as("child's pool buffers in use: only the last message's").isEqualTo(1);
            }
            assertThat(ack[4]).as("child's RNR errors").isZero();
            i++;
        }
        // counted when a write completes, which over tcp:// comes with its ACK, possibly after the child acked it
        await("five rendezvous writes completed", () -> connection.stats().rendezvousMessagesSent() == 5);
        assertThat(connection.stats().rnrErrors()).isZero();
        await("buffers back", () -> connection.poolBuffersInUse() == 0 && connection.pendingRendezvous() == 0);
        connection.close();
        assertThat(connection.isClosed()).isTrue();
        assertThat(child.waitFor(30, TimeUnit.SECONDS)).as("child exits after the graceful close").isTrue();
    }

    @Test
    void shouldWorkWithoutMicrometerOnTheClassPath() throws Exception
    {
        final Acks acks = new Acks();
        final Connection connection = connect(startChild("verify", false), acks);
        final WriteClaim claim = new WriteClaim();
        for (int i = 0; i < 50; i++)
        {
            send(connection, claim, i * 100, i);
        }
        await("all acknowledged", () -> acks.acks.size() == 50);
        assertThat(acks.acks).allMatch(ack -> ack[2] == 1);
    }

    @Test
    void shouldFailPendingSendsAndReturnBuffersWhenThePeerIsKilledMidRendezvous() throws Exception
    {
        final Acks acks = new Acks();
        // Copying: five messages committed while the child grants two (a direct write waits for its grant instead:
        // ShmEngineCrossProcessTest).
        final Connection connection = connect(startChild("hoard", true), acks, false);
        final Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
        final Queue<Long> failedIds = new ConcurrentLinkedQueue<>();
        final AtomicReference<Throwable> closeCause = new AtomicReference<>();
        connection.setSendErrorHandler((id, length, cause) ->
        {
            failedIds.add(id);
            failures.add(cause);
        });
        connection.onClose(cause -> closeCause.set(cause == null ? new AssertionError("graceful?") : cause));
        final WriteClaim claim = new WriteClaim();
        final List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++)
        {
            ids.add(send(connection, claim, 200_000, i));
        }
        // The child keeps two messages (its pool is then empty) and queues the third request.
        await("two delivered", () -> acks.acks.size() == 2);
        await("three rendezvous pending", () -> connection.pendingRendezvous() == 3);
        assertThat(connection.poolBuffersInUse()).isEqualTo(3);
        child.destroyForcibly();
        await("connection failed", () -> closeCause.get() != null);
        assertThat(closeCause.get()).isInstanceOf(PeerDisconnectedException.class)
            .hasMessageContaining("disconnected without closing");
        await("three sends failed", () -> failures.size() == 3);
        assertThat(failedIds).containsExactlyInAnyOrderElementsOf(ids.subList(2, 5));
        assertThat(failures).allMatch(t -> t instanceof PeerDisconnectedException);
        assertThat(connection.poolBuffersInUse()).isZero();
        assertThat(connection.pendingRendezvous()).isZero();
        assertThat(connection.tryClaim(10, claim)).isEqualTo(Connection.NOT_CONNECTED);
        assertThat(connection.stats().rnrErrors()).isZero();
    }
}
