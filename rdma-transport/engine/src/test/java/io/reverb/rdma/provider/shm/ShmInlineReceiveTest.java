package io.reverb.rdma.provider.shm;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.QpState;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Inline receive ({@link VerbsConfig#shmInlineReceive()}): small SENDs travel with their completion in the receiver's
 * inbox (no entry in the receive CQ's shared ring, no read of the posted receive by the sender), in order with large
 * ones, and every posted receive still completes once: delivered, in error, or flushed.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmInlineReceiveTest
{
    private static final AtomicInteger NAMES = new AtomicInteger();
    private static final int RECV_LENGTH = 4096;
    private final Path directory = ShmTestDirectories.newDirectory("inline" + NAMES.incrementAndGet());
    private final VerbsConfig config = VerbsConfig.defaults().withShmDirectory(directory);

    @AfterEach
    void removeDirectory() throws IOException
    {
        ShmTestDirectories.delete(directory);
    }

    @Test
    void shouldDeliverSmallSendsWithoutAnEntryInTheReceiveCompletionQueueOrACasOnTheHead() throws Exception
    {
        assertThat(cqEntriesForSmallSends(config, 100)).as("CQ ring entries for 100 inline SENDs").isZero();
    }

    @Test
    void shouldStillWriteOneCompletionQueueEntryPerSendWhenInlineReceiveIsOff() throws Exception
    {
        // The same count with the setting off: what main does for every SEND (so the test above can fail).
        assertThat(cqEntriesForSmallSends(config.withShmInlineReceive(false), 100)).isEqualTo(100);
    }

    /** @return entries written to the receiver's CQ ring while {@code sends} 40-byte SEND_WITH_IMMs were received. */
    private long cqEntriesForSmallSends(final VerbsConfig receiverConfig, final int sends) throws Exception
    {
        try (VerbsContext server = new ShmVerbsProvider().open(receiverConfig);
            VerbsContext client = new ShmVerbsProvider().open(config))
        {
            final ShmQueuePair[] pair = connectPair(server, client, 16);
            final ShmQueuePair receiver = pair[0];
            final ShmQueuePair sender = pair[1];
            final MemoryRegion recvRegion = receiver.pd().allocate(RECV_LENGTH * 16, Access.LOCAL_WRITE);
            final MemoryRegion sendRegion = sender.pd().allocate(RECV_LENGTH, Access.LOCAL_WRITE);
            final RecvRequest recv = new RecvRequest();
            for (int i = 0; i < 16; i++)
            {
                receiver.postRecv(receive(recv, i, recvRegion, i * RECV_LENGTH, RECV_LENGTH));
            }
            final ShmCompletionQueue receiverCq = (ShmCompletionQueue)receiver.recvCq();
            final long before = receiverCq.ringTail();
            final SendRequest send = new SendRequest();
            final WorkCompletions wc = new WorkCompletions(16);
            for (int i = 0; i < sends; i++)
            {
                sendRegion.buffer().putInt(0, i);
                send.reset().wrId(i).opcode(WrOpcode.SEND_WITH_IMM).immData(1000 + i);
                send.setSge(sendRegion, 0, 40);
                assertThat(sender.postSend(send)).isEqualTo(PostResult.OK);
                final int n = pollAtLeastOne(receiverCq, wc);
                assertThat(n).isEqualTo(1);
                assertThat(wc.status(0)).isEqualTo(WcStatus.SUCCESS);
                assertThat(wc.opcode(0)).isEqualTo(WcOpcode.RECV);
                assertThat(wc.byteLen(0)).isEqualTo(40);
                assertThat(wc.hasImm(0)).isTrue();
                assertThat(wc.immData(0)).isEqualTo(1000 + i);
                assertThat(wc.qpNum(0)).isEqualTo(receiver.qpNum());
                final long wrId = wc.wrId(0);
                assertThat(wrId).isEqualTo(i % 16);
                assertThat(recvRegion.buffer().getInt((int)wrId * RECV_LENGTH)).as("bytes of message %d", i).isEqualTo(i);
                receiver.postRecv(receive(recv, wrId, recvRegion, (int)wrId * RECV_LENGTH, RECV_LENGTH));
            }
            assertThat(sender.inlineSends()).isEqualTo(receiverConfig.shmInlineReceive() ? sends : 0);
            // Without the inbox every receive is claimed with a CAS on the shared head; with it the sender counts.
            assertThat(receiver.recvRing().head()).as("CAS claims on the receive queue's head")
                .isEqualTo(receiverConfig.shmInlineReceive() ? 0 : sends);
            return receiverCq.ringTail() - before;
        }
    }

    @Test
    void shouldPutTheFloorsSixtyFourByteMessageAndItsCompletionInTwoCacheLines()
    {
        // The engine's SEND for a 64-byte floor call: batch header 16 + data frame align16(16 + 4 + 64) = 112 bytes.
        final int floorMessage = 16 + 96;
        assertThat(RecvRing.INLINE_MAX).isGreaterThanOrEqualTo(floorMessage);
        assertThat(RecvRing.SLOT_DATA + floorMessage).isLessThanOrEqualTo(2 * 64);
        final int capacity = 64;
        final RecvRing ring = new RecvRing(ringOf(capacity));
        for (long index = 0; index < capacity; index++)
        {
            assertThat(ring.slotOffset(index) % 64).as("slot %d starts a cache line", index).isZero();
        }
    }

    private static UnsafeBuffer ringOf(final int capacity)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(
            ByteBuffer.allocateDirect(RecvRing.LAYOUT.fileLength(capacity)));
        RecvRing.LAYOUT.initialise(buffer, capacity);
        return buffer;
    }

    @Test
    void shouldCompleteInlineAndLargeMessagesInTheOrderTheyWereSent() throws Exception
    {
        final int[] lengths = {0, 8, RecvRing.INLINE_MAX, RecvRing.INLINE_MAX + 1, 40, 3000, 1, RECV_LENGTH, 64};
        try (VerbsContext server = new ShmVerbsProvider().open(config);
            VerbsContext client = new ShmVerbsProvider().open(config))
        {
            final ShmQueuePair[] pair = connectPair(server, client, 16);
            final ShmQueuePair receiver = pair[0];
            final ShmQueuePair sender = pair[1];
            final MemoryRegion recvRegion = receiver.pd().allocate(RECV_LENGTH * 16, Access.LOCAL_WRITE);
            final MemoryRegion sendRegion = sender.pd().allocate(RECV_LENGTH * lengths.length, Access.LOCAL_WRITE);
            final RecvRequest recv = new RecvRequest();
            for (int i = 0; i < lengths.length; i++)
            {
                receiver.postRecv(receive(recv, 100 + i, recvRegion, i * RECV_LENGTH, RECV_LENGTH));
            }
            final SendRequest send = new SendRequest();
            for (int i = 0; i < lengths.length; i++)
            {
                for (int b = 0; b < lengths[i]; b++)
                {
                    sendRegion.buffer().putByte(i * RECV_LENGTH + b, (byte)(i * 31 + b));
                }
                send.reset().wrId(i).opcode(WrOpcode.SEND);
                send.setSge(sendRegion, i * RECV_LENGTH, lengths[i]);
                assertThat(sender.postSend(send)).isEqualTo(PostResult.OK);
            }
            assertThat(sender.inlineSends()).as("messages of at most INLINE_MAX bytes").isEqualTo(6);

            final List<Long> order = new ArrayList<>();
            final WorkCompletions wc = new WorkCompletions(4);
            while (order.size() < lengths.length)
            {
                final int n = pollAtLeastOne(receiver.recvCq(), wc);
                for (int j = 0; j < n; j++)
                {
                    final int i = (int)wc.wrId(j) - 100;
                    assertThat(wc.status(j)).isEqualTo(WcStatus.SUCCESS);
                    assertThat(wc.byteLen(j)).as("length of message %d", i).isEqualTo(lengths[i]);
                    for (int b = 0; b < lengths[i]; b++)
                    {
                        assertThat(recvRegion.buffer().getByte(i * RECV_LENGTH + b)).isEqualTo((byte)(i * 31 + b));
                    }
                    order.add(wc.wrId(j));
                }
            }
            assertThat(order).containsExactly(100L, 101L, 102L, 103L, 104L, 105L, 106L, 107L, 108L);
        }
    }

    @Test
    void shouldNotSendInlineWhenAPostedReceiveIsSmallerAndFailTheOversizedSendAsWithoutInbox() throws Exception
    {
        try (VerbsContext server = new ShmVerbsProvider().open(config);
            VerbsContext client = new ShmVerbsProvider().open(config))
        {
            final ShmQueuePair[] pair = connectPair(server, client, 16);
            final ShmQueuePair receiver = pair[0];
            final ShmQueuePair sender = pair[1];
            final MemoryRegion recvRegion = receiver.pd().allocate(RECV_LENGTH, Access.LOCAL_WRITE);
            final MemoryRegion sendRegion = sender.pd().allocate(RECV_LENGTH, Access.LOCAL_WRITE);
            final RecvRequest recv = new RecvRequest();
            receiver.postRecv(receive(recv, 1, recvRegion, 0, 16));
            receiver.postRecv(receive(recv, 2, recvRegion, 64, 16));
            final SendRequest send = new SendRequest();
            assertThat(sender.completesAtPost()).isTrue();
            assertThat(sender.postSend(send(send, 1, 0, sendRegion, 16)))
                .isEqualTo(PostResult.OK);
            assertThat(send.completedAtPost()).as("the SEND that was placed completed inside postSend").isTrue();
            assertThat(sender.postSend(send(send, 2, SendRequest.FLAG_SIGNALED, sendRegion, 17))).isEqualTo(PostResult.OK);
            assertThat(send.completedAtPost()).as("the SEND that failed did not complete at post").isFalse();
            assertThat(sender.inlineSends()).as("only the message that fits the smallest receive").isEqualTo(1);

            final WorkCompletions wc = new WorkCompletions(4);
            // one completion only: the failed SEND's (signaled or not); the unsignaled one that completed at post has none
            assertThat(pollAtLeastOne(sender.sendCq(), wc)).isEqualTo(1);
            assertThat(wc.status(0)).isEqualTo(WcStatus.REM_INV_REQ_ERR);

            final List<String> received = new ArrayList<>();
            while (received.size() < 2)
            {
                final int n = pollAtLeastOne(receiver.recvCq(), wc);
                for (int j = 0; j < n; j++)
                {
                    received.add(wc.wrId(j) + ":" + wc.status(j));
                }
            }
            assertThat(received).containsExactly("1:SUCCESS", "2:LOC_LEN_ERR");
        }
    }

    @Test
    void shouldFailASendWithRnrWhenNoReceiveIsPosted() throws Exception
    {
        final VerbsConfig quickRnr = config.withRnrRetryNanos(TimeUnit.MILLISECONDS.toNanos(1));
        try (VerbsContext server = new ShmVerbsProvider().open(quickRnr);
            VerbsContext client = new ShmVerbsProvider().open(quickRnr))
        {
            final ShmQueuePair[] pair = connectPair(server, client, 4);
            final ShmQueuePair sender = pair[1];
            final MemoryRegion sendRegion = sender.pd().allocate(64, Access.LOCAL_WRITE);
            assertThat(sender.postSend(send(new SendRequest(), 7, 0, sendRegion, 8)))
                .isEqualTo(PostResult.OK);
            final WorkCompletions wc = new WorkCompletions(4);
            assertThat(pollAtLeastOne(sender.sendCq(), wc)).isEqualTo(1);
            assertThat(wc.wrId(0)).isEqualTo(7);
            assertThat(wc.status(0)).isEqualTo(WcStatus.RNR_RETRY_EXC_ERR);
            assertThat(sender.inlineSends()).isZero();
        }
    }

    @Test
    void shouldFlushTheReceivesLeftAfterTheDeliveredOnesWhenThePeerGoesAndReleaseTheInboxOnClose() throws Exception
    {
        try (VerbsContext server = new ShmVerbsProvider().open(config);
            VerbsContext client = new ShmVerbsProvider().open(config))
        {
            final ShmQueuePair[] pair = connectPair(server, client, 8);
            final ShmQueuePair receiver = pair[0];
            final ShmQueuePair sender = pair[1];
            final MemoryRegion recvRegion = receiver.pd().allocate(RECV_LENGTH * 8, Access.LOCAL_WRITE);
            final MemoryRegion sendRegion = sender.pd().allocate(64, Access.LOCAL_WRITE);
            final RecvRequest recv = new RecvRequest();
            for (int i = 0; i < 4; i++)
            {
                receiver.postRecv(receive(recv, i, recvRegion, i * RECV_LENGTH, RECV_LENGTH));
            }
            final SendRequest send = new SendRequest();
            sender.postSend(send(send, 0, 0, sendRegion, 8));
            sender.postSend(send(send, 1, 0, sendRegion, 8));
            sender.close(); // the peer goes: the receiver sees EOF and goes to ERROR

            final List<String> received = new ArrayList<>();
            final WorkCompletions wc = new WorkCompletions(16);
            boolean postedAfterError = false;
            while (received.size() < 5)
            {
                if (!postedAfterError && receiver.state() == QpState.ERROR)
                {
                    postedAfterError = true;
                    assertThat(receiver.postRecv(receive(recv, 4, recvRegion, 4 * RECV_LENGTH, RECV_LENGTH)))
                        .isEqualTo(PostResult.OK);
                }
                final int n = receiver.recvCq().poll(wc);
                for (int j = 0; j < n; j++)
                {
                    received.add(wc.wrId(j) + ":" + wc.status(j));
                }
                Thread.onSpinWait();
            }
            assertThat(received).containsExactly(
                "0:SUCCESS", "1:SUCCESS", "2:WR_FLUSH_ERR", "3:WR_FLUSH_ERR", "4:WR_FLUSH_ERR");
            assertThat(receiver.inboxAttached()).isTrue();

            receiver.close();
            assertThat(receiver.recvCq().poll(wc)).as("nothing more after the flushes").isZero();
            assertThat(receiver.inboxAttached()).as("the poller released the closed QP's inbox").isFalse();
        }
    }

    @Test
    void shouldFailTheReceiveAndTheQueuePairOnAMalformedInboxSlot() throws Exception
    {
        try (VerbsContext server = new ShmVerbsProvider().open(config);
            VerbsContext client = new ShmVerbsProvider().open(config))
        {
            final ShmQueuePair[] pair = connectPair(server, client, 4);
            final ShmQueuePair receiver = pair[0];
            final MemoryRegion recvRegion = receiver.pd().allocate(RECV_LENGTH, Access.LOCAL_WRITE);
            receiver.postRecv(receive(new RecvRequest(), 9, recvRegion, 0, RECV_LENGTH));
            final RecvRing ring = receiver.recvRing();
            final long linesBefore = InboxReader.MALFORMED_LOG.offered();
            // What a broken or hostile peer could write: an inline message longer than a slot holds.
            ring.publishSlot(0, RecvRing.INLINE_MAX + 1, 0, RecvRing.info(WcStatus.SUCCESS.value(), false, false,
                RecvRing.KIND_INLINE));

            final WorkCompletions wc = new WorkCompletions(4);
            assertThat(pollAtLeastOne(receiver.recvCq(), wc)).isEqualTo(1);
            assertThat(wc.wrId(0)).isEqualTo(9);
            assertThat(wc.status(0)).isEqualTo(WcStatus.LOC_QP_OP_ERR);
            assertThat(receiver.state()).isEqualTo(QpState.ERROR);
            // one line for the QP, through the limiter a peer reconnecting to write more slots cannot get past
            assertThat(InboxReader.MALFORMED_LOG.offered() - linesBefore).isEqualTo(1);
        }
    }

    private static RecvRequest receive(
        final RecvRequest recv, final long wrId, final MemoryRegion region, final int offset, final int length)
    {
        recv.wrId(wrId).setSge(region, offset, length);
        return recv;
    }

    private static SendRequest send(
        final SendRequest send, final long wrId, final int flags, final MemoryRegion region, final int length)
    {
        send.reset().wrId(wrId).opcode(WrOpcode.SEND).flags(flags).setSge(region, 0, length);
        return send;
    }

    private static int pollAtLeastOne(final CompletionQueue cq, final WorkCompletions wc)
    {
        int n;
        while ((n = cq.poll(wc)) == 0)
        {
            Thread.onSpinWait();
        }
        return n;
    }

    /** @return {server QP, client QP}, each with its own PD and a CQ shared by send and receive. */
    private static ShmQueuePair[] connectPair(final VerbsContext server, final VerbsContext client, final int maxRecvWr)
        throws Exception
    {
        final String name = "inl" + NAMES.incrementAndGet();
        try (ConnectionListener listener = server.listen(name, 1))
        {
            final CompletableFuture<ShmQueuePair> accepted = CompletableFuture.supplyAsync(() ->
            {
                try
                {
                    final ConnectionRequest request = listener.accept(TimeUnit.SECONDS.toNanos(20));
                    final CompletionQueue cq = server.createCq(256, null);
                    return (ShmQueuePair)request.accept(new QueuePairAttributes().pd(server.allocPd()).sendCq(cq)
                        .recvCq(cq).maxRecvWr(maxRecvWr), null);
                }
                catch (final IOException ex)
                {
                    throw new IllegalStateException(ex);
                }
            });
            final CompletionQueue cq = client.createCq(256, null);
            final ShmQueuePair qp = (ShmQueuePair)client.connect(name, new QueuePairAttributes().pd(client.allocPd())
                .sendCq(cq).recvCq(cq).maxRecvWr(maxRecvWr), null);
            return new ShmQueuePair[] {accepted.get(20, TimeUnit.SECONDS), qp};
        }
    }
}
