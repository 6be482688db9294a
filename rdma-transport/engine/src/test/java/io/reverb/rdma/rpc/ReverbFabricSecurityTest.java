package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.shm.ShmTestDirectories;
import io.reverb.rdma.provider.tcp.SelfSignedCertificate;
import io.reverb.rdma.verbs.TlsConfig;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rpc.AcceptedConnection;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcClientConnection;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.TestService;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ServerListener;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLSession;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * {@code reverb://} against hostile peers (issue 38): a fabric listener admits no weaker peer than the tcp port (TLS),
 * a claim holds only for the tcp connection its ticket was issued on (no relayed offer), an offer's rdma address is a
 * literal never resolved, and a client that a ticket flood keeps on tcp says why.
 */
class ReverbFabricSecurityTest
{
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static SelfSignedCertificate serverCert;
    private static SelfSignedCertificate clientCert;

    private final List<String> log = new CopyOnWriteArrayList<>();
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private Path dir;
    private EngineConfig config;

    @BeforeAll
    static void certificates() throws IOException
    {
        serverCert = SelfSignedCertificate.generate("reverb-fabric-server", "dns:localhost", "ip:127.0.0.1");
        clientCert = SelfSignedCertificate.generate("reverb-fabric-client");
    }

    @BeforeEach
    void setUp() throws IOException
    {
        dir = Files.createTempDirectory(Path.of("/dev/shm"), "fabric-sec-",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        config = new EngineConfig().name("fabric-sec").verbsConfig(VerbsConfig.defaults().withShmDirectory(dir));
        ReverbTransportTest.reverb().logSink((line, stack) -> log.add(line));
    }

    @AfterEach
    void tearDown() throws Exception
    {
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
        ReverbTransportTest.reverb().logSink((line, stack) ->
            LoggerFactory.getLogger(ReverbTransportProvider.class).warn(line));
        ShmTestDirectories.delete(dir);
    }

    static TlsConfig serverTls()
    {
        return TlsConfig.builder().keyManager(serverCert.keyManager())
            .trustManager(SelfSignedCertificate.trusting(clientCert)).clientAuth(TlsConfig.ClientAuth.REQUIRE).build();
    }

    static TlsConfig clientTls()
    {
        return TlsConfig.builder().keyManager(clientCert.keyManager())
            .trustManager(SelfSignedCertificate.trusting(serverCert)).build();
    }

    private RpcServer server(final EngineConfig serverConfig)
    {
        final RpcServer server = RpcServer.builder("reverb://127.0.0.1:0").transportOptions(EngineOptions.of(serverConfig))
            .addService(new TestService()).build().start();
        closeables.add(server::close);
        return server;
    }

    private RpcChannel channel(final String address, final EngineConfig channelConfig)
    {
        final RpcChannel channel = RpcChannel.builder(address).transportOptions(EngineOptions.of(channelConfig))
            .reconnectBackoff(Duration.ofMillis(10), Duration.ofMillis(100)).build();
        closeables.add(channel::close);
        return channel;
    }

    private static String echo(final RpcChannel channel, final String text)
    {
        return channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT.withDeadline(Deadline.after(Duration.ofSeconds(10))),
            StringValue.of(text)).block(WAIT).getValue();
    }

    @Test
    void shouldAdmitOnTheShmListenerOfAMutualTlsServerOnlyAClientThatMovedFromItsTlsPort()
    {
        final RpcServer server = server(config.copy().name("fabric-sec-server").tls(serverTls()));
        final ReverbListener listener = ReverbTransportTest.listener(server.port());
        // a process of this user that dials the shm name straight, without the client certificate the tcp port wants
        final RpcChannel plainShm = channel(listener.shmAddress(), config.copy().name("fabric-sec-plain"));
        assertThatThrownBy(() -> echo(plainShm, "no certificate")).as("never reaches the server's acceptor")
            .isInstanceOf(RuntimeException.class);
        // a client with the certificate moves over the same listener: its claim names a ticket of its TLS connection
        final RpcChannel moved = channel("reverb://127.0.0.1:" + server.port(),
            config.copy().name("fabric-sec-client").tls(clientTls()));
        assertThat(echo(moved, "with certificate")).isEqualTo("with certificate");
        assertThat(moved.fabric()).isEqualTo("shm");
    }

    /**
     * A connection that moved to shm from a tcp connection inside TLS carries that connection's TLS session: a
     * handler that authorizes by the client's certificate sees the same caller after the move as before it, and the
     * client sees the server's.
     */
    @Test
    void shouldCarryTheTlsSessionOfTheTcpConnectionToTheShmConnectionThatMovedFromIt() throws Exception
    {
        final List<SSLSession> accepted = new CopyOnWriteArrayList<>();
        final RpcServer server = RpcServer.builder("reverb://127.0.0.1:0")
            .transportOptions(EngineOptions.of(config.copy().name("fabric-tls-server").tls(serverTls())))
            .addService(new TestService())
            .addConnectionListener(new AcceptedConnection.Listener()
            {
                @Override
                public void connectionAccepted(final AcceptedConnection connection)
                {
                    if (connection.localAddress().startsWith("shm://"))
                    {
                        accepted.add(connection.sslSession());
                    }
                }

                @Override
                public void connectionClosed(final AcceptedConnection connection, final Throwable cause)
                {
                }
            })
            .build().start();
        closeables.add(server::close);
        final RpcClientConnection client = RpcClientConnection.create(RpcChannel.builder(
            "reverb://127.0.0.1:" + server.port())
            .transportOptions(EngineOptions.of(config.copy().name("fabric-tls-client").tls(clientTls()))));
        closeables.add(client::close);
        client.connect().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        client.ping().get(WAIT.toSeconds(), TimeUnit.SECONDS); // the server accepts a moved connection at its first frame

        assertThat(subject(client.sslSession())).as("the server's certificate").contains("CN=reverb-fabric-server");
        assertThat(accepted).as("the moved connection, on the server").hasSize(1);
        assertThat(subject(accepted.get(0))).as("the client's certificate").contains("CN=reverb-fabric-client");
    }

    private static String subject(final SSLSession session) throws IOException
    {
        assertThat(session).as("a TLS session").isNotNull();
        return ((X509Certificate)session.getPeerCertificates()[0]).getSubjectX500Principal().getName();
    }

    @Test
    void shouldStayOnTcpWhenWhoeverAnswersAtTheDialledAddressRelaysTheOfferOfAnotherServer() throws IOException
    {
        final RpcServer server = server(config);
        // the relay: answers at the address the client dials and passes every byte on to the server (the most a
        // relay can do: it has no token and cannot read the server's secret file)
        final TcpRelay relay = new TcpRelay(server.port());
        closeables.add(relay);
        final RpcChannel channel = channel("reverb://127.0.0.1:" + relay.port(), config);
        assertThat(echo(channel, "through the relay")).isEqualTo("through the relay");
        assertThat(channel.fabric()).as("not moved to the other server's shm").isEqualTo("tcp");
        assertThat(log).anySatisfy(line -> assertThat(line).contains("stays on tcp")
            .contains("names another tcp connection than the one its ticket was issued on"));
        // the same server, dialled straight, still moves the client
        final RpcChannel straight = channel("reverb://127.0.0.1:" + server.port(), config);
        assertThat(echo(straight, "straight")).isEqualTo("straight");
        assertThat(straight.fabric()).isEqualTo("shm");
    }

    @Test
    void shouldTellTheClientWhyItStaysOnTcpWhileItsAddressHoldsAllItsTicketsAndMoveItOnceTheyAreBack()
        throws Exception
    {
        final RpcServer server = server(config);
        final ReverbListener listener = ReverbTransportTest.listener(server.port());
        listener.ticketLimits(FabricTickets.MAX_TICKETS, 2);
        // a flood from this address: connections that asked for an offer and hold on to it
        final List<Connection> flood = new ArrayList<>();
        for (int i = 0; i < 2; i++)
        {
            final CompletableFuture<ByteBuffer> offered = new CompletableFuture<>();
            final Connection connection = ReverbTransportTest.reverb().tcp.connect(
                URI.create("tcp://127.0.0.1:" + server.port()), EngineOptions.of(config), new Handler(offered))
                .get(30, TimeUnit.SECONDS);
            flood.add(connection);
            ReverbTransportProvider.send(connection, FabricMessages.hello(FabricMessages.random(16)));
            assertThat(FabricMessages.type(offered.get(30, TimeUnit.SECONDS))).isEqualTo(FabricMessages.OFFER);
        }
        final RpcChannel starved = channel("reverb://127.0.0.1:" + server.port(), config);
        assertThat(echo(starved, "on tcp")).isEqualTo("on tcp");
        assertThat(starved.fabric()).isEqualTo("tcp");
        assertThat(log).anySatisfy(line -> assertThat(line).contains("reverb://127.0.0.1:" + server.port() +
            " stays on tcp").contains("2 upgrade tickets are outstanding for the client's address 127.0.0.1"));
        // the flood's connections close: their tickets come back as the server sees each close, not after their
        // 30 s expiry (the server learns of a close asynchronously: a client dialling at once could still be refused)
        for (final Connection connection : flood)
        {
            connection.close();
        }
        final long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (listener.ticketsOutstanding() > 0 && System.nanoTime() < giveUp)
        {
            Thread.sleep(5);
        }
        assertThat(listener.ticketsOutstanding()).as("tickets of closed connections, well before they expire")
            .isZero();
        final RpcChannel later = channel("reverb://127.0.0.1:" + server.port(), config);
        assertThat(echo(later, "on shm")).isEqualTo("on shm");
        assertThat(later.fabric()).isEqualTo("shm");
    }

    /**
     * Every offer carries a ticket of its own: an unpredictable one (a claim over rdma without a token is proven with
     * the ticket as its key) and a distinct one (two tickets alike would be one entry of the listener's table, counted
     * twice against their address: one client's claim would take the other's ticket, and the address's count would
     * never come back down).
     */
    @Test
    void shouldGiveEachOfferATicketOfItsOwn() throws Exception
    {
        final RpcServer server = server(config);
        final Set<String> tickets = new HashSet<>();
        for (int i = 0; i < 3; i++)
        {
            final CompletableFuture<ByteBuffer> offered = new CompletableFuture<>();
            final Connection connection = ReverbTransportTest.reverb().tcp.connect(
                URI.create("tcp://127.0.0.1:" + server.port()), EngineOptions.of(config), new Handler(offered))
                .get(30, TimeUnit.SECONDS);
            closeables.add(connection::close);
            final byte[] nonce = FabricMessages.random(16);
            ReverbTransportProvider.send(connection, FabricMessages.hello(nonce));
            final FabricMessages.Offer offer = FabricMessages.decodeOffer(offered.get(30, TimeUnit.SECONDS), nonce, null);
            assertThat(offer.ticket).as("offer %d's ticket", i).isNotEqualTo(new byte[offer.ticket.length]);
            tickets.add(HexFormat.of().formatHex(offer.ticket));
        }
        assertThat(tickets).as("distinct tickets").hasSize(3);
    }

    /**
     * Many clients of one address moving to shm at once (a pool's connections, processes of one host): every one
     * moves, and once they all did no ticket is left counted against the address.
     */
    @Test
    void shouldMoveConcurrentClientsOfOneAddressAndCountNoTicketAfterwards() throws Exception
    {
        final RpcServer server = server(config);
        final ReverbListener listener = ReverbTransportTest.listener(server.port());
        final int threads = 4;
        final int perThread = 8;
        final List<String> fabrics = new CopyOnWriteArrayList<>();
        final ExecutorService pool = Executors.newFixedThreadPool(threads);
        try
        {
            final List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++)
            {
                done.add(pool.submit(() ->
                {
                    for (int i = 0; i < perThread; i++)
                    {
                        final RpcChannel channel = RpcChannel.builder("reverb://127.0.0.1:" + server.port())
                            .transportOptions(EngineOptions.of(config)).build();
                        try
                        {
                            assertThat(echo(channel, "moved")).isEqualTo("moved");
                            fabrics.add(channel.fabric());
                        }
                        finally
                        {
                            channel.close();
                        }
                    }
                    return null;
                }));
            }
            for (final Future<?> f : done)
            {
                f.get(120, TimeUnit.SECONDS);
            }
        }
        finally
        {
            pool.shutdownNow();
        }
        assertThat(fabrics).hasSize(threads * perThread).containsOnly("shm");
        final long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (listener.ticketsHeldBy("127.0.0.1") > 0 && System.nanoTime() < giveUp)
        {
            Thread.sleep(5);
        }
        assertThat(listener.ticketsHeldBy("127.0.0.1")).as("tickets counted against 127.0.0.1").isZero();
        assertThat(listener.ticketsOutstanding()).isZero();
    }

    @Test
    void shouldNeverResolveAHostNameThatAnOfferGivesAsTheRdmaAddress() throws Exception
    {
        final FabricMessages.Offer hostile = new FabricMessages.Offer();
        hostile.fabrics = FabricMessages.FABRIC_RDMA;
        hostile.ticket = FabricMessages.random(16);
        hostile.rdmaAddress = "rdma-peer.invalid:7000";
        hostile.rdmaPrefix = 8;
        final ServerListener peer = ReverbTransportTest.reverb().tcp.listen(URI.create("tcp://127.0.0.1:0"),
            EngineOptions.of(config), connection -> new Handler(null)
            {
                @Override
                public void onMessage(final Connection c, final ByteBuffer message)
                {
                    final byte[] nonce = FabricMessages.helloNonce(message);
                    if (nonce != null)
                    {
                        ReverbTransportProvider.send(c, FabricMessages.offer(hostile, nonce, null));
                    }
                }
            });
        closeables.add(peer::close);
        final Connection connection = ReverbTransportTest.reverb().connect(
            URI.create("reverb://127.0.0.1:" + peer.port()), EngineOptions.of(config), new Handler(null))
            .get(30, TimeUnit.SECONDS);
        closeables.add(connection::close);
        assertThat(connection.fabric()).isEqualTo("tcp");
        assertThat(log).singleElement().asString().contains("the server's offer is refused")
            .contains("is not a literal IPv4 address");
    }

    /** Completes a future with the first message; does nothing else. */
    private static class Handler implements ConnectionHandler
    {
        private final CompletableFuture<ByteBuffer> first;

        Handler(final CompletableFuture<ByteBuffer> first)
        {
            this.first = first;
        }

        @Override
        public void onMessage(final Connection connection, final ByteBuffer message)
        {
            if (first != null)
            {
                first.complete(ByteBuffer.allocate(message.remaining()).put(message.duplicate()).flip());
            }
        }

        @Override
        public void onWritable(final Connection connection)
        {
        }

        @Override
        public void onClose(final Connection connection, final Throwable cause)
        {
        }
    }
}
