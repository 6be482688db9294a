package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The TCP half of an rdma:// listener and the parking of rdma_cm requests, which run without a device: a
 * stalled connector must not hold up others, a SOURCE frame must name the connector's own host, parked
 * requests expire on their own, and a QP whose wrapper fails is destroyed.
 */
class DisniListenerHandshakeTest
{
    private static final InetSocketAddress LOOPBACK = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);

    @Test
    void shouldAcceptAConnectorWhileAnotherStallsMidHandshake() throws Exception
    {
        try (HandshakeAcceptor acceptor = new HandshakeAcceptor(LOOPBACK, 16, TimeUnit.SECONDS.toNanos(120), "test");
             Socket stalled = new Socket();
             Socket healthCheck = new Socket();
             Socket good = new Socket())
        {
            final InetSocketAddress target = new InetSocketAddress(InetAddress.getLoopbackAddress(), acceptor.localPort());
            stalled.connect(target);
            // Half a frame, then nothing: the old listener would sit here for the whole connect timeout.
            new DataOutputStream(stalled.getOutputStream()).writeInt(Handshake.MAGIC);
            healthCheck.connect(target);
            good.connect(target);
            final DataOutputStream out = new DataOutputStream(good.getOutputStream());
            Handshake.writeRequest(out, ByteBuffer.wrap("me".getBytes(StandardCharsets.US_ASCII)));
            out.flush();

            // Well below the 120 s handshake timeout that a serial reader would wait on the stalled socket.
            final HandshakeAcceptor.Pending pending = acceptor.take(TimeUnit.SECONDS.toNanos(30));

            assertThat(pending).isNotNull();
            assertThat(StandardCharsets.US_ASCII.decode(pending.privateData()).toString()).isEqualTo("me");
            assertThat(pending.socket().getPort()).isEqualTo(good.getLocalPort());
            pending.socket().close();
        }
    }

    @Test
    void shouldDropForeignPeersAndKeepAccepting() throws Exception
    {
        try (HandshakeAcceptor acceptor = new HandshakeAcceptor(LOOPBACK, 16, TimeUnit.SECONDS.toNanos(30), "test"))
        {
            final InetSocketAddress target = new InetSocketAddress(InetAddress.getLoopbackAddress(), acceptor.localPort());
            try (Socket foreign = new Socket())
            {
                foreign.connect(target);
                foreign.getOutputStream().write("GET / HTTP/1.0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                foreign.getOutputStream().flush();
                // The acceptor closes it: read until EOF.
                assertThat(foreign.getInputStream().read()).isEqualTo(-1);
            }
            assertThat(acceptor.dropped()).isEqualTo(1);
            try (Socket good = new Socket())
            {
                good.connect(target);
                final DataOutputStream out = new DataOutputStream(good.getOutputStream());
                Handshake.writeRequest(out, null);
                out.flush();
                final HandshakeAcceptor.Pending pending = acceptor.take(TimeUnit.SECONDS.toNanos(30));
                assertThat(pending).isNotNull();
                pending.socket().close();
            }
        }
    }

    @Test
    void shouldRefuseTakingAfterClose() throws Exception
    {
        final HandshakeAcceptor acceptor = new HandshakeAcceptor(LOOPBACK, 16, TimeUnit.SECONDS.toNanos(30), "test");
        acceptor.close();

        assertThatThrownBy(() -> acceptor.take(0)).isInstanceOf(IOException.class).hasMessageContaining("closed");
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
        final ParkedRequests<String> parked = new ParkedRequests<>(100, expired::add);
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
    void shouldExpireAReplacedRequestAndEverythingLeftAtClose() throws Exception
    {
        final List<String> expired = new ArrayList<>();
        final ParkedRequests<String> parked = new ParkedRequests<>(TimeUnit.SECONDS.toNanos(5), expired::add);
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
