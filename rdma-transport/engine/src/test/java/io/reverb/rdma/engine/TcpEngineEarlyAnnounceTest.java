package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.assertQuiescent;
import static io.reverb.rdma.engine.EngineTestSupport.await;
import static io.reverb.rdma.engine.EngineTestSupport.claimed;
import static io.reverb.rdma.engine.EngineTestSupport.fill;
import static io.reverb.rdma.engine.EngineTestSupport.isRendezvous;
import static io.reverb.rdma.engine.EngineTestSupport.send;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.WriteClaim;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Early announcement over tcp ({@link EngineConfig#announceAtClaim(boolean)}): a large message's RTS leaves at its
 * claim and the receiver grants while the claimant still writes. Every way the claim can meet the peer's answer —
 * commit after or before the CTS, abort after or before it, a REFUSE before the commit, teardown with the claim open
 * — ends with both sides' pool buffers, grants and budget back, counted; and the receiver's limits apply as before.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpEngineEarlyAnnounceTest
{
    private static final int LARGE = 300_000;

    private static EngineConfig config(final boolean early)
    {
        return EngineTestSupport.config(EngineFabric.TCP, PollingMode.ADAPTIVE).announceAtClaim(early);
    }

    private static EnginePair pair(final EngineConfig server, final EngineConfig client, final MessageHandler handler)
        throws Exception
    {
        return new EnginePair(EngineFabric.TCP, server, client, handler);
    }

    /** The server has granted the client's one announced rendezvous (its CTS is sent) and queues nothing. */
    private static boolean serverGranted(final EnginePair pair)
    {
        return pair.server.pendingRendezvous() == 1 && pair.server.queuedRendezvousRequests() == 0;
    }

    private static int outboundGranted(final Connection connection)
    {
        return ((EngineConnection)connection).outboundGranted();
    }

    @ParameterizedTest(name = "announceAtClaim={0}")
    @ValueSource(booleans = {true, false})
    void shouldDeliverLargeMessagesIntactWithAndWithoutEarlyAnnouncement(final boolean early) throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = pair(config(early), config(early), recorder))
        {
            final int[] sizes = {1025, 4096, 100_000, 1 << 20, 17, 3_000_000, 2000, 8 << 20, 1024};
            AbstractEngineMessagingTest.sendAndCheckIntact(pair.client, recorder, sizes);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().rendezvousMessagesSent()).isEqualTo(7);
            assertThat(pair.server.stats().rendezvousMessagesReceived()).isEqualTo(7);
            assertThat(pair.client.stats().rendezvousAbortsSent()).isZero();
            if (!early)
            {
                assertThat(pair.client.stats().rendezvousGrantedAtCommit()).isZero();
            }
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldGrantWhileTheClaimantWritesAndWriteAtTheCommit() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = pair(config(true), config(true), recorder))
        {
            final WriteClaim claim = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.OK);
            assertThat(isRendezvous(claim)).isTrue();
            // Nothing written yet, and the receiver has already granted it (at the commit, before).
            await("granted before the commit", () -> serverGranted(pair) && outboundGranted(pair.client) == 1);
            assertThat(recorder.count.get()).isZero();
            fill(claimed(claim), claim.offset(), LARGE, 0);
            claim.commit();
            await("delivered", () -> recorder.count.get() == 1);
            assertThat(new ArrayList<>(recorder.messages).get(0)).containsExactly(LARGE, 1);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().rendezvousMessagesSent()).isEqualTo(1);
            assertThat(pair.client.stats().rendezvousGrantedAtCommit()).isEqualTo(1);
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldWriteWithTheGrantWhenCommittedBeforeIt() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = pair(config(true), config(true), recorder))
        {
            pair.client.pauseReceiving(true); // the CTS waits in the client's receive slots
            final WriteClaim claim = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.OK);
            await("granted by the server", () -> serverGranted(pair));
            fill(claimed(claim), claim.offset(), LARGE, 0);
            claim.commit();
            assertThat(outboundGranted(pair.client)).isZero(); // the CTS is not in: the write waits for it
            send(pair.client, claim, 100, 1); // an eager message behind it waits too
            pair.client.pauseReceiving(false);
            await("delivered", () -> recorder.count.get() == 2);
            final List<long[]> got = new ArrayList<>(recorder.messages);
            assertThat(got.get(0)).containsExactly(LARGE, 1);
            assertThat(got.get(1)).containsExactly(100, 1);
            assertThat(pair.client.stats().rendezvousGrantedAtCommit()).isZero();
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldAbortAGrantedAnnouncementAndStayUsable() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = pair(config(true), config(true), recorder))
        {
            final WriteClaim claim = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.OK);
            await("CTS in", () -> outboundGranted(pair.client) == 1);
            claim.abort();
            assertThat(pair.client.stats().rendezvousAbortsSent()).isEqualTo(1); // at once: it was granted
            await("ABORT received", () -> pair.server.stats().rendezvousAbortsReceived() == 1);
            send(pair.client, claim, 64, 0);
            send(pair.client, claim, LARGE, 1);
            await("delivered", () -> recorder.count.get() == 2);
            final List<long[]> got = new ArrayList<>(recorder.messages);
            assertThat(got.get(0)).containsExactly(64, 1);
            assertThat(got.get(1)).containsExactly(LARGE, 1);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.client.stats().rendezvousMessagesSent()).isEqualTo(1);
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldKeepTheBufferOfAnAbortedAnnouncementUntilItsGrantAndThenAbortIt() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = pair(config(true), config(true), recorder))
        {
            pair.client.pauseReceiving(true); // the CTS waits in the client's receive slots
            final WriteClaim claim = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.OK);
            await("granted by the server", () -> serverGranted(pair));
            claim.abort();
            // Its RTS is unanswered here: the buffer cannot serve another message yet.
            assertThat(pair.client.poolBuffersInUse()).isEqualTo(1);
            assertThat(pair.client.stats().rendezvousAbortsSent()).isZero();
            pair.client.pauseReceiving(false);
            await("ABORT at the grant", () -> pair.server.stats().rendezvousAbortsReceived() == 1);
            assertThat(pair.client.stats().rendezvousAbortsSent()).isEqualTo(1);
            send(pair.client, claim, LARGE, 0);
            await("delivered", () -> recorder.count.get() == 1);
            assertThat(new ArrayList<>(recorder.messages).get(0)).containsExactly(LARGE, 1);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldFailAtTheCommitAMessageRefusedBeforeIt() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        final List<Throwable> failures = new CopyOnWriteArrayList<>();
        final List<Long> failedIds = new CopyOnWriteArrayList<>();
        try (EnginePair pair = pair(config(true).maxInboundMessageSize(LARGE - 1), config(true), recorder))
        {
            pair.client.setSendErrorHandler((id, length, cause) ->
            {
                failedIds.add(id);
                failures.add(cause);
            });
            final WriteClaim claim = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.OK);
            final long id = claim.token();
            // The REFUSE is in (the client no longer counts it announced) while the claimant still writes.
            await("refused before the commit", () -> pair.server.stats().rendezvousRefused() == 1 &&
                pair.client.pendingRendezvous() == 0);
            assertThat(pair.client.poolBuffersInUse()).isEqualTo(1); // still the claimant's
            fill(claimed(claim), claim.offset(), LARGE, 1);
            claim.commit();
            await("reported", () -> failures.size() == 1);
            assertThat(failedIds).containsExactly(id);
            assertThat(failures.get(0)).isInstanceOf(MessageRefusedException.class)
                .hasMessageContaining("maxInboundMessageSize of " + (LARGE - 1));
            // Refused again, and this time the claimant aborts: the buffer comes back, nothing is reported.
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.OK);
            await("refused again", () -> pair.server.stats().rendezvousRefused() == 2 &&
                pair.client.pendingRendezvous() == 0);
            claim.abort();
            send(pair.client, claim, LARGE - 1, 0); // the connection stays usable
            await("delivered", () -> recorder.count.get() == 1);
            assertThat(new ArrayList<>(recorder.messages).get(0)).containsExactly(LARGE - 1, 1);
            assertQuiescent(pair.client, pair.server);
            assertThat(failures).hasSize(1);
            assertThat(pair.client.stats().rendezvousAbortsSent()).isZero();
            assertThat(pair.client.isConnected()).isTrue();
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldLeaveAnOpenClaimToItsClaimantWhenTornDownAndReturnEverything() throws Exception
    {
        final AtomicInteger delivered = new AtomicInteger();
        final List<Long> failed = new CopyOnWriteArrayList<>();
        try (EnginePair pair = pair(config(true), config(true), (b, o, l) -> delivered.incrementAndGet()))
        {
            pair.client.setSendErrorHandler((id, length, cause) -> failed.add(id));
            final WriteClaim committed = new WriteClaim();
            final WriteClaim aborted = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, committed)).isEqualTo(Connection.OK);
            final long id = committed.token();
            await("CTS in", () -> outboundGranted(pair.client) == 1);
            assertThat(pair.client.tryClaim(LARGE, aborted)).isEqualTo(Connection.OK); // its RTS goes ahead too
            await("second granted", () -> pair.server.pendingRendezvous() == 2);
            pair.client.abort(new EngineException("test: torn down with claims open"));
            await("both sides closed", () -> pair.client.isClosed() && pair.server.isClosed());
            // Its claimant may still be writing: the buffers are still theirs.
            assertThat(pair.client.poolBuffersInUse()).isEqualTo(2);
            fill(claimed(committed), committed.offset(), LARGE, 5);
            committed.commit();
            aborted.abort();
            assertThat(failed).containsExactly(id);
            assertReleased(pair);
            assertThat(delivered.get()).isZero();
        }
    }

    @Test
    void shouldReturnAnAbandonedAnnouncementsBufferWhenTornDownBeforeItsGrant() throws Exception
    {
        final AtomicInteger delivered = new AtomicInteger();
        final List<Long> failed = new CopyOnWriteArrayList<>();
        try (EnginePair pair = pair(config(true), config(true), (b, o, l) -> delivered.incrementAndGet()))
        {
            pair.client.setSendErrorHandler((id, length, cause) -> failed.add(id));
            pair.client.pauseReceiving(true); // the CTS never reaches the client
            final WriteClaim claim = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.OK);
            await("granted by the server", () -> serverGranted(pair));
            claim.abort();
            assertThat(pair.client.poolBuffersInUse()).isEqualTo(1); // announced, unanswered
            pair.client.abort(new EngineException("test: torn down before the grant came in"));
            await("both sides closed", () -> pair.client.isClosed() && pair.server.isClosed());
            assertReleased(pair);
            assertThat(failed).isEmpty(); // its claimant gave it up: nothing to report
            assertThat(delivered.get()).isZero();
        }
    }

    @Test
    void shouldHoldTheWritesGrantedAfterAnOpenClaimUntilItCommits() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = pair(config(true), config(true), recorder))
        {
            final WriteClaim first = new WriteClaim();
            final WriteClaim second = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, first)).isEqualTo(Connection.OK);
            assertThat(pair.client.tryClaim(LARGE + 1, second)).isEqualTo(Connection.OK);
            fill(claimed(second), second.offset(), LARGE + 1, 1);
            second.commit();
            await("both granted", () -> outboundGranted(pair.client) == 2);
            assertThat(recorder.count.get()).isZero(); // the second waits behind the first, still open
            fill(claimed(first), first.offset(), LARGE, 0);
            first.commit();
            await("delivered", () -> recorder.count.get() == 2);
            final List<long[]> got = new ArrayList<>(recorder.messages);
            assertThat(got.get(0)).containsExactly(LARGE, 1);
            assertThat(got.get(1)).containsExactly(LARGE + 1, 1);
            assertQuiescent(pair.client, pair.server);
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldDeliverAnOpenClaimCommittedAfterAGracefulCloseBegan() throws Exception
    {
        final AbstractEngineMessagingTest.Recorder recorder = new AbstractEngineMessagingTest.Recorder();
        try (EnginePair pair = pair(config(true), config(true), recorder))
        {
            final WriteClaim claim = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.OK);
            await("CTS in", () -> outboundGranted(pair.client) == 1);
            final CompletableFuture<Void> closed = pair.client.closeAsync();
            fill(claimed(claim), claim.offset(), LARGE, 0);
            claim.commit();
            closed.get(60, TimeUnit.SECONDS);
            await("server side closed", () -> pair.server.isClosed());
            assertThat(recorder.count.get()).isEqualTo(1);
            assertThat(new ArrayList<>(recorder.messages).get(0)).containsExactly(LARGE, 1);
            assertReleased(pair);
            assertThat(pair.errors()).isEmpty();
        }
    }

    @Test
    void shouldCloseGracefullyOnceAnOpenClaimIsAbortedAndItsGrantReturned() throws Exception
    {
        final AtomicInteger delivered = new AtomicInteger();
        try (EnginePair pair = pair(config(true), config(true), (b, o, l) -> delivered.incrementAndGet()))
        {
            final WriteClaim claim = new WriteClaim();
            assertThat(pair.client.tryClaim(LARGE, claim)).isEqualTo(Connection.OK);
            await("CTS in", () -> outboundGranted(pair.client) == 1);
            final CompletableFuture<Void> closed = pair.client.closeAsync();
            claim.abort();
            closed.get(60, TimeUnit.SECONDS);
            await("both sides closed", () -> pair.client.isClosed() && pair.server.isClosed());
            assertReleased(pair);
            assertThat(pair.client.stats().rendezvousAbortsSent()).isEqualTo(1);
            assertThat(pair.server.stats().rendezvousAbortsReceived()).isEqualTo(1);
            assertThat(delivered.get()).isZero();
            assertThat(pair.errors()).isEmpty();
        }
    }

    /** After both sides closed: no pool buffer and no budget held on either engine. */
    private static void assertReleased(final EnginePair pair)
    {
        await(() -> "released: buffers " + pair.client.poolBuffersInUse() + "/" + pair.server.poolBuffersInUse() +
            ", budget " + pair.serverEngine.rendezvousMemoryReserved() + "/" +
            pair.clientEngine.rendezvousMemoryReserved(), () ->
            pair.client.poolBuffersInUse() == 0 && pair.server.poolBuffersInUse() == 0 &&
            pair.serverEngine.rendezvousMemoryReserved() == 0 && pair.clientEngine.rendezvousMemoryReserved() == 0);
    }
}
