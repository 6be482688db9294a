package io.reverb.rdma.provider.tcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.reverb.rdma.verbs.Access;
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
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The tcp fabric between two JVMs over loopback: this process against {@link ConformancePeer} in
 * {@code echo} mode (a child JVM that echoes every message and exposes a 16 MiB region for RDMA).
 * Every test ends with the child noticing the disconnect and exiting 0.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpCrossProcessTest
{
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final int SLOTS = 64;
    private static final int SLOT_SIZE = 4096;

    private Process child;
    private VerbsContext context;
    private ProtectionDomain pd;
    private CompletionQueue cq;
    private QueuePair qp;
    private MemoryRegion slots;
    private long peerAddress;
    private int peerRkey;
    private final AtomicInteger disconnects = new AtomicInteger();

    @BeforeEach
    void connectToChild() throws Exception
    {
        // The child only prints READY, not its address, so it is given a port that was free a moment
        // ago; should another process take it meanwhile, the child fails to listen and the test says so.
        final int port;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1")))
        {
            port = probe.getLocalPort();
        }
        final String address = "127.0.0.1:" + port;
        child = new ProcessBuilder(
            Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            "-D" + VerbsConfig.CONNECT_TIMEOUT_MS_PROP + "=60000",
            "-cp", System.getProperty("java.class.path"),
            ConformancePeer.class.getName(), TcpVerbsProvider.NAME, "echo", address)
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
        final BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        assertThat(out.readLine()).as("child listening on " + address).isEqualTo("READY");

        context = new TcpVerbsProvider().open(VerbsConfig.defaults().withConnectTimeoutNanos(TimeUnit.SECONDS.toNanos(60)));
        pd = context.allocPd();
        cq = context.createCq(1024, context.createCompletionChannel());
        slots = pd.allocate(SLOTS * SLOT_SIZE, Access.LOCAL_WRITE);
        qp = context.connect(address, new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq)
            .maxRecvWr(SLOTS).maxSendWr(SLOTS).disconnectHandler(disconnects::incrementAndGet), null);
        final ByteBuffer privateData = qp.remotePrivateData();
        peerAddress = privateData.getLong(0);
        peerRkey = privateData.getInt(8);
        for (int i = 0; i < SLOTS; i++)
        {
            repost(i);
        }
    }

    @AfterEach
    void closeAndAwaitChild() throws Exception
    {
        try
        {
            if (qp != null)
            {
                qp.close();
            }
            // The child exits 0 when its connection goes down.
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).as("child exited").isTrue();
            assertThat(child.exitValue()).as("child exit code").isZero();
        }
        finally
        {
            child.destroyForcibly();
            context.close();
        }
    }

    @Test
    void shouldEchoSendsInOrderAndRdmaTheChildsMemoryAcrossProcesses() throws Exception
    {
        // Echo of every size up to the receive size, with the immediate carried both ways.
        final int window = 16;
        final MemoryRegion send = pd.allocate(window * SLOT_SIZE, Access.LOCAL_WRITE);
        final WorkCompletions wc = new WorkCompletions(32);
        for (final int size : new int[] {0, 1, 64, 1000, SLOT_SIZE})
        {
            fillPattern(send.buffer(), 0, size, size);
            final SendRequest request = new SendRequest().wrId(size).opcode(WrOpcode.SEND_WITH_IMM)
                .immData(size * 3).flags(SendRequest.FLAG_SIGNALED);
            request.setSge(send, 0, size);
            assertThat(qp.postSend(request)).isEqualTo(PostResult.OK);
            boolean sent = false;
            boolean echoed = false;
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
                    assertThat(wc.byteLen(i)).isEqualTo(size);
                    assertThat(wc.immData(i)).isEqualTo(size * 3);
                    final int slot = (int)wc.wrId(i);
                    assertPattern(slots.buffer(), slot * SLOT_SIZE, size, size);
                    repost(slot);
                    echoed = true;
                }
                awaitProgress(n, deadline);
            }
        }

        // Thousands of unsignaled sends, a window in flight, each from its own slot until echoed.
        final int messages = 3_000;
        final SendRequest request = new SendRequest().opcode(WrOpcode.SEND).flags(0);
        int sent = 0;
        int received = 0;
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (received < messages)
        {
            if (sent < messages && sent - received < window)
            {
                final int slot = sent % window;
                send.buffer().putInt(slot * SLOT_SIZE, sent);
                request.wrId(sent).setSge(send, slot * SLOT_SIZE, 4);
                assertThat(qp.postSend(request)).isEqualTo(PostResult.OK);
                sent++;
                continue;
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
            awaitProgress(n, deadline);
        }

        // One-sided access to the child's memory, 1 B .. 16 MiB.
        final MemoryRegion local = pd.allocate(ConformancePeer.ECHO_REGION_SIZE, Access.LOCAL_WRITE);
        for (final int size : new int[] {1, 4097, 1024 * 1024, ConformancePeer.ECHO_REGION_SIZE})
        {
            fillPattern(local.buffer(), 0, size, size);
            rdma(WrOpcode.RDMA_WRITE, local, size, peerRkey, WcStatus.SUCCESS);
            local.buffer().setMemory(0, size, (byte)0);
            rdma(WrOpcode.RDMA_READ, local, size, peerRkey, WcStatus.SUCCESS);
            assertPattern(local.buffer(), 0, size, size);
        }
    }

    @Test
    void shouldFailRdmaWriteWithBadRkeyAcrossProcessesAndDisconnectBothSides() throws Exception
    {
        final MemoryRegion local = pd.allocate(64, Access.LOCAL_WRITE);
        rdma(WrOpcode.RDMA_WRITE, local, 64, peerRkey + 1, WcStatus.REM_ACCESS_ERR);
        assertThat(qp.state()).isEqualTo(QpState.ERROR);
        // Our posted receives are flushed, our handler runs once, and the child sees the disconnect
        // (it exits 0: checked after the test).
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
        assertThat(child.waitFor(30, TimeUnit.SECONDS)).as("child noticed the disconnect").isTrue();
        while (disconnects.get() == 0 && System.nanoTime() - deadline < 0)
        {
            Thread.sleep(1);
        }
        assertThat(disconnects.get()).isEqualTo(1);
    }

    private void rdma(final WrOpcode opcode, final MemoryRegion local, final int size, final int rkey, final WcStatus expected)
    {
        final SendRequest request = new SendRequest().wrId(size).opcode(opcode).flags(SendRequest.FLAG_SIGNALED)
            .remoteAddress(peerAddress).rkey(rkey);
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
                fail("no progress within the deadline");
            }
            Thread.yield();
        }
    }

    private static byte patternByte(final int i, final int seed)
    {
        return (byte)(i * 31 + seed * 7 + (i >>> 11));
    }

    private static void fillPattern(final UnsafeBuffer buffer, final int offset, final int length, final int seed)
    {
        for (int i = 0; i < length; i++)
        {
            buffer.putByte(offset + i, patternByte(i, seed));
        }
    }

    private static void assertPattern(final UnsafeBuffer buffer, final int offset, final int length, final int seed)
    {
        for (int i = 0; i < length; i++)
        {
            if (buffer.getByte(offset + i) != patternByte(i, seed))
            {
                fail("content differs at byte " + i + " of " + length);
            }
        }
    }
}
