package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.assertQuiescent;
import static io.reverb.rdma.engine.EngineTestSupport.await;
import static io.reverb.rdma.engine.EngineTestSupport.claimed;
import static io.reverb.rdma.engine.EngineTestSupport.awaitClaim;
import static io.reverb.rdma.engine.EngineTestSupport.check;
import static io.reverb.rdma.engine.EngineTestSupport.directMappingsOpen;
import static io.reverb.rdma.engine.EngineTestSupport.fill;
import static io.reverb.rdma.engine.EngineTestSupport.isRendezvous;
import static io.reverb.rdma.engine.EngineTestSupport.send;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.WriteClaim;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Direct writes over shm: the sender writes a large message straight into the receiver's granted buffer, which it
 * maps, and the fabric copies nothing (see {@link RendezvousSender}). Delivery with and without, order with eager
 * messages and other claims, every way a claim can end (commit, abort, never taken, connection closed or torn down)
 * with both sides' buffers, budgets and mappings back, and grants a hostile peer forges.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ShmEngineDirectWriteTest
{
    private static final int LARGE = 300_000;

    private static EngineConfig config(final boolean direct)
    {
        return EngineTestSupport.config(PollingMode.ADAPTIVE).directWrite(direct);
    }

    @ParameterizedTest(name = "directWrite={0}")
    @ValueSource(booleans = {true, false})
    void shouldDeliverLargeMessagesIntactWithAndWithoutDirectWrites(final boolean direct) throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = new EnginePair(config(direct), config(direct), recorder))
        {
            assertThat(((EngineConnection)pair.client).directWrite()).isEqualTo(direct);
            final int[] sizes = {1025, 4096, 100_000, 1 << 20, 17, 3_000_000, 2000, 8 << 20, 1024};
            AbstractEngineMessagingTest.sendAndCheckIntact(pair.client, recorder, sizes);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().rendezvousMessagesSent()).isEqualTo(7);
            assertThat(pair.client.stats().directWritesSent()).isEqualTo(direct ? 7 : 0);
            assertThat(pair.server.stats().rendezvousMessagesReceived()).isEqualTo(7);
            assertThat(pair.client.stats().rendezvousAbortsSent()).isZero();
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldDeliverEagerMessagesBehindDirectWritesInOrder() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = new EnginePair(config(true), config(true), recorder))
        {
            final int n = 150;
            final int[] sizes = new int[n];
            int large = 0;
            final WriteClaim claim = new WriteClaim();
            for (int i = 0; i < n; i++)
            {
                sizes[i] = i % 3 == 0 ? 50_000 + i : 100 + i;
                large += i % 3 == 0 ? 1 : 0;
                send(pair.client, claim, sizes[i], i);
            }
            await("all delivered", () -> recorder.count.get() == n);
            final List<long[]> got = new ArrayList<>(recorder.messages);
            for (int i = 0; i < n; i++)
            {
                assertThat(got.get(i)[0]).as("length of message " + i).isEqualTo(sizes[i]);
                assertThat(got.get(i)[1]).as("content (and so order) of message " + i).isEqualTo(1);
            }
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().directWritesSent()).isEqualTo(large);
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldLetAnotherClaimGoFirstByGivingUpAnAnnouncedDirectWrite() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = new EnginePair(config(true), config(true), recorder))
        {
            final WriteClaim large = new WriteClaim();
            final WriteClaim small = new WriteClaim();
            // Announced (RTS sent), not claimed: then a small message is claimed first. Whether the grant has come
            // back by then is a race with the receiver's poller; both ways the announcement is given up (ABORT at
            // once, or when its CTS arrives) and the retry goes after the small message. The retry copies while the
            // given-up announcement is still in flight, and is written directly once it is not: either is right.
            assertThat(pair.client.tryClaim(LARGE, large)).isEqualTo(Connection.BACK_PRESSURED);
            send(pair.client, small, 100, 0);
            send(pair.client, large, LARGE, 1);
            await("both delivered", () -> recorder.count.get() == 2);
            final List<long[]> got = new ArrayList<>(recorder.messages);
            assertThat(got.get(0)).containsExactly(100, 1);
            assertThat(got.get(1)).containsExactly(LARGE, 1);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().rendezvousAbortsSent()).isEqualTo(1);
            await("ABORT received", () -> pair.server.stats().rendezvousAbortsReceived() == 1);
            final long directBefore = pair.client.stats().directWritesSent();
            assertThat(directBefore).isBetween(0L, 1L);
            assertThat(pair.client.stats().rendezvousMessagesSent()).isEqualTo(1);
            // Once nothing is in flight, large messages are written directly again.
            send(pair.client, large, LARGE, 2);
            await("third delivered", () -> recorder.count.get() == 3);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().directWritesSent()).isEqualTo(directBefore + 1);
            assertThat(new ArrayList<>(recorder.messages).get(2)).containsExactly(LARGE, 1);
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldAbortAGrantedAnnouncementAtOnceWhenAnotherClaimGoesFirst() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = new EnginePair(config(true), config(true), recorder))
        {
            final WriteClaim large = new WriteClaim();
            final WriteClaim small = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, large)).isEqualTo(Connection.BACK_PRESSURED);
            await("grant mapped", () -> directMappingsOpen(pair.client) == 1);
            // The grant is here: the small claim gives it up with an ABORT inside the claim, before its own commit.
            send(pair.client, small, 100, 0);
            assertThat(pair.client.stats().rendezvousAbortsSent()).isEqualTo(1);
            assertThat(directMappingsOpen(pair.client)).isZero();
            await("ABORT received", () -> pair.server.stats().rendezvousAbortsReceived() == 1);
            // Nothing is in flight any more: the retry is written directly into a fresh grant.
            send(pair.client, large, LARGE, 1);
            await("both delivered", () -> recorder.count.get() == 2);
            final List<long[]> got = new ArrayList<>(recorder.messages);
            assertThat(got.get(0)).containsExactly(100, 1);
            assertThat(got.get(1)).containsExactly(LARGE, 1);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().directWritesSent()).isEqualTo(1);
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldKeepEachSendersOrderWhenLargeAndSmallMessagesAreClaimedConcurrently() throws Exception
    {
        final ConcurrentLinkedQueue<long[]> received = new ConcurrentLinkedQueue<>();
        final AtomicInteger count = new AtomicInteger();
        final MessageHandler handler = (buffer, offset, length) ->
        {
            final long tag = buffer.getLong(offset);
            received.add(new long[] {tag, length, checkTagged(buffer, offset, length, tag) ? 1 : 0});
            count.incrementAndGet();
        };
        try (EnginePair pair = new EnginePair(config(true), config(true), handler))
        {
            final int perThread = 60;
            final List<Throwable> failures = new CopyOnWriteArrayList<>();
            final List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 2; t++)
            {
                final int thread = t;
                threads.add(new Thread(() ->
                {
                    try
                    {
                        final WriteClaim claim = new WriteClaim();
                        for (int i = 0; i < perThread; i++)
                        {
                            final int length = thread == 0 ? 40_000 + i * 7 : 64 + i;
                            sendTagged(pair.client, claim, length, ((long)thread << 32) | i);
                        }
                    }
                    catch (final Throwable e)
                    {
                        failures.add(e);
                    }
                }, "sender-" + t));
            }
            threads.forEach(Thread::start);
            for (final Thread thread : threads)
            {
                thread.join(TimeUnit.SECONDS.toMillis(60));
            }
            assertThat(failures).isEmpty();
            await("all delivered", () -> count.get() == 2 * perThread);
            final int[] next = new int[2];
            for (final long[] message : received)
            {
                final int thread = (int)(message[0] >>> 32);
                assertThat((int)message[0]).as("sequence of sender " + thread).isEqualTo(next[thread]++);
                assertThat(message[2]).as("content of " + Long.toHexString(message[0])).isEqualTo(1);
            }
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().rendezvousAbortsSent()).isEqualTo(pair.server.stats().rendezvousAbortsReceived());
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldCallWritableOnceTheGrantIsMapped() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = new EnginePair(config(true), config(true), recorder))
        {
            final WriteClaim claim = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.BACK_PRESSURED);
            final CountDownLatch writable = new CountDownLatch(1);
            pair.client.onWritable(writable::countDown);
            assertThat(writable.await(30, TimeUnit.SECONDS)).isTrue();
            // Woken by progress (the RTS's send completion may come first): retry as rpc-core does, until granted.
            awaitClaim(pair.client, claim, LARGE);
            fill(claimed(claim), claim.offset(), LARGE, 0);
            claim.commit();
            await("delivered", () -> recorder.count.get() == 1);
            assertThat(new ArrayList<>(recorder.messages).get(0)).containsExactly(LARGE, 1);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().directWritesSent()).isEqualTo(1);
        }
    }

    @Test
    void shouldHoldADirectWriteBackWhileTheReceiverHasNoMemoryAndResumeWhenItHas() throws Exception
    {
        final int size = 200_000; // size class 256 KiB
        final List<RetainedMessage> held = new ArrayList<>();
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        final EngineConfig serverConfig = config(true).maxInboundMessageSize(256 * 1024).maxOutboundMessageSize(256 * 1024)
            .rendezvousPoolBytes(512 * 1024); // two buffers
        try (EnginePair pair = new EnginePair(serverConfig, config(true), c -> c.setHandler((buffer, offset, length) ->
        {
            recorder.onMessage(buffer, offset, length);
            synchronized (held)
            {
                held.add(c.retain()); // the receiver's pool runs dry after two messages
            }
        })))
        {
            final WriteClaim claim = new WriteClaim();
            send(pair.client, claim, size, 0);
            send(pair.client, claim, size, 1);
            await("two delivered and held", () -> recorder.count.get() == 2 && pair.server.poolBuffersInUse() == 2);
            assertThat(pair.client.tryClaim(size, claim)).isEqualTo(Connection.BACK_PRESSURED);
            await("third announced and queued at the receiver", () -> pair.server.queuedRendezvousRequests() == 1);
            assertThat(pair.client.tryClaim(size, claim)).as("no grant, no claim").isEqualTo(Connection.BACK_PRESSURED);
            synchronized (held)
            {
                held.forEach(RetainedMessage::release);
                held.clear();
            }
            awaitClaim(pair.client, claim, size);
            fill(claimed(claim), claim.offset(), size, 2);
            claim.commit();
            await("third delivered", () -> recorder.count.get() == 3);
            synchronized (held)
            {
                held.forEach(RetainedMessage::release);
                held.clear();
            }
            assertThat(recorder.messages).extracting(m -> m[1]).containsOnly(1L);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().directWritesSent()).isEqualTo(3);
        }
    }

    @Test
    void shouldGiveBackAGrantWhoseClaimantDoesNotComeBackBeforeThePeerDropsTheConnection() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        final long timeout = TimeUnit.SECONDS.toNanos(2);
        try (EnginePair pair = new EnginePair(config(true).rendezvousWriteTimeoutNanos(timeout),
            config(true).rendezvousWriteTimeoutNanos(timeout), recorder))
        {
            final WriteClaim claim = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.BACK_PRESSURED);
            await("grant mapped", () -> directMappingsOpen(pair.client) == 1);
            // Nobody retries: after half the write timeout the sender gives the grant back (ABORT), so the receiver,
            // which drops a peer holding a grant for the whole timeout, has nothing to drop it for.
            await("grant given back", () -> pair.server.stats().rendezvousAbortsReceived() == 1);
            assertThat(pair.client.stats().rendezvousAbortsSent()).isEqualTo(1);
            assertThat(pair.server.pendingRendezvous()).isZero();
            assertThat(directMappingsOpen(pair.client)).isZero();
            assertThat(pair.client.isConnected()).isTrue();
            send(pair.client, claim, LARGE, 0); // a late retry announces again
            await("delivered", () -> recorder.count.get() == 1);
            assertThat(new ArrayList<>(recorder.messages).get(0)).containsExactly(LARGE, 1);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.isConnected()).isTrue();
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldReturnTheGrantWhenAClaimedDirectWriteIsAborted() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = new EnginePair(config(true), config(true), recorder))
        {
            final WriteClaim claim = new WriteClaim();
            awaitClaim(pair.client, claim, LARGE);
            assertThat(isRendezvous(claim)).isTrue();
            assertThat(directMappingsOpen(pair.client)).isEqualTo(1);
            fill(claimed(claim), claim.offset(), LARGE, 99);
            claim.abort();
            send(pair.client, claim, 64, 0);
            send(pair.client, claim, LARGE, 1);
            await("delivered", () -> recorder.count.get() == 2);
            final List<long[]> got = new ArrayList<>(recorder.messages);
            assertThat(got.get(0)).containsExactly(64, 1);
            assertThat(got.get(1)).containsExactly(LARGE, 1);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().rendezvousAbortsSent()).isEqualTo(1);
            assertThat(pair.server.stats().rendezvousAbortsReceived()).isEqualTo(1);
            assertThat(pair.client.stats().directWritesSent()).isEqualTo(1);
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldGiveBackAGrantedAnnouncementWhenTheConnectionClosesGracefully() throws Exception
    {
        final AtomicInteger delivered = new AtomicInteger();
        try (EnginePair pair = new EnginePair(config(true), config(true), (b, o, l) -> delivered.incrementAndGet()))
        {
            final WriteClaim claim = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.BACK_PRESSURED);
            await("grant mapped", () -> directMappingsOpen(pair.client) == 1);
            pair.client.close();
            await("both sides closed", () -> pair.client.isClosed() && pair.server.isClosed());
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.CLOSED);
            assertReleased(pair);
            assertThat(pair.server.stats().rendezvousAbortsReceived()).isEqualTo(1);
            assertThat(delivered.get()).isZero();
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldAbortAnAnnouncementWhoseGrantArrivesAfterTheCloseBegan() throws Exception
    {
        final AtomicInteger delivered = new AtomicInteger();
        try (EnginePair pair = new EnginePair(config(true), config(true), (b, o, l) -> delivered.incrementAndGet()))
        {
            final WriteClaim claim = new WriteClaim();
            pair.client.pauseReceiving(true); // the grant waits in the client's receive slots
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.BACK_PRESSURED);
            await("granted by the server", () -> pair.server.pendingRendezvous() == 1 &&
                pair.server.queuedRendezvousRequests() == 0);
            pair.client.closeAsync();
            assertThat(directMappingsOpen(pair.client)).isZero();
            pair.client.pauseReceiving(false);
            await("both sides closed", () -> pair.client.isClosed() && pair.server.isClosed());
            assertReleased(pair);
            assertThat(pair.client.stats().rendezvousAbortsSent()).isEqualTo(1);
            assertThat(pair.server.stats().rendezvousAbortsReceived()).isEqualTo(1);
            assertThat(delivered.get()).isZero();
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldKeepAClaimedGrantWritableUntilItsCommitWhenTheConnectionIsTornDown() throws Exception
    {
        final AtomicInteger delivered = new AtomicInteger();
        final List<Long> failed = new CopyOnWriteArrayList<>();
        try (EnginePair pair = new EnginePair(config(true), config(true), (b, o, l) -> delivered.incrementAndGet()))
        {
            pair.client.setSendErrorHandler((id, length, cause) -> failed.add(id));
            final WriteClaim claim = new WriteClaim();
            awaitClaim(pair.client, claim, LARGE);
            final long id = claim.token();
            pair.client.abort(new EngineException("test: torn down with a claim open"));
            await("both sides closed", () -> pair.client.isClosed() && pair.server.isClosed());
            // The grant is still mapped for its writer: writing now is harmless (the receiver no longer reads it).
            assertThat(directMappingsOpen(pair.client)).isEqualTo(1);
            fill(claimed(claim), claim.offset(), LARGE, 5);
            claim.commit();
            assertThat(failed).containsExactly(id);
            assertReleased(pair);
            assertThat(delivered.get()).isZero();
        }
    }

    @Test
    void shouldWaitForAnOpenClaimBeforeClosingGracefullyAndDeliverIt() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = new EnginePair(config(true), config(true), recorder))
        {
            final WriteClaim claim = new WriteClaim();
            awaitClaim(pair.client, claim, LARGE);
            final CompletableFuture<Void> closed = pair.client.closeAsync();
            fill(claimed(claim), claim.offset(), LARGE, 0);
            claim.commit();
            closed.get(60, TimeUnit.SECONDS);
            await("server side closed", () -> pair.server.isClosed());
            assertThat(recorder.count.get()).isEqualTo(1);
            assertThat(new ArrayList<>(recorder.messages).get(0)).containsExactly(LARGE, 1);
            assertReleased(pair);
            assertThat(pair.client.stats().directWritesSent()).isEqualTo(1);
            assertThat(pair.errors()).isEmpty();
        }
    }

    /** After both sides closed: no mapping, no pool buffer, no budget held on either engine. */
    private static void assertReleased(final EnginePair pair)
    {
        await(() -> "released: client mappings " + directMappingsOpen(pair.client) + ", buffers " +
            pair.client.poolBuffersInUse() + "/" + pair.server.poolBuffersInUse() + ", server budget " +
            pair.serverEngine.rendezvousMemoryReserved(), () ->
            directMappingsOpen(pair.client) == 0 && pair.client.poolBuffersInUse() == 0 &&
            pair.server.poolBuffersInUse() == 0 && pair.serverEngine.rendezvousMemoryReserved() == 0 &&
            pair.clientEngine.rendezvousMemoryReserved() == 0);
    }

    private static void sendTagged(final Connection connection, final WriteClaim claim, final int length, final long tag)
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        int rc;
        while ((rc = connection.tryClaim(length, claim)) != Connection.OK)
        {
            assertThat(rc).as("tryClaim").isEqualTo(Connection.BACK_PRESSURED);
            assertThat(System.nanoTime() - deadline).as("back-pressured too long").isNegative();
            Thread.yield();
        }
        final UnsafeBuffer out = claimed(claim);
        out.putLong(claim.offset(), tag);
        fill(out, claim.offset() + 8, length - 8, tag);
        claim.commit();
    }

    private static boolean checkTagged(final DirectBuffer buffer, final int offset, final int length, final long tag)
    {
        return length >= 8 && check(buffer, offset + 8, length - 8, tag);
    }
}
