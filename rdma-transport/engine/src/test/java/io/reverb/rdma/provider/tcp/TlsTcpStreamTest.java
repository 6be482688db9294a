package io.reverb.rdma.provider.tcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rdma.provider.handshake.ListenerHandshakes;
import io.reverb.rdma.verbs.PeerAuthenticationException;
import io.reverb.rdma.verbs.TlsConfig;
import java.io.Closeable;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link TlsTcpStream} on a loopback socket pair: the byte stream survives reads far smaller than a TLS record (the
 * rest waits decoded, and says so through {@code hasBufferedInput}, since the socket will not signal it again),
 * gathering writes, and the first-bytes checks that turn a plaintext peer into a clear refusal.
 */
class TlsTcpStreamTest
{
    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static SelfSignedCertificate certificate;

    private ServerSocketChannel listener;
    private SocketChannel clientSide;
    private SocketChannel serverSide;

    @BeforeAll
    static void certificate() throws IOException
    {
        certificate = SelfSignedCertificate.generate("stream-test", "ip:127.0.0.1");
    }

    private void connectPair() throws IOException
    {
        listener = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        clientSide = SocketChannel.open(listener.getLocalAddress());
        serverSide = listener.accept();
        clientSide.configureBlocking(false);
        serverSide.configureBlocking(false);
    }

    @AfterEach
    void close() throws IOException
    {
        for (final Closeable c : new Closeable[] {clientSide, serverSide, listener})
        {
            if (c != null)
            {
                c.close();
            }
        }
    }

    /** Connects a client and a server session: the server's handshake is driven by its reads, as the listener's is. */
    private TlsTcpStream[] sessions() throws Exception
    {
        connectPair();
        final TlsTcpStream server = TlsTcpStream.server(serverSide,
            TlsConfig.builder().keyManager(certificate.keyManager()).build(), "client");
        final TlsTcpStream client = TlsTcpStream.client(clientSide,
            TlsConfig.builder().trustManager(SelfSignedCertificate.trusting(certificate)).build(),
            "127.0.0.1", listener.socket().getLocalPort());
        final CompletableFuture<Void> handshake = CompletableFuture.runAsync(() ->
        {
            try
            {
                client.handshake(System.nanoTime() + DEADLINE_NANOS);
            }
            catch (final IOException ex)
            {
                throw new IllegalStateException(ex);
            }
        });
        final ByteBuffer none = ByteBuffer.allocate(1);
        final long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (!handshake.isDone() && System.nanoTime() < deadline)
        {
            assertThat(server.read(none)).isZero(); // handshake records only: no application byte yet
            Thread.sleep(1);
        }
        handshake.get(1, TimeUnit.SECONDS);
        return new TlsTcpStream[] {client, server};
    }

    @Test
    void shouldDeliverAStreamReadInPiecesFarSmallerThanARecordWithTheRestBufferedAndSaidSo() throws Exception
    {
        final TlsTcpStream[] pair = sessions();
        final TlsTcpStream client = pair[0];
        final TlsTcpStream server = pair[1];
        final byte[] sent = new byte[1 << 20];
        new Random(7).nextBytes(sent);
        // gathering writes of uneven pieces
        final CompletableFuture<Void> writer = CompletableFuture.runAsync(() ->
        {
            try
            {
                int at = 0;
                while (at < sent.length)
                {
                    final int a = Math.min(1000, sent.length - at);
                    final int b = Math.min(70_000, sent.length - at - a);
                    final ByteBuffer[] pieces = {ByteBuffer.wrap(sent, at, a), ByteBuffer.wrap(sent, at + a, b)};
                    long left = a + b;
                    while (left > 0)
                    {
                        left -= client.write(pieces, 0, 2);
                        if (left > 0 || !client.flush())
                        {
                            Thread.sleep(0, 100_000);
                            client.flush();
                        }
                    }
                    at += a + b;
                }
                while (!client.flush())
                {
                    Thread.sleep(1);
                }
            }
            catch (final IOException | InterruptedException ex)
            {
                throw new IllegalStateException(ex);
            }
        });
        final byte[] received = new byte[sent.length];
        int at = 0;
        int bufferedSeen = 0;
        final long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (at < received.length && System.nanoTime() < deadline)
        {
            final ByteBuffer piece = ByteBuffer.wrap(received, at, Math.min(100, received.length - at));
            TcpStream.readFully(server, piece, deadline);
            at += piece.position() - at;
            if (server.hasBufferedInput())
            {
                bufferedSeen++;
            }
        }
        writer.get(30, TimeUnit.SECONDS);
        assertThat(at).isEqualTo(sent.length);
        assertThat(received).isEqualTo(sent);
        assertThat(bufferedSeen).as("reads of 100 B out of 16 KiB records leave decoded bytes waiting").isPositive();
        assertThat(server.hasBufferedInput()).isFalse();
    }

    @Test
    void shouldRefuseAPlaintextClientOnTheServerSideWithAnAnswerSayingTlsIsRequired() throws Exception
    {
        connectPair();
        final TlsTcpStream server = TlsTcpStream.server(serverSide,
            TlsConfig.builder().keyManager(certificate.keyManager()).build(), "client");
        clientSide.write(TcpHandshake.of(TcpHandshake.CONNECT, 8, 0, null).encode());
        final ByteBuffer header = ByteBuffer.allocate(TcpHandshake.HEADER_LENGTH);
        final long deadline = System.nanoTime() + DEADLINE_NANOS;
        ListenerHandshakes.Refusal refusal = null;
        while (refusal == null && System.nanoTime() < deadline)
        {
            try
            {
                server.read(header);
                Thread.sleep(1);
            }
            catch (final ListenerHandshakes.Refusal ex)
            {
                refusal = ex;
            }
        }
        assertThat(refusal).isNotNull();
        assertThat(refusal.kind()).isEqualTo("tls");
        assertThat(refusal.getMessage()).contains("requires TLS");
    }

    @Test
    void shouldTurnAPlaintextRefusalReceivedByATlsClientIntoAClearError() throws Exception
    {
        connectPair();
        final TlsTcpStream client = TlsTcpStream.client(clientSide,
            TlsConfig.builder().trustManager(SelfSignedCertificate.trusting(certificate)).build(),
            "127.0.0.1", listener.socket().getLocalPort());
        serverSide.write(TcpHandshake.refuse("this listener does not use TLS"));
        assertThatThrownBy(() -> client.handshake(System.nanoTime() + DEADLINE_NANOS))
            .isInstanceOf(PeerAuthenticationException.class)
            .hasMessageContaining("refused the connection: this listener does not use TLS");
    }

    @Test
    void shouldCallAHostNameMismatchByItsNameAsJdk17And25WordIt()
    {
        final String namesAnotherHost = " (the server's certificate does not name the host dialled; see " +
            "TlsConfig.verifyHostname)";
        // JDK 17's message, and JDK 25's, which starts with the alert it sends (also sent for an unknown CA)
        assertThat(TlsTcpStream.hint("No subject alternative names matching IP address 127.0.0.1 found", true))
            .isEqualTo(namesAnotherHost);
        assertThat(TlsTcpStream.hint("(certificate_unknown) No subject alternative names matching IP address " +
            "127.0.0.1 found", true)).isEqualTo(namesAnotherHost);
        assertThat(TlsTcpStream.hint("(certificate_unknown) No name matching reverb.example found", true))
            .isEqualTo(namesAnotherHost);
        assertThat(TlsTcpStream.hint("(certificate_unknown) PKIX path building failed: unable to find valid " +
            "certification path to requested target", true)).contains("does not chain to a CA");
    }
}
