package io.reverb.rdma.provider.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionChannel;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConformancePeer;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QpState;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * The shm fabric between two JVMs: this test's process against {@link ConformancePeer} in {@code echo}
 * mode (a child JVM that echoes every message and exposes a 16 MiB region for RDMA). Every test ends
 * with the child exiting cleanly and the shm directory empty: the files of both processes are gone.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ShmCrossProcessTest
{
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(20);
    private static final AtomicInteger NAMES = new AtomicInteger();
    private static final int SLOTS = 64;
    private static final int SLOT_SIZE = 4096;

    private final Path directory = ShmTestDirectories.newDirectory("xproc");
    private Process child;
    private VerbsContext context;
    private ProtectionDomain pd;
    private CompletionChannel channel;
    private CompletionQueue cq;
    private QueuePair qp;
    private MemoryRegion slots;
    private long peerAddress;
    private int peerRkey;
    private final AtomicInteger disconnects = new AtomicInteger();

    @BeforeEach
    void connectToChild() throws Exception
    {
        final String name = "x" + NAMES.incrementAndGet();
        disconnects.set(0);
        child = new ProcessBuilder(
            Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-Xmx256m",
            "-D" + VerbsConfig.SHM_DIR_PROP + "=" + directory,
            "-D" + VerbsConfig.CONNECT_TIMEOUT_MS_PROP + "=60000",
            "-cp", System.getProperty("java.class.path"),
            ConformancePeer.class.getName(), ShmVerbsProvider.NAME, "echo", name)
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
        final BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        assertThat(out.readLine()).as("child ready").isEqualTo("READY");

        context = new ShmVerbsProvider().open(VerbsConfig.defaults().withShmDirectory(directory)
            .withConnectTimeoutNanos(TimeUnit.SECONDS.toNanos(60)));
        pd = context.allocPd();
        channel = context.createCompletionChannel();
        cq = context.createCq(1024, channel);
        slots = pd.allocate(SLOTS * SLOT_SIZE, Access.LOCAL_WRITE);
        qp = context.connect(name, new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq)
            .maxRecvWr(SLOTS).maxSendWr(SLOTS).disconnectHandler(disconnects::incrementAndGet), null);
        final ByteBuffer privateData = qp.remotePrivateData();
        peerAddress = privateData.getLong(0);
        peerRkey = privateData.getInt(8);
        final RecvRequest recv = new RecvRequest();
        for (int i = 0; i < SLOTS; i++)
        {
            recv.wrId(i).setSge(slots, i * SLOT_SIZE, SLOT_SIZE);
            assertThat(qp.postRecv(recv)).isEqualTo(PostResult.OK);
        }
    }

    @AfterEach
    void closeAndCheckFiles() throws Exception
    {
        try
        {
            if (qp != null)
            {
                qp.close();
            }
            // The child exits when its connection goes down, closing its context.
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).as("child exited").isTrue();
            assertThat(child.exitValue()).as("child exit code").isZero();
        }
        finally
        {
            child.destroyForcibly();
            context.close();
        }
        try (Stream<Path> files = Files.list(directory))
        {
            assertThat(files.map(p -> p.getFileName().toString()).collect(Collectors.toList()))
                .as("files left by either process").isEmpty();
        }
    }

    @AfterAll
    void removeDirectory() throws IOException
    {
        ShmTestDirectories.delete(directory);
    }

    @Test
    void shouldEchoSendsOfZeroBytesUpToTheReceiveSizeAcrossProcesses() throws Exception
    {
        final MemoryRegion send = pd.allocate(SLOT_SIZE, Access.LOCAL_WRITE);
        final int[] sizes = {0, 1, 64, 1000, SLOT_SIZE};
        for (final int size : sizes)
        {
            fillPattern(send.buffer(), size, size);
            final SendRequest request = new SendRequest().wrId(size).opcode(WrOpcode.SEND_WITH_IMM)
                .immData(size * 3).flags(SendRequest.FLAG_SIGNALED);
            request.setSge(send, 0, size);
            assertThat(qp.postSend(request)).isEqualTo(PostResult.OK);

            boolean sent = false;
            boolean echoed = false;
            final WorkCompletions wc = new WorkCompletions(4);
            final long deadline = System.nanoTime() + TIMEOUT_NANOS;
            while (!sent || !echoed)
            {
                final int n = cq.poll(wc);
                for (int i = 0; i < n; i++)
                {
                    assertThat(wc.status(i)).isEqualTo(WcStatus.SUCCESS);
                    if (wc.opcode(i) == WcOpcode.SEND)
                    {
                        sent = true;
                        continue;
                    }
                    assertThat(wc.opcode(i)).isEqualTo(WcOpcode.RECV);
                    assertThat(wc.byteLen(i)).isEqualTo(size);
                    assertThat(wc.hasImm(i)).isTrue();
                    assertThat(wc.immData(i)).isEqualTo(size * 3);
                    final int slot = (int)wc.wrId(i);
                    assertPattern(new UnsafeBuffer(slots.buffer(), slot * SLOT_SIZE, SLOT_SIZE), size, size);
                    repost(slot);
                    echoed = true;
                }
                awaitProgress(n, deadline);
            }
        }
    }

    @Test
    void shouldEchoThousandsOfSendsInOrderAcrossProcesses() throws Exception
    {
        final int messages = 5_000;
        final int window = 16;
        final MemoryRegion send = pd.allocate(8, Access.LOCAL_WRITE);
        final SendRequest request = new SendRequest().opcode(WrOpcode.SEND).flags(0);
        final WorkCompletions wc = new WorkCompletions(32);
        int sent = 0;
        int received = 0;
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (received < messages)
        {
            // Window well below the child's 64 receives: the child reposts as it echoes.
            if (sent < messages && sent - received < window)
            {
                send.buffer().putInt(0, sent);
                request.wrId(sent).setSge(send, 0, 4);
                assertThat(qp.postSend(request)).isEqualTo(PostResult.OK);
                sent++;
            }
            final int n = cq.poll(wc);
            for (int i = 0; i < n; i++)
            {
                assertThat(wc.status(i)).isEqualTo(WcStatus.SUCCESS);
                final int slot = (int)wc.wrId(i);
                assertThat(slots.buffer().getInt(slot * SLOT_SIZE)).as("echo order").isEqualTo(received);
                received++;
                repost(slot);
            }
            if (System.nanoTime() - deadline > 0)
            {
                fail("only " + received + " of " + messages + " echoes arrived");
            }
            if (n == 0 && sent - received >= window)
            {
                Thread.yield();
            }
        }
    }

    @Test
    void shouldRdmaWriteAndReadTheChildsMemoryFromOneByteToSixteenMiB() throws Exception
    {
        final MemoryRegion local = pd.allocate(ConformancePeer.ECHO_REGION_SIZE, Access.LOCAL_WRITE);
        final int[] sizes = {1, 4097, 1024 * 1024, ConformancePeer.ECHO_REGION_SIZE};
        for (final int size : sizes)
        {
            fillPattern(local.buffer(), size, size);
            rdma(WrOpcode.RDMA_WRITE, local, size, peerAddress, peerRkey, WcStatus.SUCCESS);
            local.buffer().setMemory(0, size, (byte)0);
            rdma(WrOpcode.RDMA_READ, local, size, peerAddress, peerRkey, WcStatus.SUCCESS);
            assertPattern(local.buffer(), size, size);
        }
    }

    @Test
    void shouldFailRdmaWriteWithBadRkeyAcrossProcessesAndDisconnectBothSides() throws Exception
    {
        final MemoryRegion local = pd.allocate(64, Access.LOCAL_WRITE);
        rdma(WrOpcode.RDMA_WRITE, local, 64, peerAddress, peerRkey + 1, WcStatus.REM_ACCESS_ERR);
        assertThat(qp.state()).isEqualTo(QpState.ERROR);
        // Our 64 posted receives are flushed, and the child sees the disconnect (it exits: checked after the test).
        final List<WcStatus> flushed = new ArrayList<>();
        final WorkCompletions wc = new WorkCompletions(SLOTS);
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (flushed.size() < SLOTS)
        {
            final int n = cq.poll(wc);
            for (int i = 0; i < n; i++)
            {
                flushed.add(wc.status(i));
            }
            awaitProgress(n, deadline);
        }
        assertThat(flushed).containsOnly(WcStatus.WR_FLUSH_ERR);
    }

    @Test
    void shouldWakeAwaitThroughTheDoorbellOfAnotherProcess() throws Exception
    {
        final MemoryRegion send = pd.allocate(64, Access.LOCAL_WRITE);
        final WorkCompletions wc = new WorkCompletions(4);
        for (int round = 0; round < 20; round++)
        {
            cq.requestNotify(false);
            assertThat(cq.poll(wc)).as("nothing before the send").isZero();
            final SendRequest request = new SendRequest().wrId(round).opcode(WrOpcode.SEND).flags(0);
            request.setSge(send, 0, 16);
            assertThat(qp.postSend(request)).isEqualTo(PostResult.OK);
            // The echo's completion is written by the child, which rings our doorbell over the socket.
            assertThat(channel.await(TIMEOUT_NANOS)).as("event in round %d", round).isEqualTo(1);
            final long deadline = System.nanoTime() + TIMEOUT_NANOS;
            int n;
            while ((n = cq.poll(wc)) == 0)
            {
                awaitProgress(n, deadline);
            }
            assertThat(wc.status(0)).isEqualTo(WcStatus.SUCCESS);
            repost((int)wc.wrId(0));
        }
    }

    @Test
    void shouldFlushAndCallDisconnectHandlerWhenChildClosesCleanly() throws Exception
    {
        // Disconnect from our side: our receives are flushed exactly once, our handler runs once, and
        // the child notices the EOF (it exits 0; the files of both processes are checked afterwards).
        qp.disconnect();
        final WorkCompletions wc = new WorkCompletions(SLOTS);
        int flushed = 0;
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (flushed < SLOTS)
        {
            final int n = cq.poll(wc);
            for (int i = 0; i < n; i++)
            {
                assertThat(wc.status(i)).isEqualTo(WcStatus.WR_FLUSH_ERR);
                flushed++;
            }
            awaitProgress(n, deadline);
        }
        assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
        final long handlerDeadline = System.nanoTime() + TIMEOUT_NANOS;
        while (disconnects.get() == 0 && System.nanoTime() - handlerDeadline < 0)
        {
            Thread.sleep(1);
        }
        assertThat(disconnects.get()).isEqualTo(1);
    }

    private void rdma(
        final WrOpcode opcode, final MemoryRegion local, final int size, final long address, final int rkey,
        final WcStatus expected)
    {
        final SendRequest request = new SendRequest().wrId(size).opcode(opcode).flags(SendRequest.FLAG_SIGNALED)
            .remoteAddress(address).rkey(rkey);
        request.setSge(local, 0, size);
        assertThat(qp.postSend(request)).isEqualTo(PostResult.OK);
        final WorkCompletions wc = new WorkCompletions(1);
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        int n;
        while ((n = cq.poll(wc)) == 0)
        {
            awaitProgress(n, deadline);
        }
        assertThat(wc.status(0)).as("%s of %d bytes", opcode, size).isEqualTo(expected);
        assertThat(wc.wrId(0)).isEqualTo(size);
    }

    private void repost(final int slot)
    {
        final RecvRequest recv = new RecvRequest().wrId(slot);
        recv.setSge(slots, slot * SLOT_SIZE, SLOT_SIZE);
        assertThat(qp.postRecv(recv)).isEqualTo(PostResult.OK);
    }

    private static void awaitProgress(final int polled, final long deadline)
    {
        if (polled == 0)
        {
            if (System.nanoTime() - deadline > 0)
            {
                fail("timed out waiting for completions");
            }
            Thread.yield();
        }
    }

    private static byte patternByte(final int i, final int seed)
    {
        return (byte)(i * 13 + seed);
    }

    private static void fillPattern(final UnsafeBuffer buffer, final int length, final int seed)
    {
        for (int i = 0; i < length; i++)
        {
            buffer.putByte(i, patternByte(i, seed));
        }
    }

    private static void assertPattern(final UnsafeBuffer buffer, final int length, final int seed)
    {
        for (int i = 0; i < length; i++)
        {
            if (buffer.getByte(i) != patternByte(i, seed))
            {
                fail("content differs at byte " + i + " of " + length);
            }
        }
    }
}
