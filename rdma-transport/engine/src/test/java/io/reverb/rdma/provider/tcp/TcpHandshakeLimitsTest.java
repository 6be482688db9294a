package io.reverb.rdma.provider.tcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 13, items 1 and 2 on tcp://: every value of a peer's handshake is checked against a local limit
 * before anything is sized from it, and handshakes are read concurrently with a deadline and a cap, so
 * idle or hostile sockets cannot stop the listener.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpHandshakeLimitsTest
{
    private static byte[] connect(final int maxSendWr, final long rnrRetryNanos, final int privateLength)
    {
        final ByteBuffer b = ByteBuffer.allocate(TcpHandshake.HEADER_LENGTH + Math.max(0, privateLength));
        b.putInt(TcpHandshake.MAGIC).put((byte)TcpHandshake.VERSION).put((byte)TcpHandshake.CONNECT)
            .putShort((short)privateLength).putInt(maxSendWr).putLong(rnrRetryNanos);
        return b.array();
    }

    @Test
    void shouldRefuseSendQueueDepthsThatWouldExhaustOrOverflowTheResponseRing()
    {
        for (final int depth : new int[] {1 << 27, Integer.MAX_VALUE, TcpHandshake.MAX_PEER_SEND_WR + 1, 0, -1})
        {
            assertThatThrownBy(() -> TcpHandshake.read(new ByteArrayInputStream(connect(depth, 0, 0))))
                .as("maxSendWr " + depth)
                .isInstanceOf(IOException.class)
                .hasMessageContaining("send queue depth " + depth);
        }
    }

    @Test
    void shouldRefuseAVersionOnePeerWhoseFramesCannotCarryAcks()
    {
        final byte[] v1 = connect(8, 0, 0);
        v1[4] = 1;
        assertThatThrownBy(() -> TcpHandshake.read(new ByteArrayInputStream(v1)))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("peer speaks version 1, this side 2");
    }

    @Test
    void shouldRefuseRnrRetryTimesBeyondTheLimit()
    {
        for (final long nanos : new long[] {-1, TcpHandshake.MAX_PEER_RNR_RETRY_NANOS + 1, Long.MAX_VALUE})
        {
            assertThatThrownBy(() -> TcpHandshake.read(new ByteArrayInputStream(connect(8, nanos, 0))))
                .isInstanceOf(IOException.class).hasMessageContaining("RNR retry time");
        }
    }

    @Test
    void shouldRefuseOversizePrivateDataAndUnknownTypes() throws IOException
    {
        assertThatThrownBy(() -> TcpHandshake.read(new ByteArrayInputStream(connect(8, 0, 57))))
            .hasMessageContaining("private data of 57 bytes");
        final byte[] bad = connect(8, 0, 0);
        bad[5] = 9;
        assertThatThrownBy(() -> TcpHandshake.read(new ByteArrayInputStream(bad))).hasMessageContaining("message type 9");
        final TcpHandshake ok = TcpHandshake.read(new ByteArrayInputStream(connect(TcpHandshake.MAX_PEER_SEND_WR, 0, 3)));
        assertThat(ok.maxSendWr).isEqualTo(TcpHandshake.MAX_PEER_SEND_WR);
        assertThat(ok.privateData).hasSize(3);
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        TcpHandshake.of(TcpHandshake.ACCEPT, 5, 7, ByteBuffer.wrap(new byte[] {1, 2})).write(out);
        final TcpHandshake back = TcpHandshake.read(new ByteArrayInputStream(out.toByteArray()));
        assertThat(back.type).isEqualTo(TcpHandshake.ACCEPT);
        assertThat(back.maxSendWr).isEqualTo(5);
        assertThat(back.rnrRetryNanos).isEqualTo(7);
        assertThat(back.privateData).containsExactly(1, 2);
    }

    @Test
    void shouldRefuseLocalQueueDepthsThePeerWouldRefuse() throws Exception
    {
        try (VerbsContext context = new TcpVerbsProvider().open(VerbsConfig.defaults()))
        {
            final CompletionQueue cq = context.createCq(16, null);
            final QueuePairAttributes attributes = new QueuePairAttributes().pd(context.allocPd()).sendCq(cq).recvCq(cq)
                .maxSendWr(TcpHandshake.MAX_PEER_SEND_WR + 1).maxRecvWr(4);
            assertThatThrownBy(() -> context.connect("127.0.0.1:1", attributes, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxSendWr <= " + TcpHandshake.MAX_PEER_SEND_WR);
        }
    }

    @Test
    void shouldKeepAcceptingWhileIdleAndHostileSocketsAreOpen() throws Exception
    {
        final VerbsConfig config = VerbsConfig.defaults().withHandshakeTimeoutNanos(TimeUnit.SECONDS.toNanos(30));
        try (VerbsContext server = new TcpVerbsProvider().open(config);
            VerbsContext client = new TcpVerbsProvider().open(config);
            ConnectionListener listener = server.listen("127.0.0.1:0", 16))
        {
            final InetSocketAddress address = TcpAddress.parse(listener.localAddress());
            final List<Socket> idle = new ArrayList<>();
            try
            {
                // Idle sockets (their handshake deadline is far away) and a half-written handshake...
                for (int i = 0; i < 5; i++)
                {
                    idle.add(new Socket(address.getAddress(), address.getPort()));
                }
                final Socket half = new Socket(address.getAddress(), address.getPort());
                idle.add(half);
                half.getOutputStream().write(connect(8, 0, 0), 0, 10);
                // ...and one announcing a send queue of 2^27 (the old OutOfMemoryError), then a good client.
                try (Socket huge = new Socket(address.getAddress(), address.getPort()))
                {
                    final OutputStream out = huge.getOutputStream();
                    out.write(connect(1 << 27, 0, 0));
                    out.flush();
                    assertThat(huge.getInputStream().read()).as("dropped without an answer").isEqualTo(-1);
                }
                final QueuePair[] pair = connectPair(server, client, listener);
                assertThat(pair[0]).isNotNull();
                assertThat(pair[1]).isNotNull();
                // The 2^27 socket was refused (counted just after its close, which the client has seen).
                final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (((TcpConnectionListener)listener).refusedCount() < 1 && System.nanoTime() - deadline < 0)
                {
                    Thread.sleep(1);
                }
                assertThat(((TcpConnectionListener)listener).refusedCount()).isGreaterThanOrEqualTo(1);
            }
            finally
            {
                for (final Socket socket : idle)
                {
                    socket.close();
                }
            }
        }
    }

    @Test
    void shouldDropSilentSocketsAtTheHandshakeDeadlineAndEvictTheOldestBeyondTheCap() throws Exception
    {
        final VerbsConfig config = VerbsConfig.defaults()
            .withHandshakeTimeoutNanos(TimeUnit.SECONDS.toNanos(1)).withMaxPendingHandshakes(2);
        try (VerbsContext server = new TcpVerbsProvider().open(config);
            VerbsContext client = new TcpVerbsProvider().open(config);
            ConnectionListener listener = server.listen("127.0.0.1:0", 16))
        {
            final InetSocketAddress address = TcpAddress.parse(listener.localAddress());
            try (Socket a = new Socket(address.getAddress(), address.getPort());
                Socket b = new Socket(address.getAddress(), address.getPort());
                Socket c = new Socket(address.getAddress(), address.getPort()))
            {
                // Two fill the cap, the third evicts the oldest; the others are closed at the deadline.
                for (final Socket s : new Socket[] {a, b, c})
                {
                    s.setSoTimeout(20_000);
                    assertThat(s.getInputStream().read()).isEqualTo(-1);
                }
            }
            // Counted just after the close the sockets saw.
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (((TcpConnectionListener)listener).refusedCount() < 3 && System.nanoTime() - deadline < 0)
            {
                Thread.sleep(1);
            }
            assertThat(((TcpConnectionListener)listener).refusedCount()).isEqualTo(3);
            final QueuePair[] pair = connectPair(server, client, listener);
            assertThat(pair[0]).isNotNull();
        }
    }

    static QueuePair[] connectPair(final VerbsContext server, final VerbsContext client, final ConnectionListener listener)
        throws Exception
    {
        final CompletableFuture<QueuePair> accepted = CompletableFuture.supplyAsync(() ->
        {
            try
            {
                final ConnectionRequest request = listener.accept(TimeUnit.SECONDS.toNanos(20));
                final CompletionQueue cq = server.createCq(64, null);
                return request.accept(new QueuePairAttributes().pd(server.allocPd()).sendCq(cq).recvCq(cq)
                    .maxSendWr(8).maxRecvWr(8), null);
            }
            catch (final IOException ex)
            {
                throw new IllegalStateException(ex);
            }
        });
        final CompletionQueue cq = client.createCq(64, null);
        final QueuePair qp = client.connect(listener.localAddress(), new QueuePairAttributes().pd(client.allocPd())
            .sendCq(cq).recvCq(cq).maxSendWr(8).maxRecvWr(8), null);
        return new QueuePair[] {accepted.get(20, TimeUnit.SECONDS), qp};
    }
}
