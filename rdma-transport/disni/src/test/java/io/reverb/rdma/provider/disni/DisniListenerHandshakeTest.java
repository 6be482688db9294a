package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.common.LogLimiter;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * The TCP half of an rdma:// listener and the parking of rdma_cm requests, which run without a device: a
 * stalled connector must not hold up others, a SOURCE frame must name the connector's own host, parked
 * requests expire on their own, and a QP whose wrapper fails is destroyed.
 */
class DisniListenerHandshakeTest
{
    private static final InetSocketAddress LOOPBACK = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);

    /** The rdma_cm side, scripted: requests "arrive" for the sources in {@link #connected}. */
    private static final class Claims implements HandshakeAcceptor.Claimer<String>
    {
        final Set<String> connected = ConcurrentHashMap.newKeySet();
        final List<String> released = new CopyOnWriteArrayList<>();

        @Override
        public InetSocketAddress offer()
        {
            return new InetSocketAddress(InetAddress.getLoopbackAddress(), 4791);
        }

        @Override
        public String claim(final InetSocketAddress source, final long deadlineNanos) throws IOException
        {
            final String key = DisniAddress.format(source);
            while (!connected.remove(key))
            {
                if (System.nanoTime() - deadlineNanos >= 0)
                {
                    throw new IOException("no rdma_cm connect request from " + key);
                }
                try
                {
                    Thread.sleep(5);
                }
                catch (final InterruptedException ex)
                {
                    throw new IOException(ex);
                }
            }
            return "id:" + key;
        }

        @Override
        public void release(final String id)
        {
            released.add(id);
        }
    }

    private final Claims claims = new Claims();
    private final List<String> refusals = new CopyOnWriteArrayList<>();

    private HandshakeAcceptor<String> acceptor(final long timeoutNanos, final int maxPending) throws IOException
    {
        return new HandshakeAcceptor<>(LOOPBACK, 16, timeoutNanos, maxPending, claims,
            port -> "rdma://127.0.0.1:" + port, new LogLimiter((line, stack) -> refusals.add(line)), "test");
    }

    private static InetSocketAddress target(final HandshakeAcceptor<String> acceptor)
    {
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), acceptor.localPort());
    }

    /** A connector's side up to its SOURCE; returns the input for the answer. */
    private DataInputStream connectorPart(final Socket socket, final String privateData, final int rdmaCmPort,
        final boolean rdmaConnect) throws IOException
    {
        final DataOutputStream out = new DataOutputStream(socket.getOutputStream());
        final DataInputStream in = new DataInputStream(socket.getInputStream());
        Handshake.writeRequest(out, ByteBuffer.wrap(privateData.getBytes(StandardCharsets.US_ASCII)));
        out.flush();
        final Handshake.Message offer = Handshake.read(in, Handshake.OFFER);
        assertThat(offer.rdmaPort()).isEqualTo(4791);
        final InetSocketAddress source = new InetSocketAddress(socket.getLocalAddress(), rdmaCmPort);
        if (rdmaConnect)
        {
            claims.connected.add(DisniAddress.format(source));
        }
        Handshake.writeSource(out, source);
        out.flush();
        return in;
    }

    /**
     * Issue 24, part 2 item 3: a connector that sent its REQUEST and then stalls (no SOURCE, no rdma_cm request)
     * is never handed to the engine, whose accept thread would wait on it; the connector behind it is. On the
     * version 2 handshake the stalled one came out of take() first.
     */
    @Test
    void shouldHandTheEngineOnlyConnectorsThatDidTheirPart() throws Exception
    {
        try (HandshakeAcceptor<String> acceptor = acceptor(TimeUnit.SECONDS.toNanos(120), 8);
             Socket stalled = new Socket();
             Socket noRdmaCm = new Socket();
             Socket good = new Socket())
        {
            stalled.connect(target(acceptor));
            final DataOutputStream s = new DataOutputStream(stalled.getOutputStream());
            Handshake.writeRequest(s, null);
            s.flush();
            assertThat(Handshake.read(new DataInputStream(stalled.getInputStream()), Handshake.OFFER)).isNotNull();
            noRdmaCm.connect(target(acceptor));
            connectorPart(noRdmaCm, "no-cm", 40_001, false);
            good.connect(target(acceptor));
            connectorPart(good, "me", 40_002, true);

            final HandshakeAcceptor.Pending<String> pending = acceptor.take(TimeUnit.SECONDS.toNanos(30));

            assertThat(pending).isNotNull();
            assertThat(StandardCharsets.US_ASCII.decode(pending.privateData()).toString()).isEqualTo("me");
            assertThat(pending.id()).isEqualTo("id:127.0.0.1:40002");
            assertThat(pending.socket().getPort()).isEqualTo(good.getLocalPort());
            assertThat(acceptor.take(TimeUnit.MILLISECONDS.toNanos(200))).as("nobody else is ready").isNull();
            assertThat(acceptor.pendingCount()).isEqualTo(2);
            pending.socket().close();
        }
    }

    @Test
    void shouldDropAConnectorAtItsDeadlineEvenIfItDribbles() throws Exception
    {
        try (HandshakeAcceptor<String> acceptor = acceptor(TimeUnit.MILLISECONDS.toNanos(500), 8);
             Socket dribbler = new Socket())
        {
            dribbler.connect(target(acceptor));
            final OutputStream out = dribbler.getOutputStream();
            final byte[] frame = {0x52, 0x56, 0x44, 0x48, Handshake.VERSION, Handshake.REQUEST, 0};
            boolean closed = false;
            // One byte per 100 ms: each read waits far less than the timeout, the whole frame takes 700 ms.
            for (int i = 0; i < frame.length && !closed; i++)
            {
                try
                {
                    out.write(frame[i]);
                    out.flush();
                    Thread.sleep(100);
                }
                catch (final IOException ex)
                {
                    closed = true;
                }
            }
            dribbler.setSoTimeout(30_000);
            int read;
            do
            {
                read = readQuietly(dribbler);
            }
            while (read >= 0 && read != Integer.MIN_VALUE);
            awaitTrue(() -> acceptor.refused() == 1);
            assertThat(refusals).hasSize(1);
            assertThat(refusals.get(0)).startsWith("rdma://127.0.0.1:").contains(" refused a connection from ")
                .contains("not done within 500 ms");
            assertThat(acceptor.take(0)).isNull();
            awaitTrue(() -> acceptor.pendingCount() == 0);
        }
    }

    @Test
    void shouldEvictTheOldestSilentSocketBeyondTheCapAndServeANewConnector() throws Exception
    {
        final List<Socket> idle = new ArrayList<>();
        try (HandshakeAcceptor<String> acceptor = acceptor(TimeUnit.SECONDS.toNanos(120), 3))
        {
            for (int i = 0; i < 5; i++)
            {
                final Socket socket = new Socket();
                socket.connect(target(acceptor));
                idle.add(socket);
            }
            awaitTrue(() -> acceptor.refused() == 2);
            try (Socket good = new Socket())
            {
                good.connect(target(acceptor));
                connectorPart(good, "me", 40_003, true);
                final HandshakeAcceptor.Pending<String> pending = acceptor.take(TimeUnit.SECONDS.toNanos(30));
                assertThat(pending).isNotNull();
                assertThat(pending.id()).isEqualTo("id:127.0.0.1:40003");
                pending.socket().close();
            }
            assertThat(acceptor.pendingCount()).isLessThanOrEqualTo(3);
            assertThat(refusals).allMatch(line -> line.contains(" refused a connection from ") && line.contains("evicted"));
        }
        finally
        {
            for (final Socket socket : idle)
            {
                socket.close();
            }
        }
    }

    /**
     * A connector that sent REQUEST and SOURCE and never connects over rdma_cm waits in the claim; evicted by newer
     * sockets, its thread ends at once, not at its (120 s) deadline, so such connectors cannot pile up threads.
     */
    @Test
    void shouldEndTheThreadOfAnEvictedHandshakeWaitingForItsRdmaCmRequest() throws Exception
    {
        final List<Socket> sockets = new ArrayList<>();
        try (HandshakeAcceptor<String> acceptor = acceptor(TimeUnit.SECONDS.toNanos(120), 2))
        {
            for (int i = 0; i < 2; i++)
            {
                final Socket waiting = new Socket();
                sockets.add(waiting);
                waiting.connect(target(acceptor));
                connectorPart(waiting, "w" + i, 41_000 + i, false);
            }
            awaitTrue(() -> handshakeThreads() == 2);
            for (int i = 0; i < 2; i++)
            {
                final Socket newer = new Socket();
                sockets.add(newer);
                newer.connect(target(acceptor));
            }

            // Both waiting handshakes evicted; their threads leave the claim within a slice.
            awaitTrue(() -> acceptor.refused() == 2 && handshakeThreads() == 2);
            assertThat(refusals).hasSize(2)
                .allMatch(line -> line.contains(" refused a connection from ") && line.contains("evicted"));
            assertThat(acceptor.pendingCount()).isEqualTo(2);
        }
        finally
        {
            for (final Socket socket : sockets)
            {
                socket.close();
            }
        }
    }

    private static int handshakeThreads()
    {
        int threads = 0;
        for (final Thread thread : Thread.getAllStackTraces().keySet())
        {
            if (thread.isAlive() && thread.getName().equals("test-handshake"))
            {
                threads++;
            }
        }
        return threads;
    }

    @Test
    void shouldReleaseTheClaimedRequestOfAConnectorNobodyTookWhenClosing() throws Exception
    {
        final HandshakeAcceptor<String> acceptor = acceptor(TimeUnit.SECONDS.toNanos(30), 8);
        try (Socket good = new Socket())
        {
            good.connect(target(acceptor));
            connectorPart(good, "me", 40_004, true);
            awaitTrue(() -> claims.connected.isEmpty() && acceptor.pendingCount() == 1);
            acceptor.close();
            awaitTrue(() -> !claims.released.isEmpty());
            assertThat(claims.released).containsExactly("id:127.0.0.1:40004");
            assertThat(acceptor.pendingCount()).isZero();
        }
    }

    /**
     * A failing accept() (e.g. EMFILE) is reported and pauses the accept thread, twice as long per failure in a row;
     * once accept works again the connector waiting in the backlog gets in.
     */
    @Test
    void shouldReportAFailingAcceptAndPauseLongerPerFailureUntilItWorks() throws Exception
    {
        final AtomicInteger failures = new AtomicInteger();
        try (HandshakeAcceptor<String> acceptor = new HandshakeAcceptor<>(LOOPBACK, 16, TimeUnit.SECONDS.toNanos(30), 8,
                claims, port -> "rdma://127.0.0.1:" + port, new LogLimiter((line, stack) -> refusals.add(line)), "test",
                server ->
                {
                    if (failures.incrementAndGet() <= 3)
                    {
                        throw new SocketException("Too many open files");
                    }
                    return server.accept();
                });
             Socket good = new Socket())
        {
            good.connect(target(acceptor));
            connectorPart(good, "me", 40_005, true);
            final HandshakeAcceptor.Pending<String> pending = acceptor.take(TimeUnit.SECONDS.toNanos(30));
            assertThat(pending).isNotNull();
            assertThat(pending.id()).isEqualTo("id:127.0.0.1:40005");
            pending.socket().close();
            assertThat(acceptor.refused()).isEqualTo(3);
            assertThat(refusals).hasSize(3);
            assertThat(refusals.get(0)).startsWith("rdma://127.0.0.1:").contains(" refused a connection: accept() failed")
                .contains("Too many open files").endsWith("not accepting for 10 ms");
            assertThat(refusals.get(1)).endsWith("not accepting for 20 ms");
            assertThat(refusals.get(2)).endsWith("not accepting for 40 ms");
        }
    }

    @Test
    void shouldDropForeignPeersAndKeepAccepting() throws Exception
    {
        try (HandshakeAcceptor<String> acceptor = acceptor(TimeUnit.SECONDS.toNanos(30), 8))
        {
            try (Socket foreign = new Socket())
            {
                foreign.connect(target(acceptor));
                foreign.getOutputStream().write("GET / HTTP/1.0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                foreign.getOutputStream().flush();
                // The acceptor closes it: read until EOF.
                assertThat(foreign.getInputStream().read()).isEqualTo(-1);
            }
            try (Socket probe = new Socket())
            {
                probe.connect(target(acceptor));
            }
            awaitTrue(() -> acceptor.refused() == 1 && acceptor.dropped() == 1);
            assertThat(refusals).hasSize(1);
            assertThat(refusals.get(0)).contains(" refused a connection from ").contains("not a Reverb rdma:// handshake");
            try (Socket good = new Socket())
            {
                good.connect(target(acceptor));
                connectorPart(good, "", 40_005, true);
                final HandshakeAcceptor.Pending<String> pending = acceptor.take(TimeUnit.SECONDS.toNanos(30));
                assertThat(pending).isNotNull();
                pending.socket().close();
            }
        }
    }

    @Test
    void shouldRefuseASourceOfAnotherHostWithoutClaimingAnything() throws Exception
    {
        try (HandshakeAcceptor<String> acceptor = acceptor(TimeUnit.SECONDS.toNanos(30), 8);
             Socket liar = new Socket())
        {
            liar.connect(target(acceptor));
            final DataOutputStream out = new DataOutputStream(liar.getOutputStream());
            Handshake.writeRequest(out, null);
            out.flush();
            Handshake.read(new DataInputStream(liar.getInputStream()), Handshake.OFFER);
            claims.connected.add("10.9.9.9:40000");
            Handshake.writeSource(out, new InetSocketAddress("10.9.9.9", 40_000));
            out.flush();
            assertThat(liar.getInputStream().read()).isEqualTo(-1);
            awaitTrue(() -> acceptor.refused() == 1);
            assertThat(refusals.get(0)).contains("which is not its own address");
            assertThat(claims.connected).as("another connector's request stays unclaimed").contains("10.9.9.9:40000");
        }
    }

    @Test
    void shouldRefuseTakingAfterClose() throws Exception
    {
        final HandshakeAcceptor<String> acceptor = acceptor(TimeUnit.SECONDS.toNanos(30), 8);
        acceptor.close();

        assertThatThrownBy(() -> acceptor.take(0)).isInstanceOf(IOException.class).hasMessageContaining("closed");
    }

    private static int readQuietly(final Socket socket)
    {
        try
        {
            return socket.getInputStream().read();
        }
        catch (final IOException ex)
        {
            return Integer.MIN_VALUE;
        }
    }

    private static void awaitTrue(final BooleanSupplier condition) throws InterruptedException
    {
        for (int i = 0; i < 6_000 && !condition.getAsBoolean(); i++)
        {
            Thread.sleep(5);
        }
        assertThat(condition.getAsBoolean()).as("condition within 30 s").isTrue();
    }

    @Test
    void shouldRefuseASourceFrameNamingAnotherHost() throws Exception
    {
        final InetAddress peer = InetAddress.getByName("10.0.0.2");

        DisniConnectionRequest.checkSource(new InetSocketAddress(peer, 40_000), peer, "10.0.0.2:5555");
        assertThatThrownBy(() -> DisniConnectionRequest.checkSource(
            new InetSocketAddress(InetAddress.getByName("10.0.0.3"), 40_000), peer, "10.0.0.2:5555"))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("named rdma_cm source 10.0.0.3:40000, which is not its own address");
    }

    @Test
    void shouldExpireParkedRequestsByAgeAndHandOverClaimedOnes() throws Exception
    {
        final List<String> expired = new ArrayList<>();
        final ParkedRequests<String> parked = new ParkedRequests<>(100, 16, expired::add);
        parked.park("a:1", "A", 0);
        parked.park("b:1", "B", 50);

        assertThat(parked.claim("b:1", System.nanoTime())).isEqualTo("B");
        assertThat(parked.expire(100)).as("not older than the TTL yet").isZero();
        assertThat(parked.expire(101)).isEqualTo(1);
        assertThat(expired).containsExactly("A");
        assertThatThrownBy(() -> parked.claim("a:1", System.nanoTime()))
            .isInstanceOf(IOException.class).hasMessageContaining("no rdma_cm connect request from a:1");
    }

    @Test
    void shouldExpireTheOldestRequestBeyondTheCapAndStillHandOverTheOthers() throws Exception
    {
        // CONNECT_REQUESTs from many source ports that no handshake claims: each beyond the cap expires the oldest
        final List<String> expired = new ArrayList<>();
        final ParkedRequests<String> parked = new ParkedRequests<>(TimeUnit.SECONDS.toNanos(5), 3, expired::add);
        for (int port = 1; port <= 5; port++)
        {
            parked.park("10.0.0.9:" + port, "flood-" + port, port);
        }
        assertThat(parked.size()).isEqualTo(3);
        assertThat(expired).containsExactly("flood-1", "flood-2");
        parked.park("10.0.0.2:7", "good", 6);
        assertThat(parked.claim("10.0.0.2:7", System.nanoTime())).as("the newest is claimed").isEqualTo("good");
        assertThat(expired).containsExactly("flood-1", "flood-2", "flood-3");
        parked.close();
        assertThat(expired).containsExactly("flood-1", "flood-2", "flood-3", "flood-4", "flood-5");
    }

    @Test
    void shouldExpireAReplacedRequestAndEverythingLeftAtClose() throws Exception
    {
        final List<String> expired = new ArrayList<>();
        final ParkedRequests<String> parked = new ParkedRequests<>(TimeUnit.SECONDS.toNanos(5), 16, expired::add);
        parked.park("a:1", "A1", 0);
        parked.park("a:1", "A2", 1);
        parked.park("b:1", "B", 2);

        parked.close();
        parked.park("c:1", "C", 3);

        assertThat(expired).containsExactly("A1", "A2", "B", "C");
        assertThatThrownBy(() -> parked.claim("a:1", System.nanoTime() + TimeUnit.SECONDS.toNanos(5)))
            .isInstanceOf(IOException.class).hasMessageContaining("closed");
    }

    @Test
    void shouldDestroyTheQueuePairWhenItsWrapperCannotBeBuilt()
    {
        final AtomicInteger destroyed = new AtomicInteger();

        assertThatThrownBy(() -> DisniVerbsContext.wrapQueuePair(destroyed::incrementAndGet, () ->
        {
            throw new IOException("attach failed");
        })).isInstanceOf(IOException.class).hasMessage("attach failed");
        assertThat(destroyed).hasValue(1);
    }

    @Test
    void shouldNotDestroyAQueuePairThatWasWrapped() throws IOException
    {
        final AtomicInteger destroyed = new AtomicInteger();

        assertThat(DisniVerbsContext.wrapQueuePair(destroyed::incrementAndGet, () -> "qp")).isEqualTo("qp");
        assertThat(destroyed).hasValue(0);
    }
}
