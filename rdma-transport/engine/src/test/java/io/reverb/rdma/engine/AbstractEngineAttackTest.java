package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.assertQuiescent;
import static io.reverb.rdma.engine.EngineTestSupport.await;
import static io.reverb.rdma.engine.EngineTestSupport.send;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionRejectedException;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.VerbsProviders;
import io.reverb.rdma.verbs.WrOpcode;
import io.reverb.common.WriteClaim;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 13 replayed against a live server, one subclass per transport: hostile handshakes (item 1), idle
 * sockets and connection storms (item 2), replayed and forged authentication (item 5). After each attack
 * the server must still serve a well-behaved client (a connection made before the attack, and one made
 * after it), hold no connection of the attacker, stay within bounded memory, and have logged a bounded
 * number of lines however many attempts there were.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class AbstractEngineAttackTest
{
    protected static final byte[] TOKEN = "attack-test-token-0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    /** Lines the whole server side may log during one attack, however many attempts it makes. */
    protected static final int MAX_LOG_LINES = 40;

    protected RdmaEngine server;
    protected RdmaEngine client;
    protected EngineListener listener;
    protected Connection established;
    protected final AtomicLong delivered = new AtomicLong();
    private PrintStream originalErr;
    private LineCounter lines;

    /** @return the verbs provider scheme. */
    protected abstract String scheme();

    /** @return an address the server may listen on. */
    protected abstract String listenAddress();

    /** @return verbs settings of both sides. */
    protected abstract VerbsConfig verbsConfig();

    /**
     * Opens sockets to the listener that never complete a handshake.
     *
     * @param address the listener.
     * @param n       how many.
     * @return them, to close.
     */
    protected abstract List<Closeable> idleSockets(String address, int n) throws IOException;

    /**
     * Sends provider handshakes whose values would size something absurd (item 1), each on its own socket.
     *
     * @param address the listener.
     * @return how many were sent.
     */
    protected abstract int sendOversizeProviderHandshakes(String address) throws IOException;

    /**
     * Counts the lines written, leaving out those that continue a record (a stack trace's frames start with a tab): the
     * bound is on what is logged per event, and one warning with its stack (the poller watchdog's, on a slow host such
     * as a VM under emulation) is one record, not thirty.
     */
    private static final class LineCounter extends OutputStream
    {
        final AtomicLong count = new AtomicLong();
        final OutputStream target;
        private boolean lineStart = true;
        private boolean continuation;

        LineCounter(final OutputStream target)
        {
            this.target = target;
        }

        private synchronized void count(final int b)
        {
            if (lineStart)
            {
                continuation = b == '\t';
                lineStart = false;
            }
            if (b == '\n')
            {
                if (!continuation)
                {
                    count.incrementAndGet();
                }
                lineStart = true;
            }
        }

        @Override
        public void write(final int b) throws IOException
        {
            count(b);
            target.write(b);
        }

        @Override
        public void write(final byte[] b, final int off, final int len) throws IOException
        {
            for (int i = off; i < off + len; i++)
            {
                count(b[i]);
            }
            target.write(b, off, len);
        }
    }

    protected EngineConfig engineConfig(final String name)
    {
        return EngineTestSupport.config(PollingMode.EVENT).verbsConfig(verbsConfig()).name(name);
    }

    @BeforeEach
    void startServer() throws IOException
    {
        originalErr = System.err;
        lines = new LineCounter(originalErr);
        System.setErr(new PrintStream(lines, true));
        // The default error handler (ErrorLog on LogLimiter: rate-limited, one line per refusal) logs to System.err here.
        server = RdmaEngine.open(scheme(), engineConfig("attacked").authToken(TOKEN).maxConnections(6));
        client = RdmaEngine.open(scheme(), engineConfig("good").authToken(TOKEN));
        listener = server.listen(listenAddress(), c -> c.setHandler((buffer, offset, length) -> delivered.incrementAndGet()));
        established = client.connect(listener.address());
        assertServes(established);
    }

    @AfterEach
    void stopServer()
    {
        try
        {
            // Null where set-up was skipped (a provider not available here).
            if (client != null)
            {
                client.close();
            }
            if (server != null)
            {
                server.close();
            }
        }
        finally
        {
            System.setErr(originalErr);
        }
    }

    /** One message over the connection, delivered to the server. */
    protected void assertServes(final Connection connection)
    {
        final long expected = delivered.get() + 1;
        send(connection, new WriteClaim(), 64, expected);
        await("message delivered through " + connection.remoteAddress(), () -> delivered.get() >= expected);
    }

    /** The server serves the connection made before the attack and a new one, and holds nothing else. */
    protected void assertStillServing() throws IOException
    {
        assertServes(established);
        final Connection fresh = client.connect(listener.address());
        assertServes(fresh);
        fresh.close();
        await("only the well-behaved connection left", () -> server.connections().size() == 1);
        assertThat(lines.count.get()).as("lines logged during the attack").isLessThanOrEqualTo(MAX_LOG_LINES);
    }

    private static long usedHeapAfterGc()
    {
        for (int i = 0; i < 3; i++)
        {
            System.gc();
        }
        final Runtime runtime = Runtime.getRuntime();
        return runtime.totalMemory() - runtime.freeMemory();
    }

    // ------------------------------------------------------------------------------------------------
    // Item 1: values from a peer are checked before anything is sized from them
    // ------------------------------------------------------------------------------------------------

    @Test
    void shouldRefuseProviderHandshakesThatWouldSizeAbsurdQueues() throws Exception
    {
        final long heapBefore = usedHeapAfterGc();
        int sent = 0;
        for (int round = 0; round < 10; round++)
        {
            sent += sendOversizeProviderHandshakes(listener.address());
        }
        assertThat(sent).isGreaterThanOrEqualTo(10);
        assertStillServing();
        // One 2^27-deep queue was 2 GiB of heap (OutOfMemoryError on the accept thread).
        assertThat(usedHeapAfterGc() - heapBefore).as("heap kept by the attack").isLessThan(64L << 20);
    }

    @Test
    void shouldRefuseEnginePrivateDataOutsideTheLimits() throws Exception
    {
        final int[][] geometries = {
            {1 << 30, 1024, 1 << 20}, {EngineConfig.MAX_RECEIVE_SLOTS + 1, 1024, 1 << 20}, {3, 1024, 1 << 20},
            {16, -1, 1 << 20}, {16, Integer.MAX_VALUE, 1 << 20}, {16, 1024, -1}, {16, 1024, Integer.MAX_VALUE}};
        try (VerbsContext raw = VerbsProviders.forScheme(scheme()).open(verbsConfig()))
        {
            for (final int[] g : geometries)
            {
                final ByteBuffer request = rawRequest(raw, new byte[Handshake.NONCE_LENGTH]);
                request.putInt(8, g[0]).putInt(12, g[1]).putInt(16, g[2]);
                assertThatThrownBy(() -> rawConnect(raw, request))
                    .isInstanceOf(ConnectionRejectedException.class)
                    .satisfies(t -> assertThat(Handshake.fromReject(((ConnectionRejectedException)t).privateData(), "x").reason())
                        .isEqualTo(HandshakeException.Reason.GEOMETRY));
            }
        }
        // the listener counts a refusal after sending the reject the client has already seen
        await("every refusal counted", () -> listener.refusedCount() == geometries.length);
        assertStillServing();
    }

    // ------------------------------------------------------------------------------------------------
    // Item 2: idle sockets cannot stall the listener; a connection storm meets a cap and a clear error
    // ------------------------------------------------------------------------------------------------

    @Test
    void shouldServeNewClientsWhileIdleSocketsAreOpen() throws Exception
    {
        final List<Closeable> idle = idleSockets(listener.address(), 20);
        try
        {
            // Three idle sockets once stopped every new client for good; here 20 are open (more than the
            // pending-handshake cap of 8: the extra ones are closed at once) and a new client gets through.
            assertStillServing();
        }
        finally
        {
            for (final Closeable c : idle)
            {
                c.close();
            }
        }
    }

    @Test
    void shouldRefuseConnectionsBeyondTheCapWithAClearError() throws Exception
    {
        final List<Connection> storm = new ArrayList<>();
        HandshakeException refused = null;
        for (int i = 0; i < 10 && refused == null; i++)
        {
            try
            {
                storm.add(client.connect(listener.address()));
            }
            catch (final HandshakeException ex)
            {
                refused = ex;
            }
        }
        assertThat(storm).hasSize(5); // with the established one: the cap of 6
        assertThat(refused).isNotNull();
        assertThat(refused.reason()).isEqualTo(HandshakeException.Reason.UNAVAILABLE);
        assertThat(refused.getMessage()).contains("connection limit reached (6)");
        for (final Connection c : storm)
        {
            c.close();
        }
        assertStillServing();
    }

    // ------------------------------------------------------------------------------------------------
    // Item 5: a captured handshake is useless; a wrong token gets nowhere
    // ------------------------------------------------------------------------------------------------

    @Test
    void shouldRefuseReplayedAndForgedProofs() throws Exception
    {
        final int attempts = 30;
        try (VerbsContext raw = VerbsProviders.forScheme(scheme()).open(verbsConfig()))
        {
            // What an eavesdropper kept from an earlier good handshake: its request bytes and the proof that followed.
            final ByteBuffer captured = Handshake.encodeRequest(server.config(), new byte[Handshake.NONCE_LENGTH], 0, 0,
                Handshake.VERSION);
            final ByteBuffer capturedAccept = Handshake.encodeAccept(server.config(), captured, TOKEN, new byte[16]);
            final long[] proof = Handshake.proofWords(Handshake.connectorProof(TOKEN, captured, capturedAccept));
            for (int i = 0; i < attempts; i++)
            {
                final ByteBuffer request = rawRequest(raw, new byte[Handshake.NONCE_LENGTH]);
                final Raw attacker = rawConnect(raw, request);
                attacker.sendProof(proof[0], proof[1]);
                final long refusedBefore = i;
                await("replay " + i + " refused", () -> listener.refusedCount() > refusedBefore);
                attacker.close();
            }
        }
        try (RdmaEngine wrong = RdmaEngine.open(scheme(), engineConfig("wrong").authToken("guess")))
        {
            assertThatThrownBy(() -> wrong.connect(listener.address())).isInstanceOf(HandshakeException.class)
                .hasMessageContaining("authentication token mismatch");
        }
        try (RdmaEngine none = RdmaEngine.open(scheme(), engineConfig("none")))
        {
            assertThatThrownBy(() -> none.connect(listener.address())).isInstanceOf(HandshakeException.class)
                .hasMessageContaining("authentication token required");
        }
        assertThat(listener.acceptedCount()).as("only well-behaved connections admitted").isEqualTo(1);
        assertStillServing();
    }

    // ------------------------------------------------------------------------------------------------
    // Item 3: rendezvous announcements cannot exhaust memory or freeze the poller
    // ------------------------------------------------------------------------------------------------

    private static final int MIB = 1 << 20;

    /** A server for the rendezvous attacks: 1 MiB messages, 2 MiB per connection, 4 MiB for all connections. */
    private EngineConfig rendezvousServerConfig(final long budget)
    {
        return engineConfig("rv-server").maxInboundMessageSize(MIB).maxOutboundMessageSize(MIB)
            .rendezvousPoolBytes(2L * MIB).rendezvousMemoryBytes(budget);
    }

    /**
     * Peers that announce many large messages at once, without waiting for grants: the copying path (over shm a
     * direct write is claimed only once granted, one announcement at a time; hostile grants: ShmDirectWriteGrantTest).
     */
    private EngineConfig rendezvousClientConfig(final String name)
    {
        return engineConfig(name).maxInboundMessageSize(MIB).maxOutboundMessageSize(MIB).rendezvousPoolBytes(8L * MIB)
            .directWrite(false);
    }

    private static int serverQueued(final RdmaEngine engine)
    {
        return engine.connections().stream().mapToInt(Connection::queuedRendezvousRequests).sum();
    }

    /** Blocks the engine's (single) poller thread until the latch opens: its connections answer nothing. */
    private static CountDownLatch freezePoller(final Connection connection)
    {
        final CountDownLatch frozen = new CountDownLatch(1);
        final CountDownLatch thaw = new CountDownLatch(1);
        connection.onWritable(() ->
        {
            frozen.countDown();
            try
            {
                thaw.await();
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        });
        await("poller frozen", () -> frozen.getCount() == 0);
        return thaw;
    }

    @Test
    void shouldBoundRendezvousMemoryWhenPeersAnnounceAndNeverWrite() throws Exception
    {
        final long budget = 4L * MIB;
        final AtomicLong rvDelivered = new AtomicLong();
        final AtomicLong corrupt = new AtomicLong();
        try (RdmaEngine rvServer = RdmaEngine.open(scheme(), rendezvousServerConfig(budget));
             RdmaEngine attackers = RdmaEngine.open(scheme(), rendezvousClientConfig("rv-attackers"));
             RdmaEngine good = RdmaEngine.open(scheme(), rendezvousClientConfig("rv-good")))
        {
            final EngineListener rvListener = rvServer.listen(listenAddress(), c -> c.setHandler((buffer, offset, length) ->
            {
                if (length > 64 && !EngineTestSupport.check(buffer, offset, length, 7))
                {
                    corrupt.incrementAndGet();
                }
                rvDelivered.incrementAndGet();
            }));
            final Connection goodConnection = good.connect(rvListener.address());
            final List<Connection> hostile = new ArrayList<>();
            for (int i = 0; i < 5; i++)
            {
                hostile.add(attackers.connect(rvListener.address()));
            }
            // The attackers announce and never write: their poller never sees a CTS.
            final CountDownLatch thaw = freezePoller(hostile.get(0));
            try
            {
                final WriteClaim claim = new WriteClaim();
                for (final Connection c : hostile)
                {
                    for (int i = 0; i < EngineConnection.MAX_PIPELINED_RENDEZVOUS; i++)
                    {
                        send(c, claim, MIB, i);
                    }
                }
                // 40 announced MiB: four granted (the budget), the other 36 wait; nothing beyond the budget.
                await("the budget granted and the rest queued",
                    () -> rvServer.rendezvousMemoryReserved() == budget && serverQueued(rvServer) == 36);
                assertThat(rvServer.rendezvousMemoryPeak()).isLessThanOrEqualTo(budget);
                for (final Connection c : rvServer.connections())
                {
                    assertThat(c.pendingRendezvous()).isLessThanOrEqualTo(EngineConnection.MAX_PIPELINED_RENDEZVOUS);
                }
                // The poller still serves: an eager message goes through at once...
                send(goodConnection, claim, 64, 1);
                await("eager message delivered during the attack", () -> rvDelivered.get() == 1);
                // ...and a large one waits for the budget (no allocation, no refusal) until the attackers leave.
                send(goodConnection, claim, MIB, 7);
                await("the good rendezvous waits for the budget", () -> serverQueued(rvServer) == 37 &&
                    rvServer.stats().rendezvousBudgetWaits() > 0);
                assertThat(rvDelivered.get()).isEqualTo(1);
                for (final Connection c : hostile)
                {
                    c.abort(new EngineException("attacker leaves without writing"));
                }
                // Their budget comes back, and the waiting connection (not one that released) is woken.
                await("the good rendezvous delivered once the attackers left", () -> rvDelivered.get() == 2);
            }
            finally
            {
                thaw.countDown();
            }
            assertThat(corrupt.get()).isZero();
            await("only the good connection left", () -> rvServer.connections().size() == 1);
            assertThat(rvServer.rendezvousMemoryPeak()).isLessThanOrEqualTo(budget);
            // What the attackers made the server register is gone; the good connection keeps one idle buffer.
            await("attackers' memory returned", () -> rvServer.rendezvousMemoryReserved() <= MIB);
            goodConnection.close();
            await("every buffer returned", () -> rvServer.connections().isEmpty() && rvServer.rendezvousMemoryReserved() == 0);
        }
        assertStillServing();
    }

    @Test
    void shouldDropPeersThatHoldGrantedMemoryWithoutWriting() throws Exception
    {
        final long budget = 4L * MIB;
        final AtomicLong rvDelivered = new AtomicLong();
        // Attackers that never leave: the write timeout drops them (counted by the connections left, not timed).
        try (RdmaEngine rvServer = RdmaEngine.open(scheme(), rendezvousServerConfig(budget)
                .rendezvousWriteTimeoutNanos(TimeUnit.SECONDS.toNanos(3)));
             RdmaEngine attackers = RdmaEngine.open(scheme(), rendezvousClientConfig("rv-attackers"));
             RdmaEngine good = RdmaEngine.open(scheme(), rendezvousClientConfig("rv-good")))
        {
            final EngineListener rvListener = rvServer.listen(listenAddress(),
                c -> c.setHandler((buffer, offset, length) -> rvDelivered.incrementAndGet()));
            final Connection goodConnection = good.connect(rvListener.address());
            final List<Connection> hostile = new ArrayList<>();
            for (int i = 0; i < 3; i++)
            {
                hostile.add(attackers.connect(rvListener.address()));
            }
            final CountDownLatch thaw = freezePoller(hostile.get(0));
            try
            {
                final WriteClaim claim = new WriteClaim();
                for (final Connection c : hostile)
                {
                    for (int i = 0; i < EngineConnection.MAX_PIPELINED_RENDEZVOUS; i++)
                    {
                        send(c, claim, MIB, i);
                    }
                }
                await("the budget held by the attackers", () -> rvServer.rendezvousMemoryReserved() == budget);
                // Every attacker holding a grant is dropped in turn; the others then get grants and are dropped too.
                await("the attackers dropped", () -> rvServer.connections().size() == 1);
                await("their memory returned", () -> rvServer.rendezvousMemoryReserved() == 0);
                send(goodConnection, claim, MIB, 9);
                await("a large message of the good connection delivered", () -> rvDelivered.get() == 1);
            }
            finally
            {
                thaw.countDown();
            }
            assertThat(rvServer.rendezvousMemoryPeak()).isLessThanOrEqualTo(budget);
        }
        assertStillServing();
    }

    @Test
    void shouldDropAPeerHoldingGrantedMemoryAlsoWhenTheServerPollerNeverSleeps() throws Exception
    {
        // A BUSY poller never sleeps, and the write timeout used to be checked only after a sleep: an attacker could
        // hold a BUSY server's rendezvous memory for ever. Counted by the connections left, not timed.
        try (RdmaEngine rvServer = RdmaEngine.open(scheme(), rendezvousServerConfig(4L * MIB)
                .pollingMode(PollingMode.BUSY).rendezvousWriteTimeoutNanos(TimeUnit.MILLISECONDS.toNanos(500)));
             RdmaEngine attackers = RdmaEngine.open(scheme(), rendezvousClientConfig("rv-attackers")))
        {
            final AtomicLong rvDelivered = new AtomicLong();
            final EngineListener rvListener = rvServer.listen(listenAddress(),
                c -> c.setHandler((buffer, offset, length) -> rvDelivered.incrementAndGet()));
            final Connection hostile = attackers.connect(rvListener.address());
            final CountDownLatch thaw = freezePoller(hostile);
            try
            {
                send(hostile, new WriteClaim(), MIB, 1);
                await("the grant held", () -> rvServer.rendezvousMemoryReserved() > 0);
                await("the attacker dropped", () -> rvServer.connections().isEmpty());
                await("its memory returned", () -> rvServer.rendezvousMemoryReserved() == 0);
                assertThat(rvDelivered.get()).isZero();
            }
            finally
            {
                thaw.countDown();
            }
        }
        assertStillServing();
    }

    @Test
    void shouldRefuseAnAnnouncementLargerThanTheBudgetAndKeepTheConnection() throws Exception
    {
        final long budget = MIB / 2;
        final List<Throwable> failures = new CopyOnWriteArrayList<>();
        final AtomicLong rvDelivered = new AtomicLong();
        try (RdmaEngine rvServer = RdmaEngine.open(scheme(), rendezvousServerConfig(budget));
             RdmaEngine good = RdmaEngine.open(scheme(), rendezvousClientConfig("rv-good")))
        {
            final List<Connection> accepted = new CopyOnWriteArrayList<>();
            final EngineListener rvListener = rvServer.listen(listenAddress(), c ->
            {
                accepted.add(c);
                c.setHandler((buffer, offset, length) -> rvDelivered.incrementAndGet());
            });
            final Connection connection = good.connect(rvListener.address());
            connection.setSendErrorHandler((messageId, length, cause) -> failures.add(cause));
            final WriteClaim claim = new WriteClaim();
            send(connection, claim, MIB, 1); // within the 1 MiB limit, but its buffer never fits 512 KiB
            await("refused", () -> failures.size() == 1);
            assertThat(failures.get(0)).isInstanceOf(MessageRefusedException.class)
                .hasMessageContaining("rendezvous memory budget of " + budget + " bytes")
                .hasMessageContaining("the connection stays usable");
            assertThat(rvServer.rendezvousMemoryPeak()).as("nothing reserved for it").isZero();
            send(connection, claim, 64, 2);
            send(connection, claim, 256 * 1024, 3);
            await("later messages delivered", () -> rvDelivered.get() == 2);
            assertThat(connection.isConnected()).isTrue();
            await("connection listed", () -> accepted.size() == 1);
            assertQuiescent(connection, accepted.get(0));
        }
        assertStillServing();
    }

    @Test
    void shouldDropAPeerThatAnnouncesMoreThanThePipelineAllows() throws Exception
    {
        // One batch: no credits for the server (it can answer nothing), then 40 RTS of 1 MiB each; the ninth breaks
        // the protocol.
        final int announced = 40;
        assertDropsHostileBatch(Wire.BATCH_HEADER_LENGTH + announced * Wire.FRAME_HEADER_LENGTH, b ->
        {
            for (int i = 0; i < announced; i++)
            {
                putFrame(b, Wire.BATCH_HEADER_LENGTH + i * Wire.FRAME_HEADER_LENGTH, Wire.FRAME_RTS, MIB, i);
            }
        });
    }

    @Test
    void shouldDropAPeerThatAnnouncesTheSameRendezvousTwice() throws Exception
    {
        // The second RTS 7 would replace the first's granted buffer: never written, never released, the connection's
        // resources and the engine's rendezvous budget held for good.
        assertDropsHostileBatch(Wire.BATCH_HEADER_LENGTH + 2 * Wire.FRAME_HEADER_LENGTH, b ->
        {
            putFrame(b, Wire.BATCH_HEADER_LENGTH, Wire.FRAME_RTS, MIB, 7);
            putFrame(b, Wire.BATCH_HEADER_LENGTH + Wire.FRAME_HEADER_LENGTH, Wire.FRAME_RTS, MIB, 7);
        });
    }

    @Test
    void shouldDropAPeerThatReturnsMoreCreditsThanItHasReceives() throws Exception
    {
        // Twice Integer.MAX_VALUE would wrap the server's credits negative: a connection that never sends again.
        assertDropsHostileBatch(Wire.BATCH_HEADER_LENGTH, b -> b.putInt(BatchHeaderFlyweight.CREDITS_OFFSET,
            Integer.MAX_VALUE));
    }

    @Test
    void shouldDropAPeerThatReturnsCreditsItWasNeverGivenBeforeItsMessageIsDelivered() throws Exception
    {
        // The first batch announces the peer's receives (all the credits it may give); a second batch that returns one
        // more, with a message in it, is refused before the message is delivered, although the server takes credits
        // only at the end of a poll.
        final int slots = engineConfig("slots").receiveSlots();
        assertDropsHostileBatches(Wire.BATCH_HEADER_LENGTH + Wire.FRAME_HEADER_LENGTH + 64, List.of(
            b -> b.putInt(BatchHeaderFlyweight.CREDITS_OFFSET, slots),
            b ->
            {
                b.putInt(BatchHeaderFlyweight.CREDITS_OFFSET, 1);
                putFrame(b, Wire.BATCH_HEADER_LENGTH, Wire.FRAME_DATA, 64, 1);
            }));
    }

    @Test
    void shouldDeliverNothingThatFollowsABatchBreakingTheProtocol() throws Exception
    {
        // The first batch returns more credits than the peer's receives; the message of the second (taken in the same
        // poll over tcp, where the server reads both from the socket at once) is dropped with the connection.
        assertDropsHostileBatches(Wire.BATCH_HEADER_LENGTH + Wire.FRAME_HEADER_LENGTH + 64, List.of(
            b -> b.putInt(BatchHeaderFlyweight.CREDITS_OFFSET, Integer.MAX_VALUE),
            b -> putFrame(b, Wire.BATCH_HEADER_LENGTH, Wire.FRAME_DATA, 64, 1)));
    }

    @Test
    void shouldDropAPeerWhoseDataFrameLengthOverflowsTheBoundsCheck() throws Exception
    {
        // offset + header + length wraps negative in int arithmetic: the frame must not be delivered as ~2 GiB.
        assertDropsHostileBatch(Wire.BATCH_HEADER_LENGTH + Wire.FRAME_HEADER_LENGTH + 64, b ->
            putFrame(b, Wire.BATCH_HEADER_LENGTH, Wire.FRAME_DATA, 0x7FFF_FFE0, 1));
    }

    private static void putFrame(final UnsafeBuffer b, final int at, final int type, final int length, final long id)
    {
        b.putInt(at + DataFrameFlyweight.LENGTH_OFFSET, length);
        b.putInt(at + DataFrameFlyweight.TYPE_OFFSET, type);
        b.putLong(at + DataFrameFlyweight.ID_OFFSET, id);
    }

    /**
     * A raw peer (past the handshake) sends one hand-made batch of {@code length} bytes: the server must drop that
     * connection with nothing delivered, give back every byte it granted it, and go on serving a good client.
     */
    private void assertDropsHostileBatch(final int length, final Consumer<UnsafeBuffer> batch)
        throws Exception
    {
        assertDropsHostileBatches(length, List.of(batch));
    }

    /**
     * As {@link #assertDropsHostileBatch}, with several batches of {@code length} bytes sent in order (the last one
     * hostile): nothing of any of them may be delivered.
     */
    private void assertDropsHostileBatches(final int length, final List<Consumer<UnsafeBuffer>> batches)
        throws Exception
    {
        final long budget = 4L * MIB;
        try (RdmaEngine rvServer = RdmaEngine.open(scheme(), rendezvousServerConfig(budget));
             RdmaEngine good = RdmaEngine.open(scheme(), rendezvousClientConfig("rv-good"));
             VerbsContext raw = VerbsProviders.forScheme(scheme()).open(verbsConfig()))
        {
            final AtomicLong rvDelivered = new AtomicLong();
            final EngineListener rvListener = rvServer.listen(listenAddress(),
                c -> c.setHandler((buffer, offset, bytes) -> rvDelivered.incrementAndGet()));
            final Connection goodConnection = good.connect(rvListener.address());
            final ProtectionDomain pd = raw.allocPd();
            final CompletionQueue cq = raw.createCq(64, null);
            try
            {
                final MemoryRegion ready = pd.allocate(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
                final QueuePair qp = raw.connect(rvListener.address(), new QueuePairAttributes().pd(pd).sendCq(cq)
                    .recvCq(cq).maxSendWr(8).maxRecvWr(8), Handshake.encodeRequest(rvServer.config(), null,
                    ready.address(), ready.rkey(), Handshake.VERSION));
                await("ready word", () -> ready.buffer().getLongVolatile(0) == Handshake.MAGIC);
                assertThat(length).isLessThanOrEqualTo(rvServer.config().receiveSlotLength());
                for (int i = 0; i < batches.size(); i++)
                {
                    final MemoryRegion source = pd.allocate(length, Access.LOCAL_WRITE);
                    batches.get(i).accept(source.buffer());
                    final SendRequest request = new SendRequest().opcode(WrOpcode.SEND).wrId(1 + i);
                    request.setSge(source, 0, i == batches.size() - 1 ? length : Wire.BATCH_HEADER_LENGTH);
                    assertThat(qp.postSend(request)).isEqualTo(PostResult.OK);
                }
                await("the hostile connection dropped", () -> rvServer.connections().size() == 1);
                qp.close();
            }
            finally
            {
                cq.close();
                pd.close();
            }
            assertThat(rvDelivered.get()).as("nothing of the hostile batch delivered").isZero();
            assertThat(rvServer.rendezvousMemoryPeak()).isLessThanOrEqualTo(budget);
            await("its memory returned", () -> rvServer.rendezvousMemoryReserved() == 0);
            send(goodConnection, new WriteClaim(), MIB, 5);
            await("the good connection still served", () -> rvDelivered.get() == 1);
        }
        assertStillServing();
    }

    @Test
    void shouldDeliverEveryLargeMessageOfTenClientsWithinASmallBudget() throws Exception
    {
        final long budget = 2L * MIB; // two 1 MiB buffers for ten connections sending three each at once
        final int clients = 10;
        final int perClient = 3;
        final AtomicLong rvDelivered = new AtomicLong();
        final AtomicLong corrupt = new AtomicLong();
        try (RdmaEngine rvServer = RdmaEngine.open(scheme(), rendezvousServerConfig(budget).rendezvousPoolBytes(MIB));
             RdmaEngine senders = RdmaEngine.open(scheme(), rendezvousClientConfig("rv-senders")))
        {
            final List<Connection> accepted = new CopyOnWriteArrayList<>();
            final EngineListener rvListener = rvServer.listen(listenAddress(), c ->
            {
                accepted.add(c);
                c.setHandler((buffer, offset, length) ->
                {
                    if (!EngineTestSupport.check(buffer, offset, length, length))
                    {
                        corrupt.incrementAndGet();
                    }
                    rvDelivered.incrementAndGet();
                });
            });
            final List<Connection> connections = new ArrayList<>();
            for (int i = 0; i < clients; i++)
            {
                connections.add(senders.connect(rvListener.address()));
            }
            await("connections listed", () -> accepted.size() == clients);
            // The server's poller is held until three announcements wait for it, so that, however the threads are
            // scheduled, a third finds both buffers of the budget granted (the senders' 8 MiB pool holds three).
            final CountDownLatch thaw = freezePoller(accepted.get(0));
            final WriteClaim claim = new WriteClaim();
            int sent = 0;
            try
            {
                for (int m = 0; m < perClient; m++)
                {
                    for (final Connection c : connections)
                    {
                        final int length = MIB - 4096 * m - connections.indexOf(c); // seeds differ: content is checked
                        send(c, claim, length, length);
                        if (++sent == 3)
                        {
                            thaw.countDown();
                        }
                    }
                }
            }
            finally
            {
                thaw.countDown();
            }
            // Once an allocation failed (or the budget was taken) and nobody on that connection released,
            // its RTS waited forever; now every release anywhere wakes every waiting connection.
            await("every message delivered", () -> rvDelivered.get() == (long)clients * perClient);
            assertThat(corrupt.get()).isZero();
            assertThat(rvServer.stats().rendezvousBudgetWaits()).as("the budget was contended").isPositive();
            assertThat(rvServer.stats().rendezvousRefused()).isZero();
            assertThat(rvServer.rendezvousMemoryPeak()).isLessThanOrEqualTo(budget);
            // Every buffer back, nothing pending, and credits conserved over all ten pairs in both directions.
            await("every buffer and credit back", () ->
            {
                long clientCredits = 0;
                long clientOwed = 0;
                long serverCredits = 0;
                long serverOwed = 0;
                for (final Connection c : connections)
                {
                    if (c.poolBuffersInUse() != 0 || c.pendingRendezvous() != 0 || c.sendBytesInFlight() != 0)
                    {
                        return false;
                    }
                    clientCredits += c.creditsAvailable();
                    clientOwed += c.creditsOwed();
                }
                for (final Connection c : accepted)
                {
                    if (c.poolBuffersInUse() != 0 || c.pendingRendezvous() != 0 || c.sendBytesInFlight() != 0)
                    {
                        return false;
                    }
                    serverCredits += c.creditsAvailable();
                    serverOwed += c.creditsOwed();
                }
                return clientCredits + serverOwed == (long)clients * rvServer.config().receiveSlots() &&
                    serverCredits + clientOwed == (long)clients * senders.config().receiveSlots();
            });
            for (final Connection c : connections)
            {
                c.close();
            }
            await("every buffer returned", () -> rvServer.connections().isEmpty() && rvServer.rendezvousMemoryReserved() == 0);
        }
        assertStillServing();
    }

    // ------------------------------------------------------------------------------------------------
    // A raw peer that speaks the verbs provider and crafts the engine handshake by hand
    // ------------------------------------------------------------------------------------------------

    private final List<Object> rawResources = new ArrayList<>();

    /** A raw connection whose ready region and QP the attacker controls. */
    protected static final class Raw implements AutoCloseable
    {
        final QueuePair qp;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final MemoryRegion source;

        Raw(final QueuePair qp, final ProtectionDomain pd, final CompletionQueue cq, final MemoryRegion source)
        {
            this.qp = qp;
            this.pd = pd;
            this.cq = cq;
            this.source = source;
        }

        void sendProof(final long word0, final long word1)
        {
            final UnsafeBuffer b = source.buffer();
            b.putInt(BatchHeaderFlyweight.CREDITS_OFFSET, 16);
            b.putInt(BatchHeaderFlyweight.CONTROL_LENGTH_OFFSET, Wire.CONTROL_FRAME_LENGTH);
            b.putInt(Wire.BATCH_HEADER_LENGTH + ControlFrameFlyweight.TYPE_OFFSET, Wire.CONTROL_AUTH);
            b.putLong(Wire.BATCH_HEADER_LENGTH + ControlFrameFlyweight.ID_OFFSET, word0);
            b.putLong(Wire.BATCH_HEADER_LENGTH + ControlFrameFlyweight.ADDRESS_OFFSET, word1);
            final SendRequest send = new SendRequest()
                .opcode(WrOpcode.SEND).wrId(1);
            send.setSge(source, 0, Wire.BATCH_HEADER_LENGTH + Wire.CONTROL_FRAME_LENGTH);
            qp.postSend(send);
        }

        @Override
        public void close()
        {
            qp.close();
            cq.close();
            pd.close();
        }
    }

    private MemoryRegion lastReady;
    private ProtectionDomain lastPd;
    private CompletionQueue lastCq;

    private ByteBuffer rawRequest(final VerbsContext raw, final byte[] nonce) throws IOException
    {
        lastPd = raw.allocPd();
        lastCq = raw.createCq(64, null);
        lastReady = lastPd.allocate(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        final ByteBuffer request = Handshake.encodeRequest(server.config(), nonce, lastReady.address(), lastReady.rkey(),
            Handshake.VERSION).order(ByteOrder.LITTLE_ENDIAN);
        return request;
    }

    private Raw rawConnect(final VerbsContext raw, final ByteBuffer request) throws IOException
    {
        final ProtectionDomain pd = lastPd;
        final CompletionQueue cq = lastCq;
        final MemoryRegion ready = lastReady;
        try
        {
            final QueuePair qp = raw.connect(listener.address(), new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq)
                .maxSendWr(8).maxRecvWr(8), request);
            await("ready word", () -> ready.buffer().getLongVolatile(0) == Handshake.MAGIC);
            return new Raw(qp, pd, cq, pd.allocate(256, Access.LOCAL_WRITE));
        }
        catch (final IOException | RuntimeException ex)
        {
            cq.close();
            pd.close();
            throw ex;
        }
    }

    /** @return bytes of a stream as a string (for child process output). */
    protected static String text(final ByteArrayOutputStream out)
    {
        return out.toString(StandardCharsets.UTF_8);
    }
}
