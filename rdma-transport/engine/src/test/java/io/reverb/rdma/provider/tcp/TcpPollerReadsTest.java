package io.reverb.rdma.provider.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionChannel;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.QpState;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.lang.reflect.Field;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The poller of a receive CQ reads its QPs' sockets while it keeps polling ({@link TcpCompletionQueue}): it takes the
 * reading over from the NIC thread once it polls without finding anything; without a completion channel it gives it
 * back when it arms the CQ, and never takes it in the poll-then-arm pattern of an EVENT poller; with one, arming keeps
 * the reading with the poller and the channel's selector wakes it when bytes arrive, once per read. The NIC takes it
 * back when the poller stops polling (the lease) or the socket stays idle. Every check counts (frames delivered, NIC
 * wake-ups to read); the one that waits for the lease waits for an outcome, not a duration.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpPollerReadsTest
{
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(20);
    /** Longer than any test: only arming, idleness or going down can end the poller's reading. */
    private static final long NO_LEASE_END = TimeUnit.MINUTES.toNanos(10);
    private static final int SLOTS = 8;

    private TcpVerbsContext server;
    private TcpVerbsContext client;
    private TcpQueuePair receiver;
    private QueuePair sender;
    private CompletionQueue receiverCq;
    private MemoryRegion recvRegion;
    private MemoryRegion target;
    private MemoryRegion sendRegion;
    private final WorkCompletions wc = new WorkCompletions(16);
    private final RecvRequest recv = new RecvRequest();
    private final SendRequest send = new SendRequest();
    private CompletionChannel channel;
    /** Poller reads on (the default, set so that a -D of the build cannot change these tests); one test turns it off. */
    private VerbsConfig config = VerbsConfig.defaults().withTcpPollerReads(true);

    private void open(final long leaseNanos) throws Exception
    {
        server = (TcpVerbsContext)new TcpVerbsProvider().open(config);
        client = (TcpVerbsContext)new TcpVerbsProvider().open(config);
        server.pollerLeaseNanos(leaseNanos);
        client.pollerLeaseNanos(leaseNanos);
        try (ConnectionListener listener = server.listen("127.0.0.1:0", 4))
        {
            final QueuePair[] pair = TcpHandshakeLimitsTest.connectPair(server, client, listener);
            receiver = (TcpQueuePair)pair[0];
            sender = pair[1];
        }
        prepare();
    }

    /** The receiver's CQ is bound to a completion channel, as the engine's are. */
    private void openWithChannel() throws Exception
    {
        openWithChannel(config);
    }

    private void openWithChannel(final VerbsConfig config) throws Exception
    {
        server = (TcpVerbsContext)new TcpVerbsProvider().open(config);
        client = (TcpVerbsContext)new TcpVerbsProvider().open(config);
        server.pollerLeaseNanos(NO_LEASE_END);
        channel = server.createCompletionChannel();
        final CompletionQueue cq = server.createCq(64, channel);
        try (ConnectionListener listener = server.listen("127.0.0.1:0", 4))
        {
            final CompletableFuture<QueuePair> accepted = CompletableFuture.supplyAsync(() ->
            {
                try
                {
                    final ConnectionRequest request = listener.accept(TIMEOUT_NANOS);
                    return request.accept(new QueuePairAttributes().pd(server.allocPd()).sendCq(cq).recvCq(cq)
                        .maxSendWr(SLOTS).maxRecvWr(SLOTS), null);
                }
                catch (final Exception ex)
                {
                    throw new IllegalStateException(ex);
                }
            });
            final CompletionQueue clientCq = client.createCq(64, null);
            sender = client.connect(listener.localAddress(), new QueuePairAttributes().pd(client.allocPd())
                .sendCq(clientCq).recvCq(clientCq).maxSendWr(SLOTS).maxRecvWr(SLOTS), null);
            receiver = (TcpQueuePair)accepted.get(TIMEOUT_NANOS, TimeUnit.NANOSECONDS);
        }
        prepare();
    }

    private void prepare() throws IOException
    {
        receiverCq = receiver.recvCq();
        recvRegion = receiver.pd().allocate(64 * SLOTS, Access.LOCAL_WRITE);
        target = receiver.pd().allocate(4096, Access.ALL);
        sendRegion = sender.pd().allocate(4096, Access.LOCAL_WRITE);
        for (int i = 0; i < SLOTS; i++)
        {
            recv.wrId(i).setSge(recvRegion, i * 64, 64);
            receiver.postRecv(recv);
        }
    }

    @AfterEach
    void close()
    {
        if (client != null)
        {
            client.close();
        }
        if (server != null)
        {
            server.close();
        }
    }

    @Test
    void shouldReadTheSocketOnThePollingThreadSoThatNoMessageWakesTheNic() throws Exception
    {
        open(NO_LEASE_END);
        takeReadingOver();
        final long nicReadsBefore = receiver.readOwner().nicReads();

        for (int i = 0; i < 200; i++)
        {
            postSend(i);
            awaitReceive(i);
            awaitSendCompletion();
        }

        assertThat(receiver.readOwner().nicReads()).as("NIC wake-ups to read while the poller read the socket")
            .isEqualTo(nicReadsBefore);
        assertThat(receiver.readOwner().pollerReading()).isTrue();
        assertThat(receiver.state()).isEqualTo(QpState.RTS);
    }

    @Test
    void shouldGiveTheReadingBackToTheNicWhenTheCqIsArmed() throws Exception
    {
        open(NO_LEASE_END);
        takeReadingOver();
        final long nicReadsBefore = receiver.readOwner().nicReads();

        receiverCq.requestNotify(false);
        awaitTrue(() -> !receiver.readOwner().pollerReading(), "the NIC reads again after arming");
        postSend(1);

        // Nobody polls the receiver's CQ: only the NIC can have read the SEND.
        awaitTrue(() -> receiver.readOwner().nicReads() > nicReadsBefore, "the NIC read the SEND");
        awaitReceive(1);
        awaitSendCompletion();
    }

    @Test
    void shouldTakeTheReadingBackFromAPollerThatStoppedPolling() throws Exception
    {
        open(TimeUnit.MILLISECONDS.toNanos(5));
        takeReadingOver();

        // The receiver's CQ is never polled again, and not armed. The WRITE completes only if its target's socket is
        // read (its ACK answers it): by the NIC, once the lease ran out.
        final SendRequest write = new SendRequest().wrId(77).opcode(WrOpcode.RDMA_WRITE).flags(SendRequest.FLAG_SIGNALED)
            .remoteAddress(target.address() + 8).rkey(target.rkey());
        sendRegion.buffer().putLong(0, 0x0123456789abcdefL);
        write.setSge(sendRegion, 0, 8);
        sender.postSend(write);
        awaitSendCompletion();

        assertThat(target.buffer().getLong(8)).isEqualTo(0x0123456789abcdefL);
        assertThat(receiver.readOwner().pollerReading()).isFalse();
    }

    @Test
    void shouldStopReadingAnIdleSocketUntilACompletionArrives() throws Exception
    {
        open(NO_LEASE_END);
        takeReadingOver();

        // polls that find the wire taken by the NIC thread (it may be preempted holding it) are not idle reads, so
        // the poller polls until it lets go, yielding past the threshold; the deadline only ends a hang
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (int i = 0; receiver.readOwner().pollerReading() && System.nanoTime() - deadline < 0; i++)
        {
            assertThat(receiverCq.poll(wc)).isZero();
            if (i >= TcpCompletionQueue.RELEASE_AFTER_IDLE_READS)
            {
                Thread.yield(); // let a NIC thread holding the wire finish with it
            }
        }
        assertThat(receiver.readOwner().pollerReading()).as("an idle socket goes back to the NIC").isFalse();
        for (int i = 0; i < 100; i++)
        {
            assertThat(receiverCq.poll(wc)).isZero();
        }
        assertThat(receiver.readOwner().pollerReading()).as("not taken again before a completion").isFalse();

        postSend(3);
        awaitReceive(3);
        awaitSendCompletion();
        takeReadingOver();
    }

    /**
     * Polls that find the QP's wire taken (the NIC thread at work on it, or preempted while holding it) read nothing
     * and say nothing of idleness: before, a spinning poller counted each as an idle read, gave the socket back after
     * 1,024 of them (microseconds) and stopped reading until a completion came.
     */
    @Test
    void shouldNotCountPollsThatFindTheWireTakenAsIdleReads() throws Exception
    {
        open(NO_LEASE_END);
        takeReadingOver();
        final Field field = TcpQueuePair.class.getDeclaredField("wire");
        field.setAccessible(true);
        final TcpWireLock wire = (TcpWireLock)field.get(receiver);
        final CountDownLatch held = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final Thread holder = new Thread(() ->
        {
            wire.lockYielding();
            held.countDown();
            try
            {
                release.await();
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
            finally
            {
                wire.unlock();
            }
        }, "wire-holder");
        holder.start();
        assertThat(held.await(20, TimeUnit.SECONDS)).isTrue();
        for (int i = 0; i < 2 * TcpCompletionQueue.RELEASE_AFTER_IDLE_READS; i++)
        {
            assertThat(receiverCq.poll(wc)).isZero();
        }
        assertThat(receiver.readOwner().pollerReading()).as("still the poller's").isTrue();
        release.countDown();
        holder.join(TimeUnit.SECONDS.toMillis(20));

        final long nicReadsBefore = receiver.readOwner().nicReads();
        postSend(1);
        awaitReceive(1);
        awaitSendCompletion();
        assertThat(receiver.readOwner().nicReads()).as("read by the poller, not the NIC").isEqualTo(nicReadsBefore);
    }

    @Test
    void shouldNeverTakeTheReadingOverWhenEveryIdlePollIsFollowedByArming() throws Exception
    {
        open(NO_LEASE_END);
        for (int i = 0; i < 50; i++)
        {
            // An EVENT poller: it handles what it found, polls once more, arms, re-polls, sleeps.
            final long nicReadsBefore = receiver.readOwner().nicReads();
            postSend(i);
            awaitTrue(() -> receiver.readOwner().nicReads() > nicReadsBefore, "the NIC read the SEND");
            assertThat(receiverCq.poll(wc)).isEqualTo(1);
            assertThat(wc.status(0)).isEqualTo(WcStatus.SUCCESS);
            repost();
            assertThat(receiverCq.poll(wc)).isZero();
            receiverCq.requestNotify(false);
            assertThat(receiverCq.poll(wc)).isZero();
            awaitSendCompletion();
            assertThat(receiver.readOwner().pollerReading()).isFalse();
        }
    }

    @Test
    void shouldWakeAPollerSleepingInItsChannelWithTheSocketItselfNotTheNic() throws Exception
    {
        openWithChannel();
        // An EVENT poller: it never spins, it arms at once; the poll after arming takes the reading over.
        armAndTakeReadingOver();
        final long nicReadsBefore = receiver.readOwner().nicReads();

        for (int i = 0; i < 100; i++)
        {
            postSend(i);
            assertThat(channel.await(TIMEOUT_NANOS)).as("the channel wakes for SEND %d", i).isPositive();
            awaitReceive(i);
            awaitSendCompletion();
            receiverCq.requestNotify(false);
            assertThat(receiverCq.poll(wc)).isZero();
        }

        assertThat(receiver.readOwner().nicReads()).as("NIC wake-ups to read").isEqualTo(nicReadsBefore);
        assertThat(receiver.readOwner().pollerReading()).isTrue();
    }

    @Test
    void shouldWakeTheChannelOnceForASocketItsPollerDoesNotRead() throws Exception
    {
        openWithChannel();
        armAndTakeReadingOver();
        postSend(5);
        assertThat(channel.await(TIMEOUT_NANOS)).isPositive();

        // Not polled: the socket stays readable, and the channel does not wake for it again (no busy loop). A fire
        // that found the wire taken (the NIC thread at its lease check: seen once in ~300 runs on a loaded machine)
        // leaves the watch on by design, and the channel wakes once more for it; any other wake is a busy loop.
        int wakes = 0;
        for (int i = 0; i < 3; i++)
        {
            wakes += channel.await(TimeUnit.MILLISECONDS.toNanos(20)) > 0 ? 1 : 0;
        }
        assertThat(wakes).as("wakes after the first, each one for a fire that found the wire taken")
            .isLessThanOrEqualTo((int)Math.min(3, receiver.channelFiresDeferred()));
        awaitReceive(5);
        awaitSendCompletion();
    }

    /**
     * A poller that arms its CQ again and again without polling it (its consumer paused: the engine does not poll a
     * receiver it parked) does not read the socket, yet the socket must be read, as a NIC places data and answers its
     * peer whether or not the CQ is polled. Arming without a poll since the last arming gives the reading back to the
     * NIC. Before, the channel woke once, nobody read, and the lease (here: never) was all that could end it. The
     * WRITE completes only if the receiver's side reads it and answers.
     */
    @Test
    void shouldGiveTheReadingBackWhenThePollerArmsAgainWithoutPolling() throws Exception
    {
        openWithChannel();
        armAndTakeReadingOver();
        final long nicReadsBefore = receiver.readOwner().nicReads();

        final SendRequest write = new SendRequest().wrId(78).opcode(WrOpcode.RDMA_WRITE).flags(SendRequest.FLAG_SIGNALED)
            .remoteAddress(target.address() + 16).rkey(target.rkey());
        sendRegion.buffer().putLong(0, 0x1122334455667788L);
        write.setSge(sendRegion, 0, 8);
        assertThat(sender.postSend(write)).isZero();
        // The paused poller: it sleeps, wakes, arms again, never polls.
        final CompletionQueue senderCq = sender.sendCq();
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        int n;
        while ((n = senderCq.poll(wc)) == 0)
        {
            assertThat(System.nanoTime() - deadline).as("the WRITE is answered").isNegative();
            channel.await(TimeUnit.MILLISECONDS.toNanos(5));
            receiverCq.requestNotify(false);
        }
        assertThat(n).isEqualTo(1);
        assertThat(wc.status(0)).isEqualTo(WcStatus.SUCCESS);
        assertThat(target.buffer().getLong(16)).isEqualTo(0x1122334455667788L);
        assertThat(receiver.readOwner().pollerReading()).as("the NIC reads for a poller that does not poll").isFalse();
        assertThat(receiver.readOwner().nicReads()).isGreaterThan(nicReadsBefore);

        // Polling again takes the reading back at the next arming, and the socket wakes the channel again.
        assertThat(receiverCq.poll(wc)).isZero();
        armAndTakeReadingOver();
        postSend(1);
        assertThat(channel.await(TIMEOUT_NANOS)).isPositive();
        awaitReceive(1);
        awaitSendCompletion();
    }

    /**
     * The NIC ends an RNR wait (a receive was posted) while the poller sleeps in its channel: watching the socket in
     * the channel is turned back on by the NIC thread, and a select already blocked does not see a changed interest
     * set. The channel must re-select, so that the bytes behind the frame that waited wake the poller; before the fix
     * they waited for the poller's timeout and the NIC's idle select (seen as a send ring freed one slot per ~100 ms).
     * The CQ is not armed, so no completion event can wake the channel: only the socket can.
     */
    @Test
    void shouldWakeAPollerSleepingInItsChannelWhenTheNicEndsAnRnrWait() throws Exception
    {
        openWithChannel(config.withRnrRetryNanos(TimeUnit.SECONDS.toNanos(30)));
        armAndTakeReadingOver();
        // Use up every posted receive without reposting.
        for (int i = 0; i < SLOTS; i++)
        {
            postSend(i);
            awaitReceivesNoRepost(i, 1);
            awaitSendCompletion();
        }
        // The next SEND finds no receive: reading stops (an RNR wait) with its frame read.
        postSend(SLOTS);
        awaitTrue(() ->
        {
            receiverCq.poll(wc);
            return receiver.inboundRnrWaiting();
        }, "the SEND waits for a receive");
        postSend(SLOTS + 1); // stays in the socket: nobody reads while the wait lasts
        final long nicReadsBefore = receiver.readOwner().nicReads();
        channel.await(0); // takes the event of the first completion (the CQ was armed once, at the start)

        final CompletableFuture<Integer> woken = CompletableFuture.supplyAsync(() ->
        {
            try
            {
                return channel.await(TIMEOUT_NANOS);
            }
            catch (final IOException ex)
            {
                throw new IllegalStateException(ex);
            }
        });
        awaitTrue(() -> ((TcpCompletionChannel)channel).waiting(), "the poller sleeps in its channel");
        Thread.sleep(50); // into the selector's blocking select (the case the fix is for; passing earlier is fine too)
        for (int i = 0; i < 2; i++)
        {
            recv.wrId(i).setSge(recvRegion, i * 64, 64);
            receiver.postRecv(recv); // the NIC resumes the waiting SEND and watches the socket again
        }
        assertThat(woken.get(TIMEOUT_NANOS + TimeUnit.SECONDS.toNanos(5), TimeUnit.NANOSECONDS))
            .as("the channel wakes for the bytes behind the SEND that waited (not its timeout)").isPositive();
        awaitReceivesNoRepost(SLOTS, 2); // both may come in one poll
        assertThat(receiver.readOwner().nicReads()).as("NIC wake-ups to read").isEqualTo(nicReadsBefore);
        awaitSendCompletions(2);
    }

    @Test
    void shouldLeaveAllReadingToTheNicWhenPollerReadsAreOff() throws Exception
    {
        config = config.withTcpPollerReads(false);
        open(NO_LEASE_END);
        for (int i = 0; i < 100; i++)
        {
            postSend(i);
            awaitReceive(i);
            awaitSendCompletion();
        }
        assertThat(receiver.readOwner().pollerReading()).isFalse();
        assertThat(receiver.readOwner().nicReads()).isPositive();
    }

    /**
     * The peer sent a message and went away (its socket closed) while nobody read this side's socket (its poller
     * holds the reading and is busy elsewhere). This side's next write fails on the peer's reset: the message the
     * peer sent before it closed is already here, so it is delivered before the QP goes down, as a NIC delivers what
     * it placed before the connection broke. A server's GOAWAY followed by its close was lost that way.
     */
    @Test
    void shouldDeliverWhatThePeerSentBeforeItClosedWhenAWriteFailsFirst() throws Exception
    {
        open(NO_LEASE_END);
        takeReadingOver();
        postSend(41);
        // postSend writes on this thread unless the sender's NIC thread holds its wire: then the NIC writes it later,
        // and a close before that drops it (a destroyed QP's pending requests are gone, as on a NIC)
        final long written = System.nanoTime() + TIMEOUT_NANOS;
        while (!((TcpQueuePair)sender).everythingPostedWritten())
        {
            assertThat(System.nanoTime() - written).as("the SEND is in the sender's socket").isNegative();
            Thread.yield();
        }
        sender.close(); // its socket closes: its kernel resets this side's next write
        final MemoryRegion own = receiver.pd().allocate(64, Access.LOCAL_WRITE);
        final SendRequest reply = new SendRequest();
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        for (int i = 0; receiver.state() != QpState.ERROR; i++)
        {
            assertThat(System.nanoTime() - deadline).as("a write fails on the peer's reset").isNegative();
            reply.reset().wrId(1000 + i).opcode(WrOpcode.SEND).setSge(own, 0, 64);
            if (receiver.postSend(reply) != 0)
            {
                break; // the QP is down already
            }
            Thread.sleep(1);
        }
        // The receive CQ holds the peer's SEND first, then the flushed receives and sends.
        int received = 0;
        int flushed = 0;
        int n;
        while ((n = receiverCq.poll(wc)) > 0)
        {
            for (int k = 0; k < n; k++)
            {
                if (wc.status(k) == WcStatus.SUCCESS && wc.opcode(k) == WcOpcode.RECV)
                {
                    assertThat(flushed).as("the message comes before the flush").isZero();
                    assertThat(wc.immData(k)).isEqualTo(41);
                    received++;
                }
                else if (wc.opcode(k) == WcOpcode.RECV)
                {
                    assertThat(wc.status(k)).isEqualTo(WcStatus.WR_FLUSH_ERR);
                    flushed++;
                }
            }
        }
        assertThat(received).as("the SEND the peer made before it closed").isEqualTo(1);
        assertThat(flushed).as("every other posted receive comes back flushed").isEqualTo(SLOTS - 1);
    }

    /**
     * An EVENT poller's first sleep: arm, poll (the poll after arming takes the reading over), repeated until the QP
     * is attached to its CQ as a reader (the NIC thread attaches it when it registers the socket, asynchronously).
     */
    private void armAndTakeReadingOver()
    {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        do
        {
            assertThat(System.nanoTime() - deadline).as("the poller takes the reading over").isNegative();
            receiverCq.requestNotify(false);
            assertThat(receiverCq.poll(wc)).isZero();
        }
        while (!receiver.readOwner().pollerReading());
    }

    /** Polls the idle receive CQ until its poller reads the socket. */
    private void takeReadingOver()
    {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (!receiver.readOwner().pollerReading())
        {
            assertThat(receiverCq.poll(wc)).isZero();
            assertThat(System.nanoTime() - deadline).as("the poller takes the reading over").isNegative();
        }
    }

    private void postSend(final int i)
    {
        send.reset().wrId(i).opcode(WrOpcode.SEND_WITH_IMM).immData(i).flags(SendRequest.FLAG_SIGNALED);
        send.setSge(sendRegion, 0, 64);
        assertThat(sender.postSend(send)).isZero();
    }

    /** Polls the receiver's CQ (shared by its sends and receives) until the SEND with immediate {@code i} arrived. */
    private void awaitReceive(final int i)
    {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        int n;
        while ((n = receiverCq.poll(wc)) == 0)
        {
            assertThat(System.nanoTime() - deadline).as("SEND %d arrives", i).isNegative();
            Thread.yield();
        }
        assertThat(n).isEqualTo(1);
        assertThat(wc.status(0)).isEqualTo(WcStatus.SUCCESS);
        assertThat(wc.immData(0)).isEqualTo(i);
        repost();
    }

    /**
     * As {@link #awaitReceive} without reposting, for the SENDs with immediates {@code first} to
     * {@code first + count - 1}, in order; several may come in one poll.
     */
    private void awaitReceivesNoRepost(final int first, final int count)
    {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        int seen = 0;
        while (seen < count)
        {
            final int n = receiverCq.poll(wc);
            for (int k = 0; k < n; k++)
            {
                assertThat(wc.status(k)).isEqualTo(WcStatus.SUCCESS);
                assertThat(wc.immData(k)).isEqualTo(first + seen + k);
            }
            seen += n;
            assertThat(System.nanoTime() - deadline).as("SEND %d arrives", first + seen).isNegative();
            Thread.yield();
        }
        assertThat(seen).isEqualTo(count);
    }

    private void repost()
    {
        recv.wrId(wc.wrId(0)).setSge(recvRegion, (int)wc.wrId(0) * 64, 64);
        receiver.postRecv(recv);
    }

    private void awaitSendCompletion()
    {
        final CompletionQueue cq = sender.sendCq();
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        int n;
        while ((n = cq.poll(wc)) == 0)
        {
            assertThat(System.nanoTime() - deadline).as("the send completes").isNegative();
            Thread.yield();
        }
        assertThat(n).isEqualTo(1);
        assertThat(wc.status(0)).isEqualTo(WcStatus.SUCCESS);
    }

    /** Polls the sender's CQ until {@code count} sends completed, all successfully (several may come in one poll). */
    private void awaitSendCompletions(final int count)
    {
        final CompletionQueue cq = sender.sendCq();
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        int seen = 0;
        while (seen < count)
        {
            final int n = cq.poll(wc);
            for (int i = 0; i < n; i++)
            {
                assertThat(wc.status(i)).isEqualTo(WcStatus.SUCCESS);
            }
            seen += n;
            assertThat(System.nanoTime() - deadline).as("%d sends complete", count).isNegative();
            Thread.yield();
        }
        assertThat(seen).isEqualTo(count);
    }

    private static void awaitTrue(final BooleanSupplier condition, final String what)
    {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (!condition.getAsBoolean())
        {
            assertThat(System.nanoTime() - deadline).as(what).isNegative();
            Thread.yield();
        }
    }
}
