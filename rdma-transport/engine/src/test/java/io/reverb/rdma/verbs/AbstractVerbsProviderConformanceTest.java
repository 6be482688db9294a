package io.reverb.rdma.verbs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * The semantics every verbs provider shares, in the pattern of grpc-java's {@code AbstractTransportTest}:
 * one subclass per provider supplies {@link #provider()}, {@link #newAddress()} and, if needed, the
 * configuration, the JVM arguments a child process needs, and a leak check run after every test.
 * A subclass for hardware that may be absent disables itself (e.g. with
 * {@code Assumptions.assumeTrue(provider.isAvailable(), provider.unavailabilityCause())} in a
 * {@code @BeforeAll}).
 *
 * <p>Every test opens two contexts (a "server" and a "client", as two hosts would) and closes them
 * afterwards. Waits are bounded by generous deadlines and never assert timings.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class AbstractVerbsProviderConformanceTest
{
    /**
     * JUnit tag of the tests that need a peer in another process on the same device (by default,
     * {@link #startMortalPeer}): a provider whose device lives in one JVM excludes them unless it gives them a peer of
     * its own (DiSNi's suite over the emulated device does, and runs them).
     */
    public static final String PEER_PROCESS_TAG = "peer-process";

    /** Bound of every wait for an event that must happen (times {@link TestScale#time()} on a slow host). */
    protected static final long TIMEOUT_NANOS = TestScale.nanos(TimeUnit.SECONDS.toNanos(20));
    protected static final int RECV_SIZE = 4096;
    protected static final int SIXTEEN_MIB = 16 * 1024 * 1024;

    private ExecutorService executor;
    private final List<VerbsContext> contexts = new ArrayList<>();
    private final List<Process> children = new ArrayList<>();
    private final Map<Process, BufferedReader> childOutputs = new HashMap<>();
    protected Endpoint server;
    protected Endpoint client;

    /** @return the provider under test. */
    protected abstract VerbsProvider provider();

    /** @return an address to listen on that no other test uses (a name, or host:port). */
    protected abstract String newAddress();

    /**
     * The statuses this provider's device reports for a local protection error (a wrong lkey, an SGE past its region).
     * The verbs specification names LOC_PROT_ERR, as mlx5 reports; Soft-RoCE (rxe, Linux 6.1) reports LOC_QP_OP_ERR.
     * The engine treats every error status but WR_FLUSH_ERR and RNR_RETRY_EXC_ERR alike (the connection fails), so a
     * provider may widen this set for its device, never to SUCCESS or WR_FLUSH_ERR.
     *
     * @return LOC_PROT_ERR unless a subclass knows its device reports otherwise.
     */
    protected Set<WcStatus> localProtectionErrors()
    {
        return EnumSet.of(WcStatus.LOC_PROT_ERR);
    }

    /**
     * @return the statuses this provider's device reports at the receiver for a SEND longer than its posted receive:
     *         LOC_LEN_ERR by the specification and on mlx5 (see {@link #localProtectionErrors()} for Soft-RoCE).
     */
    protected Set<WcStatus> localLengthErrors()
    {
        return EnumSet.of(WcStatus.LOC_LEN_ERR);
    }

    /**
     * @return whether a receive posted to a QP already in ERROR completes (flushed). It does by the specification and
     *         on mlx5; rdma-core's Soft-RoCE provider writes the receive into the queue without waking the kernel's
     *         responder, which flushes nothing more once the QP is in ERROR. The engine never waits for such a receive.
     */
    protected boolean flushesReceivesPostedInError()
    {
        return true;
    }

    /** @return configuration for every context the suite opens (here and in child processes via system properties). */
    protected VerbsConfig config()
    {
        return VerbsConfig.defaults();
    }

    /** @return extra JVM arguments for child processes (e.g. {@code -D} settings matching {@link #config()}). */
    protected List<String> childJvmArguments()
    {
        return List.of();
    }

    /** Called after each test, once every context is closed: assert the provider left nothing behind. */
    protected void assertNothingLeaked() throws Exception
    {
    }

    @BeforeAll
    void startExecutor()
    {
        executor = Executors.newCachedThreadPool(r ->
        {
            final Thread thread = new Thread(r, "conformance-helper");
            thread.setDaemon(true);
            return thread;
        });
    }

    @AfterAll
    void stopExecutor()
    {
        executor.shutdownNow();
    }

    @BeforeEach
    void openContexts() throws IOException
    {
        server = new Endpoint(open(config()));
        client = new Endpoint(open(config()));
    }

    @AfterEach
    void closeEverything() throws Exception
    {
        for (final Process child : children)
        {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
        children.clear();
        childOutputs.clear();
        for (final VerbsContext context : contexts)
        {
            context.close();
        }
        contexts.clear();
        assertNothingLeaked();
    }

    /** Opens a context that is closed after the test. */
    protected VerbsContext open(final VerbsConfig config) throws IOException
    {
        final VerbsContext context = provider().open(config);
        contexts.add(context);
        return context;
    }

    // ------------------------------------------------------------------------------------------------
    // Registration and keys
    // ------------------------------------------------------------------------------------------------

    @Test
    void shouldRegisterZeroFilledMemoryWithRequestedLengthAndAccess() throws Exception
    {
        final MemoryRegion a = server.pd.allocate(4096, Access.LOCAL_WRITE);
        final MemoryRegion b = server.pd.allocate(100, Access.ALL);

        assertThat(a.length()).isEqualTo(4096);
        assertThat(a.access()).isEqualTo(Access.LOCAL_WRITE);
        assertThat(b.access()).isEqualTo(Access.ALL);
        assertThat(a.pd()).isSameAs(server.pd);
        assertThat(a.isRegistered()).isTrue();
        assertThat(a.rkey()).isNotEqualTo(b.rkey());
        assertThat(a.lkey()).isNotEqualTo(b.lkey());
        assertThat(a.byteBuffer().capacity()).isEqualTo(4096);
        assertThat(a.buffer().capacity()).isEqualTo(4096);
        for (int i = 0; i < a.length(); i++)
        {
            assertThat(a.buffer().getByte(i)).isZero();
        }

        // Both views show the same memory.
        a.buffer().putByte(8, (byte)0x5A);
        assertThat(a.byteBuffer().get(8)).isEqualTo((byte)0x5A);
        a.byteBuffer().put(9, (byte)0x6B);
        assertThat(a.buffer().getByte(9)).isEqualTo((byte)0x6B);

        a.close();
        assertThat(a.isRegistered()).isFalse();
        a.close();
        assertThat(b.isRegistered()).isTrue();
    }

    @Test
    void shouldRefuseRegistrationOfNonPositiveLength()
    {
        assertThatThrownBy(() -> server.pd.allocate(0, Access.LOCAL_WRITE)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shouldDeregisterEveryRegionAndRefuseAllocationOnceThePdIsClosed() throws Exception
    {
        final ProtectionDomain pd = server.context.allocPd();
        final MemoryRegion a = pd.allocate(4096, Access.LOCAL_WRITE);
        final MemoryRegion b = pd.allocate(100, Access.ALL);
        pd.close();
        assertThat(a.isRegistered()).isFalse();
        assertThat(b.isRegistered()).isFalse();
        assertThatThrownBy(() -> pd.allocate(64, Access.LOCAL_WRITE)).isInstanceOf(IOException.class)
            .hasMessageContaining("closed");
        pd.close(); // idempotent
    }

    @Test
    void shouldFailSendWithLocalProtectionErrorWhenLkeyIsWrong() throws Exception
    {
        connect();
        final MemoryRegion recv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion send = client.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        postRecv(server.qp, recv, 0, RECV_SIZE, 1);

        final SendRequest request = new SendRequest().wrId(7).opcode(WrOpcode.SEND).flags(SendRequest.FLAG_SIGNALED);
        request.setSge(send.address(), 16, send.lkey() ^ 0x5A5A);
        assertThat(client.qp.postSend(request)).isEqualTo(PostResult.OK);

        final Completion completion = awaitCompletions(client.sendCq, 1).get(0);
        assertThat(completion.wrId).isEqualTo(7);
        assertThat(completion.status).isIn(localProtectionErrors());
        assertThat(client.qp.state()).isEqualTo(QpState.ERROR);
    }

    @Test
    void shouldFailSendWhenSgeExceedsItsRegion() throws Exception
    {
        connect();
        final MemoryRegion recv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion send = client.pd.allocate(64, Access.LOCAL_WRITE);
        postRecv(server.qp, recv, 0, RECV_SIZE, 1);

        postSend(client.qp, WrOpcode.SEND, send, 32, 64, 9, SendRequest.FLAG_SIGNALED, 0, 0, 0);

        final Completion completion = awaitCompletions(client.sendCq, 1).get(0);
        assertThat(completion.status).isIn(localProtectionErrors());
    }

    // ------------------------------------------------------------------------------------------------
    // SEND / RECV
    // ------------------------------------------------------------------------------------------------

    @Test
    void shouldDeliverSendsOfZeroBytesUpToTheReceiveSize() throws Exception
    {
        connect();
        final MemoryRegion recv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion send = client.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final int[] sizes = {0, 1, 2, 63, 64, 65, 1000, RECV_SIZE - 1, RECV_SIZE};
        long wrId = 100;
        for (final int size : sizes)
        {
            fill(recv.buffer(), 0, RECV_SIZE, (byte)0);
            fillPattern(send.buffer(), 0, size, size);
            postRecv(server.qp, recv, 0, RECV_SIZE, wrId);
            postSend(client.qp, WrOpcode.SEND, send, 0, size, wrId + 1, SendRequest.FLAG_SIGNALED, 0, 0, 0);

            final Completion received = awaitCompletions(server.recvCq, 1).get(0);
            assertThat(received.status).as("size %d", size).isEqualTo(WcStatus.SUCCESS);
            assertThat(received.opcode).isEqualTo(WcOpcode.RECV);
            assertThat(received.wrId).isEqualTo(wrId);
            assertThat(received.byteLen).isEqualTo(size);
            assertThat(received.hasImm).isFalse();
            assertThat(received.qpNum).isEqualTo(server.qp.qpNum());
            assertPattern(recv.buffer(), 0, size, size);
            if (size < RECV_SIZE)
            {
                assertThat(recv.buffer().getByte(size)).as("byte after the message").isZero();
            }

            final Completion sent = awaitCompletions(client.sendCq, 1).get(0);
            assertThat(sent.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(sent.opcode).isEqualTo(WcOpcode.SEND);
            assertThat(sent.wrId).isEqualTo(wrId + 1);
            assertThat(sent.qpNum).isEqualTo(client.qp.qpNum());
            wrId += 2;
        }
    }

    @Test
    void shouldScatterAndGatherAcrossSeveralSges() throws Exception
    {
        connect();
        final MemoryRegion recv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion send = client.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        fillPattern(send.buffer(), 0, 300, 3);

        final RecvRequest receive = new RecvRequest().wrId(1);
        receive.setSge(recv.address() + 1000, 100, recv.lkey());
        receive.addSge(recv.address(), 250, recv.lkey());
        assertThat(server.qp.postRecv(receive)).isEqualTo(PostResult.OK);

        final SendRequest request = new SendRequest().wrId(2).opcode(WrOpcode.SEND).flags(SendRequest.FLAG_SIGNALED);
        request.setSge(send.address(), 120, send.lkey());
        request.addSge(send.address() + 120, 180, send.lkey());
        assertThat(client.qp.postSend(request)).isEqualTo(PostResult.OK);

        final Completion received = awaitCompletions(server.recvCq, 1).get(0);
        assertThat(received.status).isEqualTo(WcStatus.SUCCESS);
        assertThat(received.byteLen).isEqualTo(300);
        for (int i = 0; i < 300; i++)
        {
            final int at = i < 100 ? 1000 + i : i - 100;
            assertThat(recv.buffer().getByte(at)).as("byte %d", i).isEqualTo(patternByte(i, 3));
        }
    }

    @Test
    void shouldCarryTheImmediateOfSendWithImm() throws Exception
    {
        connect();
        final MemoryRegion recv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion send = client.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        postRecv(server.qp, recv, 0, RECV_SIZE, 5);
        postSend(client.qp, WrOpcode.SEND_WITH_IMM, send, 0, 10, 6, SendRequest.FLAG_SIGNALED, 0xDEADBEEF, 0, 0);

        final Completion received = awaitCompletions(server.recvCq, 1).get(0);
        assertThat(received.status).isEqualTo(WcStatus.SUCCESS);
        assertThat(received.opcode).isEqualTo(WcOpcode.RECV);
        assertThat(received.hasImm).isTrue();
        assertThat(received.imm).isEqualTo(0xDEADBEEF);
        assertThat(received.byteLen).isEqualTo(10);
    }

    @Test
    void shouldProduceNoSendCompletionForSuccessfulUnsignaledSend() throws Exception
    {
        connect();
        final MemoryRegion recv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion send = client.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        postRecv(server.qp, recv, 0, RECV_SIZE, 1);
        postRecv(server.qp, recv, 0, RECV_SIZE, 2);
        postSend(client.qp, WrOpcode.SEND, send, 0, 8, 10, 0, 0, 0, 0);
        postSend(client.qp, WrOpcode.SEND, send, 0, 8, 11, SendRequest.FLAG_SIGNALED, 0, 0, 0);

        assertThat(awaitCompletions(server.recvCq, 2)).extracting(c -> c.wrId).containsExactly(1L, 2L);
        final List<Completion> sent = awaitCompletions(client.sendCq, 1);
        assertThat(sent.get(0).wrId).as("only the signaled send completes").isEqualTo(11);
        assertThat(pollAll(client.sendCq)).isEmpty();
    }

    @Test
    void shouldFailSendLargerThanThePostedReceiveWithLocalLengthError() throws Exception
    {
        connect();
        final MemoryRegion recv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion send = client.pd.allocate(RECV_SIZE * 2, Access.LOCAL_WRITE);
        postRecv(server.qp, recv, 0, 100, 1);
        postRecv(server.qp, recv, 100, 100, 2);
        postSend(client.qp, WrOpcode.SEND, send, 0, 101, 3, SendRequest.FLAG_SIGNALED, 0, 0, 0);

        final List<Completion> received = awaitCompletions(server.recvCq, 2);
        assertThat(received.get(0).wrId).isEqualTo(1);
        assertThat(received.get(0).status).isIn(localLengthErrors());
        assertThat(received.get(1).wrId).isEqualTo(2);
        assertThat(received.get(1).status).as("the rest is flushed").isEqualTo(WcStatus.WR_FLUSH_ERR);

        final Completion sent = awaitCompletions(client.sendCq, 1).get(0);
        assertThat(sent.wrId).isEqualTo(3);
        assertThat(sent.status).isNotEqualTo(WcStatus.SUCCESS);
        assertThat(client.qp.state()).isEqualTo(QpState.ERROR);
        awaitState(server.qp, QpState.ERROR);
    }

    /** Outstanding SENDs the in-order test allows: below the QPs' maxSendWr (256, see connect). */
    private static final int SEND_QUEUE_BOUND = 128;

    @Test
    void shouldDeliverThousandsOfSendsInOrder() throws Exception
    {
        connect();
        final int slots = 64;
        // Fewer on a slow host (TestScale), but enough for every slot and the send queue to wrap several times.
        final int messages = Math.max(4 * SEND_QUEUE_BOUND, TestScale.rounds(20_000));
        final MemoryRegion recv = server.pd.allocate(slots * 64, Access.LOCAL_WRITE);
        // One send slot per credit: a provider may read a SEND's memory after postSend returns (a NIC
        // does), so a slot is rewritten only once the message it held has been received.
        final MemoryRegion send = client.pd.allocate(slots * 64, Access.LOCAL_WRITE);
        for (int i = 0; i < slots; i++)
        {
            postRecv(server.qp, recv, i * 64, 64, i);
        }
        final WorkCompletions wc = new WorkCompletions(32);
        int credits = slots;
        int sent = 0;
        int retired = 0;
        int received = 0;
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        final RecvRequest repost = new RecvRequest();
        final SendRequest request = new SendRequest().opcode(WrOpcode.SEND);
        while (received < messages)
        {
            // Receive credits are not enough: as with ibverbs, unsignaled SENDs keep their send-queue
            // entries until a later signaled completion is polled (a NIC frees them only once the peer
            // acknowledged), so the send queue bounds what may be outstanding too.
            if (credits > 0 && sent < messages && sent - retired < SEND_QUEUE_BOUND)
            {
                final int sendSlot = sent % slots;
                send.buffer().putInt(sendSlot * 64, sent);
                request.wrId(sent).flags(sent % 16 == 15 ? SendRequest.FLAG_SIGNALED : 0);
                request.setSge(send, sendSlot * 64, 4);
                assertThat(client.qp.postSend(request)).isEqualTo(PostResult.OK);
                sent++;
                credits--;
            }
            while (client.sendCq.poll(wc) > 0)
            {
                for (int i = 0; i < wc.count(); i++)
                {
                    assertThat(wc.status(i)).isEqualTo(WcStatus.SUCCESS);
                    retired = (int)wc.wrId(i) + 1; // a signaled completion retires every earlier request
                }
            }
            final int n = server.recvCq.poll(wc);
            for (int i = 0; i < n; i++)
            {
                assertThat(wc.status(i)).isEqualTo(WcStatus.SUCCESS);
                final int slot = (int)wc.wrId(i);
                assertThat(recv.buffer().getInt(slot * 64)).as("message order").isEqualTo(received);
                assertThat(wc.byteLen(i)).isEqualTo(4);
                received++;
                repost.wrId(slot).setSge(recv, slot * 64, 64);
                assertThat(server.qp.postRecv(repost)).isEqualTo(PostResult.OK);
                credits++;
            }
            if (System.nanoTime() - deadline > 0)
            {
                fail("only " + received + " of " + messages + " messages arrived");
            }
            if (n == 0)
            {
                Thread.yield();
            }
        }
        assertThat(received).isEqualTo(messages);
    }

    @Test
    void shouldFailSendWithRnrRetryExceededWhenNoReceiveIsPosted() throws Exception
    {
        client = new Endpoint(open(config().withRnrRetryNanos(TimeUnit.MILLISECONDS.toNanos(20))));
        connect();
        final MemoryRegion send = client.pd.allocate(64, Access.LOCAL_WRITE);
        postSend(client.qp, WrOpcode.SEND, send, 0, 8, 1, SendRequest.FLAG_SIGNALED, 0, 0, 0);

        final Completion sent = awaitCompletions(client.sendCq, 1).get(0);
        assertThat(sent.status).isEqualTo(WcStatus.RNR_RETRY_EXC_ERR);
        assertThat(client.qp.state()).isEqualTo(QpState.ERROR);
    }

    // ------------------------------------------------------------------------------------------------
    // RDMA WRITE / READ
    // ------------------------------------------------------------------------------------------------

    @Test
    void shouldRdmaWriteWriteWithImmAndReadFromOneByteToSixteenMiB() throws Exception
    {
        connect();
        final MemoryRegion target = server.pd.allocate(SIXTEEN_MIB,
            Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        final MemoryRegion local = client.pd.allocate(SIXTEEN_MIB, Access.LOCAL_WRITE);
        final MemoryRegion notify = server.pd.allocate(64, Access.LOCAL_WRITE);
        final int[] sizes = {1, 7, 4096, 65_537, 1024 * 1024, SIXTEEN_MIB};
        long wrId = 1;
        for (final int size : sizes)
        {
            final int offset = size == SIXTEEN_MIB ? 0 : 3;

            // WRITE
            fillPattern(local.buffer(), 0, size, size);
            postSend(client.qp, WrOpcode.RDMA_WRITE, local, 0, size, wrId, SendRequest.FLAG_SIGNALED, 0,
                target.address() + offset, target.rkey());
            Completion done = awaitCompletions(client.sendCq, 1).get(0);
            assertThat(done.status).as("write %d", size).isEqualTo(WcStatus.SUCCESS);
            assertThat(done.opcode).isEqualTo(WcOpcode.RDMA_WRITE);
            assertThat(done.wrId).isEqualTo(wrId++);
            assertPattern(target.buffer(), offset, size, size);

            // READ back into a cleared buffer
            fill(local.buffer(), 0, size, (byte)0);
            postSend(client.qp, WrOpcode.RDMA_READ, local, 0, size, wrId, SendRequest.FLAG_SIGNALED, 0,
                target.address() + offset, target.rkey());
            done = awaitCompletions(client.sendCq, 1).get(0);
            assertThat(done.status).as("read %d", size).isEqualTo(WcStatus.SUCCESS);
            assertThat(done.opcode).isEqualTo(WcOpcode.RDMA_READ);
            assertThat(done.byteLen).isEqualTo(size);
            assertThat(done.wrId).isEqualTo(wrId++);
            assertPattern(local.buffer(), 0, size, size);

            // WRITE_WITH_IMM: data placed, a receive consumed, the immediate delivered
            fillPattern(local.buffer(), 0, size, size + 1);
            postRecv(server.qp, notify, 0, 64, 1000 + size);
            postSend(client.qp, WrOpcode.RDMA_WRITE_WITH_IMM, local, 0, size, wrId, SendRequest.FLAG_SIGNALED, size,
                target.address() + offset, target.rkey());
            done = awaitCompletions(client.sendCq, 1).get(0);
            assertThat(done.status).as("write with imm %d", size).isEqualTo(WcStatus.SUCCESS);
            assertThat(done.opcode).isEqualTo(WcOpcode.RDMA_WRITE);
            wrId++;
            final Completion received = awaitCompletions(server.recvCq, 1).get(0);
            assertThat(received.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(received.opcode).isEqualTo(WcOpcode.RECV_RDMA_WITH_IMM);
            assertThat(received.wrId).isEqualTo(1000 + size);
            assertThat(received.hasImm).isTrue();
            assertThat(received.imm).isEqualTo(size);
            assertThat(received.byteLen).isEqualTo(size);
            assertPattern(target.buffer(), offset, size, size + 1);
        }
    }

    @Test
    void shouldDeliverZeroLengthRdmaWriteWithImmWithoutCheckingTheRkey() throws Exception
    {
        connect();
        final MemoryRegion notify = server.pd.allocate(64, Access.LOCAL_WRITE);
        postRecv(server.qp, notify, 0, 64, 31);
        final SendRequest request = new SendRequest().wrId(32).opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
            .flags(SendRequest.FLAG_SIGNALED).immData(0x1234);
        assertThat(client.qp.postSend(request)).isEqualTo(PostResult.OK);

        assertThat(awaitCompletions(client.sendCq, 1).get(0).status).isEqualTo(WcStatus.SUCCESS);
        final Completion received = awaitCompletions(server.recvCq, 1).get(0);
        assertThat(received.status).isEqualTo(WcStatus.SUCCESS);
        assertThat(received.opcode).isEqualTo(WcOpcode.RECV_RDMA_WITH_IMM);
        assertThat(received.imm).isEqualTo(0x1234);
        assertThat(received.byteLen).isZero();
    }

    @Test
    void shouldFailRdmaWriteWithBadRkeyAndLeaveTargetUntouched() throws Exception
    {
        connect();
        final MemoryRegion target = server.pd.allocate(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        final MemoryRegion local = client.pd.allocate(4096, Access.LOCAL_WRITE);
        fillPattern(local.buffer(), 0, 4096, 1);
        postSend(client.qp, WrOpcode.RDMA_WRITE, local, 0, 16, 1, SendRequest.FLAG_SIGNALED, 0,
            target.address(), target.rkey() ^ 0x40);
        assertRemoteAccessErrorAndUntouched(target);
    }

    @Test
    void shouldFailRdmaWriteOutOfBoundsAndLeaveTargetUntouched() throws Exception
    {
        connect();
        final MemoryRegion target = server.pd.allocate(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        final MemoryRegion local = client.pd.allocate(8192, Access.LOCAL_WRITE);
        fillPattern(local.buffer(), 0, 8192, 1);
        postSend(client.qp, WrOpcode.RDMA_WRITE, local, 0, 100, 1, SendRequest.FLAG_SIGNALED, 0,
            target.address() + 4000, target.rkey());
        assertRemoteAccessErrorAndUntouched(target);
    }

    @Test
    void shouldFailRdmaWriteWithoutRemoteWritePermissionAndLeaveTargetUntouched() throws Exception
    {
        connect();
        final MemoryRegion target = server.pd.allocate(4096, Access.LOCAL_WRITE | Access.REMOTE_READ);
        final MemoryRegion local = client.pd.allocate(4096, Access.LOCAL_WRITE);
        fillPattern(local.buffer(), 0, 4096, 1);
        postSend(client.qp, WrOpcode.RDMA_WRITE, local, 0, 16, 1, SendRequest.FLAG_SIGNALED, 0,
            target.address(), target.rkey());
        assertRemoteAccessErrorAndUntouched(target);
    }

    @Test
    void shouldFailRdmaReadWithoutRemoteReadPermission() throws Exception
    {
        connect();
        final MemoryRegion target = server.pd.allocate(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        final MemoryRegion local = client.pd.allocate(4096, Access.LOCAL_WRITE);
        postSend(client.qp, WrOpcode.RDMA_READ, local, 0, 16, 1, SendRequest.FLAG_SIGNALED, 0,
            target.address(), target.rkey());
        final Completion done = awaitCompletions(client.sendCq, 1).get(0);
        assertThat(done.status).isEqualTo(WcStatus.REM_ACCESS_ERR);
    }

    @Test
    void shouldFailRdmaWriteToDeregisteredMemory() throws Exception
    {
        connect();
        final MemoryRegion target = server.pd.allocate(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        final MemoryRegion local = client.pd.allocate(4096, Access.LOCAL_WRITE);
        postSend(client.qp, WrOpcode.RDMA_WRITE, local, 0, 16, 1, SendRequest.FLAG_SIGNALED, 0,
            target.address(), target.rkey());
        assertThat(awaitCompletions(client.sendCq, 1).get(0).status).isEqualTo(WcStatus.SUCCESS);

        target.close();
        postSend(client.qp, WrOpcode.RDMA_WRITE, local, 0, 16, 2, SendRequest.FLAG_SIGNALED, 0,
            target.address(), target.rkey());
        assertThat(awaitCompletions(client.sendCq, 1).get(0).status).isEqualTo(WcStatus.REM_ACCESS_ERR);
    }

    @Test
    void shouldMapPeerMemoryForDirectWritesOnlyWithinAWritableRegionOfThePeer() throws Exception
    {
        connect();
        final MemoryRegion target = server.pd.allocate(8192, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        if (!client.qp.canMapRemote())
        {
            // No capability (a NIC copies instead): nothing is mapped, whatever the values.
            assertThat(client.qp.mapRemote(target.address(), target.rkey(), 16)).isNull();
            return;
        }
        final MemoryRegion readOnly = server.pd.allocate(4096, Access.LOCAL_WRITE | Access.REMOTE_READ);
        final MemoryRegion otherPd = server.context.allocPd().allocate(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        // Every value a peer could send is checked: key, the address's region, bounds, access, protection domain.
        assertThat(client.qp.mapRemote(target.address(), target.rkey() ^ 0x40, 16)).as("wrong key tag").isNull();
        assertThat(client.qp.mapRemote(target.address(), target.lkey(), 16)).as("local key").isNull();
        assertThat(client.qp.mapRemote(readOnly.address(), target.rkey(), 16)).as("address of another region").isNull();
        assertThat(client.qp.mapRemote(target.address() + 8000, target.rkey(), 200)).as("past the end").isNull();
        assertThat(client.qp.mapRemote(target.address() - 1, target.rkey(), 16)).as("before the start").isNull();
        assertThat(client.qp.mapRemote(target.address(), target.rkey(), 0)).as("empty").isNull();
        assertThat(client.qp.mapRemote(target.address(), target.rkey(), -1)).as("negative").isNull();
        assertThat(client.qp.mapRemote(readOnly.address(), readOnly.rkey(), 16)).as("no REMOTE_WRITE").isNull();
        assertThat(client.qp.mapRemote(otherPd.address(), otherPd.rkey(), 16)).as("another PD").isNull();

        try (RemoteMapping mapping = client.qp.mapRemote(target.address() + 4096, target.rkey(), 4096))
        {
            assertThat(mapping).isNotNull();
            assertThat(mapping.length()).isEqualTo(4096);
            assertThat(mapping.byteBuffer().capacity()).isEqualTo(4096);
            fillPattern(mapping.buffer(), 0, 4096, 9);
            // The peer sees the bytes once a later request of this QP completed there.
            final MemoryRegion notify = server.pd.allocate(64, Access.LOCAL_WRITE);
            postRecv(server.qp, notify, 0, 64, 41);
            assertThat(client.qp.postSend(new SendRequest().wrId(42).opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                .flags(SendRequest.FLAG_SIGNALED).immData(7))).isEqualTo(PostResult.OK);
            assertThat(awaitCompletions(server.recvCq, 1).get(0).imm).isEqualTo(7);
            assertPattern(target.buffer(), 4096, 4096, 9);
            for (int i = 0; i < 4096; i++)
            {
                assertThat(target.buffer().getByte(i)).as("byte %d, before the mapped range", i).isZero();
            }
            // The peer deregisters the region: writes through the mapping stay harmless (no crash), and no new
            // mapping is handed out.
            target.close();
            mapping.buffer().putLong(0, 1L);
            assertThat(client.qp.mapRemote(target.address(), target.rkey(), 16)).isNull();
        }
    }

    @Test
    void shouldKeepMemoryOfTwoConnectionsInOneContextApart() throws Exception
    {
        // Two connections into the same server context, each with its own PD.
        connect();
        final Endpoint otherServer = new Endpoint(server.context);
        final Endpoint otherClient = new Endpoint(client.context);
        connect(otherServer, otherClient);

        final MemoryRegion otherTarget = otherServer.pd.allocate(4096, Access.ALL);
        final MemoryRegion otherRecv = otherServer.pd.allocate(4096, Access.LOCAL_WRITE);
        postRecv(otherServer.qp, otherRecv, 0, 4096, 77);
        final MemoryRegion local = client.pd.allocate(4096, Access.LOCAL_WRITE);
        fillPattern(local.buffer(), 0, 4096, 9);

        // The other connection's memory is valid through the other QP...
        postSend(otherClient.qp, WrOpcode.RDMA_WRITE, otherClient.pd.allocate(16, Access.LOCAL_WRITE), 0, 16, 1,
            SendRequest.FLAG_SIGNALED, 0, otherTarget.address() + 100, otherTarget.rkey());
        assertThat(awaitCompletions(otherClient.sendCq, 1).get(0).status).isEqualTo(WcStatus.SUCCESS);

        // ...but not through ours, even with its exact address and rkey.
        postSend(client.qp, WrOpcode.RDMA_WRITE, local, 0, 16, 2, SendRequest.FLAG_SIGNALED, 0,
            otherTarget.address(), otherTarget.rkey());
        assertThat(awaitCompletions(client.sendCq, 1).get(0).status).isEqualTo(WcStatus.REM_ACCESS_ERR);
        for (int i = 0; i < 16; i++)
        {
            assertThat(otherTarget.buffer().getByte(i)).isZero();
        }
        postSend(client.qp, WrOpcode.RDMA_READ, local, 0, 16, 3, SendRequest.FLAG_SIGNALED, 0,
            otherTarget.address(), otherTarget.rkey());
        assertThat(awaitCompletions(client.sendCq, 1).get(0).status).isEqualTo(WcStatus.WR_FLUSH_ERR);

        // Our (now failed) connection never consumed the other connection's receive, which still works.
        assertThat(pollAll(otherServer.recvCq)).isEmpty();
        final MemoryRegion otherSend = otherClient.pd.allocate(64, Access.LOCAL_WRITE);
        postSend(otherClient.qp, WrOpcode.SEND, otherSend, 0, 5, 4, SendRequest.FLAG_SIGNALED, 0, 0, 0);
        final Completion received = awaitCompletions(otherServer.recvCq, 1).get(0);
        assertThat(received.wrId).isEqualTo(77);
        assertThat(received.status).isEqualTo(WcStatus.SUCCESS);
    }

    @Test
    void shouldFailReadThroughQpOfAnotherPdWithRemoteAccessError() throws Exception
    {
        connect();
        final Endpoint otherServer = new Endpoint(server.context);
        final Endpoint otherClient = new Endpoint(client.context);
        connect(otherServer, otherClient);
        final MemoryRegion secret = otherServer.pd.allocate(4096, Access.ALL);
        fillPattern(secret.buffer(), 0, 4096, 42);
        final MemoryRegion local = client.pd.allocate(4096, Access.LOCAL_WRITE);
        postSend(client.qp, WrOpcode.RDMA_READ, local, 0, 4096, 1, SendRequest.FLAG_SIGNALED, 0,
            secret.address(), secret.rkey());
        assertThat(awaitCompletions(client.sendCq, 1).get(0).status).isEqualTo(WcStatus.REM_ACCESS_ERR);
        for (int i = 0; i < 4096; i++)
        {
            assertThat(local.buffer().getByte(i)).isZero();
        }
    }

    // ------------------------------------------------------------------------------------------------
    // Completion channel
    // ------------------------------------------------------------------------------------------------

    @Test
    void shouldWakeAwaitWhenAnArmedCqGetsACompletion() throws Exception
    {
        connect();
        final MemoryRegion recv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion send = client.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        postRecv(server.qp, recv, 0, RECV_SIZE, 1);
        server.recvCq.requestNotify(false);
        assertThat(pollAll(server.recvCq)).isEmpty();

        final Future<Integer> events = executor.submit(() -> server.channel.await(TIMEOUT_NANOS));
        postSend(client.qp, WrOpcode.SEND, send, 0, 8, 2, 0, 0, 0, 0);
        assertThat(events.get(TIMEOUT_NANOS, TimeUnit.NANOSECONDS)).isEqualTo(1);
        assertThat(awaitCompletions(server.recvCq, 1).get(0).wrId).isEqualTo(1);
    }

    @Test
    void shouldRaiseOneEventPerArmingOnly() throws Exception
    {
        connect();
        final MemoryRegion recv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion send = client.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        for (int i = 0; i < 3; i++)
        {
            postRecv(server.qp, recv, 0, RECV_SIZE, i);
        }
        server.recvCq.requestNotify(false);
        for (int i = 0; i < 3; i++)
        {
            postSend(client.qp, WrOpcode.SEND, send, 0, 8, i, 0, 0, 0, 0);
        }
        assertThat(server.channel.await(TIMEOUT_NANOS)).isEqualTo(1);
        assertThat(awaitCompletions(server.recvCq, 3)).hasSize(3);
        // Disarmed after the first completion: no further event is pending.
        assertThat(server.channel.await(TimeUnit.MILLISECONDS.toNanos(50))).isZero();
    }

    @Test
    void shouldRaiseEventOnlyForSolicitedCompletionsWhenArmedForSolicitedOnly() throws Exception
    {
        connect();
        final MemoryRegion recv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion send = client.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        postRecv(server.qp, recv, 0, RECV_SIZE, 1);
        postRecv(server.qp, recv, 0, RECV_SIZE, 2);
        server.recvCq.requestNotify(true);

        postSend(client.qp, WrOpcode.SEND, send, 0, 8, 3, 0, 0, 0, 0);
        assertThat(awaitCompletions(server.recvCq, 1).get(0).wrId).isEqualTo(1);
        assertThat(server.channel.await(0)).as("an unsolicited SEND raises no event").isZero();

        postSend(client.qp, WrOpcode.SEND, send, 0, 8, 4, SendRequest.FLAG_SOLICITED, 0, 0, 0);
        assertThat(server.channel.await(TIMEOUT_NANOS)).isEqualTo(1);
        assertThat(awaitCompletions(server.recvCq, 1).get(0).wrId).isEqualTo(2);
    }

    @Test
    void shouldTimeOutAwaitWithoutCompletion() throws Exception
    {
        connect();
        server.recvCq.requestNotify(false);
        assertThat(server.channel.await(TimeUnit.MILLISECONDS.toNanos(30))).isZero();
        assertThat(server.channel.await(0)).isZero();
    }

    @Test
    void shouldReturnFromAwaitWhenWokenUpFromAnotherThread() throws Exception
    {
        final Future<Integer> events = executor.submit(() -> server.channel.await(TIMEOUT_NANOS));
        // Wake-ups before the await starts count too, so no sleep is needed to avoid a race.
        server.channel.wakeup();
        assertThat(events.get(TIMEOUT_NANOS, TimeUnit.NANOSECONDS)).isZero();
    }

    @Test
    void shouldSignalChannelForLocalSendCompletion() throws Exception
    {
        connect();
        final MemoryRegion recv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion send = client.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        postRecv(server.qp, recv, 0, RECV_SIZE, 1);
        client.sendCq.requestNotify(false);
        postSend(client.qp, WrOpcode.SEND, send, 0, 8, 2, SendRequest.FLAG_SIGNALED, 0, 0, 0);
        assertThat(client.channel.await(TIMEOUT_NANOS)).isEqualTo(1);
        assertThat(awaitCompletions(client.sendCq, 1).get(0).wrId).isEqualTo(2);
    }

    // ------------------------------------------------------------------------------------------------
    // Connection management
    // ------------------------------------------------------------------------------------------------

    @Test
    void shouldExchangePrivateDataOnConnectAndAccept() throws Exception
    {
        final byte[] request = bytes(VerbsContext.MAX_PRIVATE_DATA, 1);
        final byte[] reply = bytes(VerbsContext.MAX_PRIVATE_DATA, 2);
        final String address = newAddress();
        try (ConnectionListener listener = server.context.listen(address, 4))
        {
            final Future<QueuePair> accepted = executor.submit(() ->
            {
                final ConnectionRequest incoming = listener.accept(TIMEOUT_NANOS);
                assertThat(incoming).isNotNull();
                assertThat(toArray(incoming.privateData())).isEqualTo(request);
                return incoming.accept(server.attributes(), ByteBuffer.wrap(reply));
            });
            client.qp = client.context.connect(listener.localAddress(), client.attributes(), ByteBuffer.wrap(request));
            server.qp = accepted.get(TIMEOUT_NANOS, TimeUnit.NANOSECONDS);
        }
        assertThat(toArray(client.qp.remotePrivateData())).isEqualTo(reply);
        assertThat(toArray(server.qp.remotePrivateData())).isEqualTo(request);
        assertThat(client.qp.state()).isEqualTo(QpState.RTS);
        assertThat(server.qp.state()).isEqualTo(QpState.RTS);
    }

    @Test
    void shouldThrowRejectionWithPrivateDataWhenPeerRejects() throws Exception
    {
        final byte[] reason = bytes(VerbsContext.MAX_PRIVATE_DATA, 3);
        final String address = newAddress();
        try (ConnectionListener listener = server.context.listen(address, 4))
        {
            final Future<?> rejected = executor.submit(() ->
            {
                listener.accept(TIMEOUT_NANOS).reject(ByteBuffer.wrap(reason));
                return null;
            });
            assertThatThrownBy(() -> client.context.connect(listener.localAddress(), client.attributes(), null))
                .isInstanceOfSatisfying(ConnectionRejectedException.class,
                    ex -> assertThat(toArray(ex.privateData())).isEqualTo(reason));
            rejected.get(TIMEOUT_NANOS, TimeUnit.NANOSECONDS);
        }
    }

    @Test
    void shouldFailConnectWhenNobodyListens()
    {
        assertThatThrownBy(() -> client.context.connect(newAddress(), client.attributes(), null))
            .isInstanceOf(IOException.class);
    }

    @Test
    void shouldReturnNullFromAcceptOnTimeout() throws Exception
    {
        try (ConnectionListener listener = server.context.listen(newAddress(), 4))
        {
            assertThat(listener.accept(TimeUnit.MILLISECONDS.toNanos(20))).isNull();
        }
    }

    @Test
    void shouldRefuseAcceptOnceTheListenerIsClosed() throws Exception
    {
        final ConnectionListener listener = server.context.listen(newAddress(), 4);
        listener.close();
        assertThatThrownBy(() -> listener.accept(TimeUnit.MILLISECONDS.toNanos(20))).isInstanceOf(IOException.class)
            .hasMessageContaining("closed");
        listener.close(); // idempotent
    }

    @Test
    void shouldFlushOutstandingReceivesWhenPeerDisconnects() throws Exception
    {
        connect();
        final MemoryRegion recv = client.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        for (int i = 0; i < 3; i++)
        {
            postRecv(client.qp, recv, 0, RECV_SIZE, 10 + i);
        }
        server.qp.close();

        final List<Completion> flushed = awaitCompletions(client.recvCq, 3);
        assertThat(flushed).extracting(c -> c.status).containsOnly(WcStatus.WR_FLUSH_ERR);
        assertThat(flushed).extracting(c -> c.wrId).containsExactlyInAnyOrder(10L, 11L, 12L);
        awaitState(client.qp, QpState.ERROR);
        awaitDisconnects(client, 1);
        awaitDisconnects(server, 1);

        // Later work is flushed too (a receive only where the device flushes receives posted in ERROR).
        if (flushesReceivesPostedInError())
        {
            postRecv(client.qp, recv, 0, RECV_SIZE, 20);
            assertThat(awaitCompletions(client.recvCq, 1).get(0).status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        }
        postSend(client.qp, WrOpcode.SEND, recv, 0, 8, 21, 0, 0, 0, 0);
        final Completion sent = awaitCompletions(client.sendCq, 1).get(0);
        assertThat(sent.wrId).isEqualTo(21);
        assertThat(sent.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        assertThat(client.disconnects.get()).as("handler runs once").isEqualTo(1);
    }

    /**
     * What the peer sent and saw complete before it closed was placed: it completes first, and only the receives left
     * are flushed (a server's last message, e.g. its GOAWAY, is not lost to its close).
     */
    @Test
    void shouldCompleteWhatThePeerSentBeforeItClosedAndFlushOnlyTheRest() throws Exception
    {
        connect();
        final MemoryRegion recv = client.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion send = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        for (int i = 0; i < 3; i++)
        {
            postRecv(client.qp, recv, 0, RECV_SIZE, 30 + i);
        }
        postSend(server.qp, WrOpcode.SEND_WITH_IMM, send, 0, 16, 7, SendRequest.FLAG_SIGNALED, 0x60A7A7, 0, 0);
        assertThat(awaitCompletions(server.sendCq, 1).get(0).status).isEqualTo(WcStatus.SUCCESS);
        server.qp.close();

        final List<Completion> completions = awaitCompletions(client.recvCq, 3);
        assertThat(completions.get(0).status).as("the SEND made before the close").isEqualTo(WcStatus.SUCCESS);
        assertThat(completions.get(0).imm).isEqualTo(0x60A7A7);
        assertThat(completions.get(0).byteLen).isEqualTo(16);
        assertThat(completions.subList(1, 3)).extracting(c -> c.status).containsOnly(WcStatus.WR_FLUSH_ERR);
        awaitState(client.qp, QpState.ERROR);
    }

    @Test
    void shouldFlushBothSidesWhenDisconnectIsCalled() throws Exception
    {
        connect();
        final MemoryRegion serverRecv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion clientRecv = client.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
        postRecv(server.qp, serverRecv, 0, RECV_SIZE, 1);
        postRecv(client.qp, clientRecv, 0, RECV_SIZE, 2);
        client.qp.disconnect();
        client.qp.disconnect();

        assertThat(awaitCompletions(server.recvCq, 1).get(0).status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        assertThat(awaitCompletions(client.recvCq, 1).get(0).status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        awaitDisconnects(server, 1);
        awaitDisconnects(client, 1);
        assertThat(server.qp.state()).isEqualTo(QpState.ERROR);
    }

    @Test
    @Tag(PEER_PROCESS_TAG)
    void shouldFlushOutstandingReceivesWhenPeerProcessIsKilled() throws Exception
    {
        final String address = newAddress();
        final VerbsContext context = server.context;
        try (ConnectionListener listener = context.listen(address, 4))
        {
            final MortalPeer child = startMortalPeer(listener.localAddress());
            // A JVM start on a loaded machine can take a while: wait longer than for in-process events.
            final ConnectionRequest request = listener.accept(3 * TIMEOUT_NANOS);
            assertThat(request).as("child connected").isNotNull();
            server.qp = request.accept(server.attributes(), null);
            child.awaitReady();

            final MemoryRegion recv = server.pd.allocate(RECV_SIZE, Access.LOCAL_WRITE);
            for (int i = 0; i < 4; i++)
            {
                postRecv(server.qp, recv, 0, RECV_SIZE, 50 + i);
            }
            // The child sends one message on request, so the connection is known to carry data
            // across the processes before the child dies with receives of ours outstanding.
            child.send();
            final List<Completion> first = awaitCompletions(server.recvCq, 1);
            assertThat(first.get(0).status).isEqualTo(WcStatus.SUCCESS);
            assertThat(first.get(0).wrId).isEqualTo(50);

            child.kill();

            final List<Completion> flushed = awaitCompletions(server.recvCq, 3);
            assertThat(flushed).extracting(c -> c.status).containsOnly(WcStatus.WR_FLUSH_ERR);
            assertThat(flushed).extracting(c -> c.wrId).containsExactlyInAnyOrder(51L, 52L, 53L);
            awaitState(server.qp, QpState.ERROR);
            awaitDisconnects(server, 1);

            final MemoryRegion send = server.pd.allocate(64, Access.LOCAL_WRITE);
            postSend(server.qp, WrOpcode.SEND, send, 0, 8, 60, SendRequest.FLAG_SIGNALED, 0, 0, 0);
            assertThat(awaitCompletions(server.sendCq, 1).get(0).status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        }
    }

    // ------------------------------------------------------------------------------------------------
    // Fixture
    // ------------------------------------------------------------------------------------------------

    /** One side of a connection: PD, channel, CQs and (once connected) the QP. */
    protected static final class Endpoint
    {
        public final VerbsContext context;
        public final ProtectionDomain pd;
        public final CompletionChannel channel;
        public final CompletionQueue sendCq;
        public final CompletionQueue recvCq;
        public final AtomicInteger disconnects = new AtomicInteger();
        public QueuePair qp;

        public Endpoint(final VerbsContext context) throws IOException
        {
            this(context, context.createCompletionChannel(), 1024);
        }

        /**
         * @param context the context.
         * @param channel the channel of both CQs, possibly shared with other endpoints (as a poller's is).
         * @param entries entries of each CQ (at least the 256 work requests {@link #attributes()} allows).
         * @throws IOException if the context refuses.
         */
        public Endpoint(final VerbsContext context, final CompletionChannel channel, final int entries)
            throws IOException
        {
            this.context = context;
            this.pd = context.allocPd();
            this.channel = channel;
            this.sendCq = context.createCq(entries, channel);
            this.recvCq = context.createCq(entries, channel);
        }

        public QueuePairAttributes attributes()
        {
            return new QueuePairAttributes().pd(pd).sendCq(sendCq).recvCq(recvCq)
                .maxSendWr(256).maxRecvWr(256).maxSge(ScatterGatherList.MAX_SGE)
                .disconnectHandler(disconnects::incrementAndGet);
        }
    }

    /** Connects {@link #client} to {@link #server}. */
    protected void connect() throws Exception
    {
        connect(server, client);
    }

    protected void connect(final Endpoint acceptor, final Endpoint connector) throws Exception
    {
        final String address = newAddress();
        try (ConnectionListener listener = acceptor.context.listen(address, 4))
        {
            final Future<QueuePair> accepted = executor.submit(() ->
            {
                final ConnectionRequest request = listener.accept(TIMEOUT_NANOS);
                assertThat(request).as("connection request").isNotNull();
                return request.accept(acceptor.attributes(), null);
            });
            connector.qp = connector.context.connect(listener.localAddress(), connector.attributes(), null);
            acceptor.qp = accepted.get(TIMEOUT_NANOS, TimeUnit.NANOSECONDS);
        }
    }

    /** A polled completion, copied out of the flyweight. */
    protected static final class Completion
    {
        public final long wrId;
        public final WcStatus status;
        public final WcOpcode opcode;
        public final int byteLen;
        public final int imm;
        public final boolean hasImm;
        public final int qpNum;

        Completion(final WorkCompletions wc, final int i)
        {
            wrId = wc.wrId(i);
            status = wc.status(i);
            opcode = wc.opcode(i);
            byteLen = wc.byteLen(i);
            imm = wc.immData(i);
            hasImm = wc.hasImm(i);
            qpNum = wc.qpNum(i);
        }

        @Override
        public String toString()
        {
            return "Completion{wrId=" + wrId + ", status=" + status + ", opcode=" + opcode + ", byteLen=" + byteLen + '}';
        }
    }

    /** Polls until exactly {@code count} completions arrived (fails on timeout or if more arrive). */
    protected static List<Completion> awaitCompletions(final CompletionQueue cq, final int count)
    {
        final List<Completion> completions = new ArrayList<>();
        final WorkCompletions wc = new WorkCompletions(Math.max(1, count));
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (completions.size() < count)
        {
            final int n = cq.poll(wc);
            for (int i = 0; i < n; i++)
            {
                completions.add(new Completion(wc, i));
            }
            if (n == 0)
            {
                if (System.nanoTime() - deadline > 0)
                {
                    fail("expected " + count + " completions, got " + completions);
                }
                Thread.yield();
            }
        }
        assertThat(completions).hasSize(count);
        return completions;
    }

    /** @return what is in the CQ right now. */
    protected static List<Completion> pollAll(final CompletionQueue cq)
    {
        final List<Completion> completions = new ArrayList<>();
        final WorkCompletions wc = new WorkCompletions(16);
        int n;
        while ((n = cq.poll(wc)) > 0)
        {
            for (int i = 0; i < n; i++)
            {
                completions.add(new Completion(wc, i));
            }
        }
        return completions;
    }

    protected static void awaitState(final QueuePair qp, final QpState state) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (qp.state() != state)
        {
            if (System.nanoTime() - deadline > 0)
            {
                fail("QP stayed " + qp.state() + ", expected " + state);
            }
            Thread.sleep(1);
        }
    }

    protected static void awaitDisconnects(final Endpoint endpoint, final int expected) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (endpoint.disconnects.get() < expected)
        {
            if (System.nanoTime() - deadline > 0)
            {
                fail("disconnect handler ran " + endpoint.disconnects.get() + " times, expected " + expected);
            }
            Thread.sleep(1);
        }
        assertThat(endpoint.disconnects.get()).isEqualTo(expected);
    }

    protected static void postRecv(final QueuePair qp, final MemoryRegion mr, final int offset, final int length, final long wrId)
    {
        final RecvRequest request = new RecvRequest().wrId(wrId);
        request.setSge(mr, offset, length);
        assertThat(qp.postRecv(request)).isEqualTo(PostResult.OK);
    }

    protected static void postSend(
        final QueuePair qp,
        final WrOpcode opcode,
        final MemoryRegion mr,
        final int offset,
        final int length,
        final long wrId,
        final int flags,
        final int imm,
        final long remoteAddress,
        final int rkey)
    {
        final SendRequest request = new SendRequest().wrId(wrId).opcode(opcode).flags(flags).immData(imm)
            .remoteAddress(remoteAddress).rkey(rkey);
        request.setSge(mr, offset, length);
        assertThat(qp.postSend(request)).isEqualTo(PostResult.OK);
    }

    private void assertRemoteAccessErrorAndUntouched(final MemoryRegion target)
    {
        final Completion done = awaitCompletions(client.sendCq, 1).get(0);
        assertThat(done.status).isEqualTo(WcStatus.REM_ACCESS_ERR);
        assertThat(client.qp.state()).isEqualTo(QpState.ERROR);
        for (int i = 0; i < target.length(); i++)
        {
            assertThat(target.buffer().getByte(i)).as("target byte %d", i).isZero();
        }
    }

    protected static byte patternByte(final int i, final int seed)
    {
        return (byte)(i * 31 + seed * 7 + (i >>> 11));
    }

    protected static void fillPattern(final UnsafeBuffer buffer, final int offset, final int length, final int seed)
    {
        for (int i = 0; i < length; i++)
        {
            buffer.putByte(offset + i, patternByte(i, seed));
        }
    }

    protected static void assertPattern(final UnsafeBuffer buffer, final int offset, final int length, final int seed)
    {
        for (int i = 0; i < length; i++)
        {
            if (buffer.getByte(offset + i) != patternByte(i, seed))
            {
                fail("content differs at byte " + i + " of " + length);
            }
        }
    }

    protected static void fill(final UnsafeBuffer buffer, final int offset, final int length, final byte value)
    {
        buffer.setMemory(offset, length, value);
    }

    protected static byte[] bytes(final int length, final int seed)
    {
        final byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++)
        {
            bytes[i] = patternByte(i, seed);
        }
        return bytes;
    }

    protected static byte[] toArray(final ByteBuffer buffer)
    {
        final ByteBuffer copy = buffer.duplicate();
        final byte[] bytes = new byte[copy.remaining()];
        copy.get(bytes);
        return bytes;
    }

    // ------------------------------------------------------------------------------------------------
    // Child processes
    // ------------------------------------------------------------------------------------------------

    /**
     * A peer on another host that connects, holds the connection, sends one message when asked, and then dies
     * without a word (its process killed): what {@link #shouldFlushOutstandingReceivesWhenPeerProcessIsKilled} needs.
     */
    protected interface MortalPeer
    {
        /** Waits until the peer is connected and has posted its receives. */
        void awaitReady() throws Exception;

        /** Makes the peer send one 8-byte message. */
        void send() throws Exception;

        /** Kills the peer as {@code kill -9} would, and waits until it is gone. */
        void kill() throws Exception;
    }

    /**
     * Starts the peer of {@link #shouldFlushOutstandingReceivesWhenPeerProcessIsKilled}: by default a
     * {@link ConformancePeer} process ({@code connect-and-hold}), killed with {@link Process#destroyForcibly()}. A
     * provider whose device cannot be reached from another process overrides this with an equivalent.
     *
     * @param address where the peer connects.
     * @return the peer.
     */
    protected MortalPeer startMortalPeer(final String address) throws IOException
    {
        final Process child = startPeerProcess("connect-and-hold", address);
        return new MortalPeer()
        {
            @Override
            public void awaitReady() throws Exception
            {
                awaitLine(child, "READY");
            }

            @Override
            public void send() throws Exception
            {
                tellChild(child, "SEND");
            }

            @Override
            public void kill() throws Exception
            {
                child.destroyForcibly();
                assertThat(child.waitFor(30, TimeUnit.SECONDS)).as("the peer process died").isTrue();
            }
        };
    }

    /**
     * Starts {@link ConformancePeer} in a new JVM with this test's class path.
     *
     * @param mode    what the peer does (see {@link ConformancePeer}).
     * @param address where it connects or listens.
     */
    protected Process startPeerProcess(final String mode, final String address) throws IOException
    {
        final List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--add-exports");
        command.add("java.base/jdk.internal.misc=ALL-UNNAMED");
        command.add("-Xmx128m");
        command.add("-XX:TieredStopAtLevel=1");
        // Generous, so that a loaded machine cannot fail the child's handshake.
        command.add("-D" + VerbsConfig.CONNECT_TIMEOUT_MS_PROP + "=60000");
        command.addAll(childJvmArguments());
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(ConformancePeer.class.getName());
        command.add(provider().name());
        command.add(mode);
        command.add(address);
        final Process process = new ProcessBuilder(command)
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
        children.add(process);
        return process;
    }

    /** Writes a line to the child's stdin. */
    protected static void tellChild(final Process child, final String line) throws IOException
    {
        child.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
        child.getOutputStream().flush();
    }

    /** Waits for a line on the child's stdout. */
    protected void awaitLine(final Process child, final String expected) throws Exception
    {
        final BufferedReader reader = childOutputs.computeIfAbsent(child, c -> new BufferedReader(
            new InputStreamReader(c.getInputStream(), StandardCharsets.UTF_8)));
        String line;
        while ((line = reader.readLine()) != null)
        {
            if (line.equals(expected))
            {
                return;
            }
        }
        fail("child exited (" + child.waitFor() + ") before printing " + expected);
    }
}
