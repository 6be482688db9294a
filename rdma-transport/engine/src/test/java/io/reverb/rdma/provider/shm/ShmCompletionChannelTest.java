package io.reverb.rdma.provider.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionChannel;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The shm completion channel's wake-up path: a doorbell wakes the sleeping waiter directly (the context's event thread
 * is not on the way: these tests hold it blocked), one wake-up per doorbell, and no wake-up is lost when completions
 * race the arming. Counts, never timings: a lost wake-up shows as a wait that ends without an event.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ShmCompletionChannelTest
{
    private static final Path PROC_FDS = Path.of("/proc/self/fd");
    private static final AtomicInteger NAMES = new AtomicInteger();
    /** Long enough that only a lost wake-up (or a machine stalled for that long) ends a wait without an event. */
    private static final long LONG_WAIT_NANOS = TimeUnit.SECONDS.toNanos(20);

    private final Path directory = ShmTestDirectories.newDirectory("chan" + NAMES.incrementAndGet());
    private final VerbsConfig config = VerbsConfig.defaults().withShmDirectory(directory);

    @AfterEach
    void removeDirectory() throws IOException
    {
        ShmTestDirectories.delete(directory);
    }

    @Test
    void shouldWakeASleepingWaiterByTheDoorbellItselfWhileTheEventThreadCannotRun() throws Exception
    {
        try (VerbsContext sender = new ShmVerbsProvider().open(config);
            VerbsContext receiver = new ShmVerbsProvider().open(config))
        {
            final Pair pair = connect(sender, receiver, 16);
            final CountDownLatch release = new CountDownLatch(1);
            try
            {
                blockEventThread(receiver, release);
                pair.postReceives(1);
                pair.recvCq.requestNotify(false);
                assertThat(pair.recvCq.poll(pair.wc)).isZero();

                final CompletableFuture<Integer> woken = CompletableFuture.supplyAsync(() -> await(pair.channel));
                pair.send(7);

                // The event thread is blocked: only the doorbell socket, watched by the channel, can end this wait.
                assertThat(woken.get(LONG_WAIT_NANOS * 2, TimeUnit.NANOSECONDS)).as("events of the wait").isEqualTo(1);
                assertThat(pair.recvCq.poll(pair.wc)).isEqualTo(1);
                assertThat(pair.wc.status(0)).isEqualTo(WcStatus.SUCCESS);
                assertThat(pair.wc.immData(0)).isEqualTo(7);
            }
            finally
            {
                release.countDown();
            }
        }
    }

    @Test
    void shouldRaiseOneEventPerDoorbellWhenTheSocketWokeTheWaiterFirst() throws Exception
    {
        try (VerbsContext sender = new ShmVerbsProvider().open(config);
            VerbsContext receiver = new ShmVerbsProvider().open(config))
        {
            final Pair pair = connect(sender, receiver, 16);
            pair.postReceives(2);
            for (final boolean rearmBeforeTheEventThreadReads : new boolean[] {false, true})
            {
                final CountDownLatch release = new CountDownLatch(1);
                blockEventThread(receiver, release);
                pair.recvCq.requestNotify(false);
                final CompletableFuture<Integer> woken = CompletableFuture.supplyAsync(() -> await(pair.channel));
                pair.send(rearmBeforeTheEventThreadReads ? 2 : 1);
                assertThat(woken.get(LONG_WAIT_NANOS * 2, TimeUnit.NANOSECONDS)).isEqualTo(1);
                assertThat(pair.recvCq.poll(pair.wc)).isEqualTo(1);
                if (rearmBeforeTheEventThreadReads)
                {
                    pair.recvCq.requestNotify(false);
                }
                // The event thread now reads the same doorbell: old news, whether the CQ was armed again or not.
                release.countDown();
                awaitDoorbellsRead(pair.recvCq, rearmBeforeTheEventThreadReads ? 2 : 1);
                assertThat(pair.channel.await(0)).as("events left after one doorbell (re-armed: " +
                    rearmBeforeTheEventThreadReads + ")").isZero();
            }
        }
    }

    @Test
    void shouldLeaveTheWakeUpToTheEventThreadWhenPollerDoorbellsAreOff() throws Exception
    {
        // The old path, kept behind reverb.shm.pollerDoorbells=false: the event thread reads the doorbell and signals.
        try (VerbsContext sender = new ShmVerbsProvider().open(config);
            VerbsContext receiver = new ShmVerbsProvider().open(config.withShmPollerDoorbells(false)))
        {
            final Pair pair = connect(sender, receiver, 16);
            final CountDownLatch release = new CountDownLatch(1);
            pair.postReceives(1);
            blockEventThread(receiver, release);
            pair.recvCq.requestNotify(false);
            pair.send(9);
            // The completion is there, but with the event thread blocked nothing rings: a short wait ends empty.
            assertThat(pair.channel.await(TimeUnit.MILLISECONDS.toNanos(50))).isZero();
            release.countDown();
            assertThat(pair.channel.await(LONG_WAIT_NANOS)).as("the event thread's signal").isEqualTo(1);
            assertThat(pair.recvCq.poll(pair.wc)).isEqualTo(1);
            assertThat(pair.wc.immData(0)).isEqualTo(9);
        }
    }

    @Test
    void shouldLoseNoWakeUpWhenCompletionsRaceTheArming() throws Exception
    {
        loseNoWakeUp(config, false, 3_000);
    }

    @Test
    void shouldLoseNoWakeUpThroughTheEventThreadAlone() throws Exception
    {
        loseNoWakeUp(config.withShmPollerDoorbells(false), false, 3_000);
    }

    @Test
    void shouldLoseNoWakeUpThroughTheDoorbellSocketAlone() throws Exception
    {
        // Unread doorbells pile up in the socket while the event thread is held: few messages, so that they fit (a
        // full socket makes the sender give the doorbell up after 10,000 yields, logged).
        loseNoWakeUp(config, true, 100);
    }

    @Test
    void shouldReleaseTheSocketOfAClosedConnectionThatItsChannelWatched() throws Exception
    {
        assumeTrue(Files.isDirectory(PROC_FDS), "needs /proc/self/fd");
        try (VerbsContext sender = new ShmVerbsProvider().open(config);
            VerbsContext receiver = new ShmVerbsProvider().open(config))
        {
            // Sockets are named by inode: those of earlier tests that close meanwhile do not count.
            final Set<String> before = openSockets();
            final Pair pair = connect(sender, receiver, 16);
            // One wait registers the doorbell socket with the channel's selector; then nobody waits any more (BUSY
            // after a sleep): a socket closed now would keep its descriptor until the next wait without socketClosed.
            assertThat(pair.channel.await(TimeUnit.MILLISECONDS.toNanos(1))).isZero();
            final Set<String> opened = openSockets();
            opened.removeAll(before);
            assertThat(opened).as("one socket per side").hasSize(2);
            pair.receiver.close();
            pair.sender.close();
            final long deadline = System.nanoTime() + LONG_WAIT_NANOS;
            Set<String> left;
            while (!(left = stillOpen(opened)).isEmpty() && System.nanoTime() < deadline)
            {
                Thread.sleep(10); // the event threads' selectors drop their keys within their 1 s select
            }
            assertThat(left).as("the connection's sockets open after both QPs closed").isEmpty();
        }
    }

    @Test
    void shouldForgetTheClosedSocketsOfAChannelThatNeverWaits() throws Exception
    {
        // A BUSY poller never waits, so never registers its connections' sockets: closing them must not leave them
        // queued for a registration that never comes (one per connection ever accepted).
        try (VerbsContext sender = new ShmVerbsProvider().open(config);
            VerbsContext receiver = new ShmVerbsProvider().open(config))
        {
            final Pair pair = connect(sender, receiver, 16);
            final ShmCompletionChannel channel = (ShmCompletionChannel)pair.channel;
            final long deadline = System.nanoTime() + LONG_WAIT_NANOS;
            while (channel.socketsToWatch() == 0 && System.nanoTime() < deadline)
            {
                Thread.sleep(1); // the event thread hands the socket over once it is non-blocking
            }
            assertThat(channel.socketsToWatch()).as("queued for the next wait").isEqualTo(1);
            pair.receiver.close();
            assertThat(channel.socketsToWatch()).as("queued after the QP closed").isZero();
        }
    }

    /** @return this process's open socket descriptors */
    /** @return this process's open sockets, as their descriptors' links read ({@code socket:[inode]}) */
    private static Set<String> openSockets() throws IOException
    {
        try (Stream<Path> fds = Files.list(PROC_FDS))
        {
            final Set<String> sockets = new HashSet<>();
            fds.forEach(fd ->
            {
                try
                {
                    final String link = Files.readSymbolicLink(fd).toString();
                    if (link.startsWith("socket:"))
                    {
                        sockets.add(link);
                    }
                }
                catch (final IOException ex)
                {
                    // closed while listing
                }
            });
            return sockets;
        }
    }

    /** @return those of {@code sockets} still open */
    private static Set<String> stillOpen(final Set<String> sockets) throws IOException
    {
        final Set<String> open = openSockets();
        open.retainAll(sockets);
        return open;
    }

    /**
     * The receiver sleeps whenever a poll finds nothing (arm, re-poll, wait), while the sender sends with random pauses,
     * so that messages land before, during and after the arming. Every message must arrive and every wait must end
     * with an event: a wait that times out is a lost wake-up.
     */
    private void loseNoWakeUp(final VerbsConfig receiverConfig, final boolean eventThreadBlocked, final int messages)
        throws Exception
    {
        final int window = 8;
        try (VerbsContext sender = new ShmVerbsProvider().open(config);
            VerbsContext receiver = new ShmVerbsProvider().open(receiverConfig))
        {
            final Pair pair = connect(sender, receiver, 2 * window);
            pair.postReceives(2 * window);
            final CountDownLatch release = new CountDownLatch(1);
            if (eventThreadBlocked)
            {
                blockEventThread(receiver, release);
            }
            try
            {
                final AtomicInteger received = new AtomicInteger();
                final CompletableFuture<Void> sending = CompletableFuture.runAsync(() ->
                {
                    final SplittableRandom random = new SplittableRandom(42);
                    for (int i = 0; i < messages; i++)
                    {
                        while (i - received.get() >= window)
                        {
                            Thread.yield();
                        }
                        pair.send(i);
                        for (int spin = random.nextInt(2_000); spin > 0; spin--)
                        {
                            Thread.onSpinWait();
                        }
                        if (random.nextInt(64) == 0)
                        {
                            Thread.yield();
                        }
                    }
                });
                int sleeps = 0;
                int emptyWaits = 0;
                int next = 0;
                while (next < messages)
                {
                    int n = pair.recvCq.poll(pair.wc);
                    if (n == 0)
                    {
                        pair.recvCq.requestNotify(false);
                        n = pair.recvCq.poll(pair.wc);
                        if (n == 0)
                        {
                            sleeps++;
                            if (pair.channel.await(LONG_WAIT_NANOS) == 0)
                            {
                                emptyWaits++;
                            }
                            continue;
                        }
                    }
                    for (int j = 0; j < n; j++)
                    {
                        assertThat(pair.wc.status(j)).isEqualTo(WcStatus.SUCCESS);
                        assertThat(pair.wc.immData(j)).as("messages arrive in order").isEqualTo(next);
                        next++;
                    }
                    pair.postReceives(n);
                    received.addAndGet(n);
                }
                sending.get(LONG_WAIT_NANOS, TimeUnit.NANOSECONDS);
                assertThat(next).isEqualTo(messages);
                assertThat(emptyWaits).as("waits that ended without an event (lost wake-ups), of " + sleeps).isZero();
                assertThat(sleeps).as("the receiver slept (the race was exercised)").isPositive();
            }
            finally
            {
                release.countDown();
            }
        }
    }

    private static int await(final CompletionChannel channel)
    {
        try
        {
            return channel.await(LONG_WAIT_NANOS);
        }
        catch (final IOException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    /** Returns once the event thread has read {@code count} doorbells for the CQ. */
    private static void awaitDoorbellsRead(final CompletionQueue cq, final long count) throws InterruptedException
    {
        final ShmCompletionQueue shmCq = (ShmCompletionQueue)cq;
        final long deadline = System.nanoTime() + LONG_WAIT_NANOS;
        while (shmCq.doorbellsRead() < count && System.nanoTime() < deadline)
        {
            Thread.sleep(1);
        }
        assertThat(shmCq.doorbellsRead()).as("doorbells the event thread read").isEqualTo(count);
    }

    /** Holds the context's event thread (it reads doorbells and signals channels) until {@code release}. */
    private static void blockEventThread(final VerbsContext context, final CountDownLatch release)
        throws InterruptedException
    {
        final CountDownLatch blocked = new CountDownLatch(1);
        ((ShmVerbsContext)context).eventLoop().execute(() ->
        {
            blocked.countDown();
            try
            {
                release.await();
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        });
        assertThat(blocked.await(LONG_WAIT_NANOS, TimeUnit.NANOSECONDS)).isTrue();
    }

    /** The receiving QP's CQ is bound to a channel; the sender's sends are unsignaled. */
    private static Pair connect(final VerbsContext sender, final VerbsContext receiver, final int maxRecvWr)
        throws Exception
    {
        final String name = "chan" + NAMES.incrementAndGet();
        final CompletionChannel channel = receiver.createCompletionChannel();
        final CompletionQueue recvCq = receiver.createCq(256, channel);
        try (ConnectionListener listener = receiver.listen(name, 1))
        {
            final CompletableFuture<QueuePair> accepted = CompletableFuture.supplyAsync(() ->
            {
                try
                {
                    final ConnectionRequest request = listener.accept(LONG_WAIT_NANOS);
                    return request.accept(new QueuePairAttributes().pd(receiver.allocPd()).sendCq(recvCq).recvCq(recvCq)
                        .maxRecvWr(maxRecvWr), null);
                }
                catch (final IOException ex)
                {
                    throw new IllegalStateException(ex);
                }
            });
            final CompletionQueue sendCq = sender.createCq(256, null);
            final QueuePair qp = sender.connect(name, new QueuePairAttributes().pd(sender.allocPd()).sendCq(sendCq)
                .recvCq(sendCq).maxRecvWr(1), null);
            final QueuePair receiving = accepted.get(LONG_WAIT_NANOS, TimeUnit.NANOSECONDS);
            return new Pair(qp, receiving, recvCq, channel);
        }
    }

    private static final class Pair
    {
        final QueuePair sender;
        final QueuePair receiver;
        final CompletionQueue recvCq;
        final CompletionChannel channel;
        final MemoryRegion sendRegion;
        final MemoryRegion recvRegion;
        final SendRequest send = new SendRequest();
        final RecvRequest recv = new RecvRequest();
        final WorkCompletions wc = new WorkCompletions(16);
        long recvIds;

        Pair(final QueuePair sender, final QueuePair receiver, final CompletionQueue recvCq,
            final CompletionChannel channel) throws IOException
        {
            this.sender = sender;
            this.receiver = receiver;
            this.recvCq = recvCq;
            this.channel = channel;
            this.sendRegion = sender.pd().allocate(64, Access.LOCAL_WRITE);
            this.recvRegion = receiver.pd().allocate(64, Access.LOCAL_WRITE);
        }

        void postReceives(final int count)
        {
            for (int i = 0; i < count; i++)
            {
                recv.wrId(recvIds++).setSge(recvRegion, 0, 64);
                assertThat(receiver.postRecv(recv)).isEqualTo(PostResult.OK);
            }
        }

        /** Sender thread: one unsignaled SEND_WITH_IMM carrying {@code imm}. */
        void send(final int imm)
        {
            send.reset().wrId(imm).opcode(WrOpcode.SEND_WITH_IMM).immData(imm).flags(0);
            send.setSge(sendRegion, 0, 16);
            assertThat(sender.postSend(send)).isEqualTo(PostResult.OK);
        }
    }
}
