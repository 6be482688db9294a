package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.BytesValue;
import com.google.protobuf.ByteString;
import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.tcp.SelfSignedCertificate;
import io.reverb.rdma.verbs.TlsConfig;
import io.reverb.rpc.AcceptedConnection;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcClientConnection;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLSession;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * RPC over {@code tcp://} inside TLS ({@link TlsConfig} given per server and per channel through {@link EngineOptions}):
 * calls of every size, mutual TLS, every refusal (plaintext against TLS both ways, untrusted certificate, wrong host,
 * missing client certificate) failing the call UNAUTHENTICATED with a message that says why, while the listener keeps
 * serving others; garbage and silence against a TLS listener. Certificates are made at test time with keytool.
 */
class TcpTlsRpcTest
{
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static SelfSignedCertificate serverCert;
    private static SelfSignedCertificate clientCert;
    private static SelfSignedCertificate strangerCert;
    private static SelfSignedCertificate elsewhereCert;

    private final List<EngineConfig> engines = new ArrayList<>();
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @BeforeAll
    static void certificates() throws IOException
    {
        serverCert = SelfSignedCertificate.generate("reverb-test-server", "dns:localhost", "ip:127.0.0.1");
        clientCert = SelfSignedCertificate.generate("reverb-test-client");
        strangerCert = SelfSignedCertificate.generate("stranger", "dns:localhost", "ip:127.0.0.1");
        elsewhereCert = SelfSignedCertificate.generate("elsewhere", "dns:elsewhere.example");
    }

    @AfterEach
    void close() throws Exception
    {
        for (final AutoCloseable closeable : closeables)
        {
            closeable.close();
        }
        // every engine of these settings closes with its last server or channel (nothing stays open per JVM)
        for (final EngineConfig engine : engines)
        {
            EngineTransportTestHooks.awaitEngineClosed("tcp://127.0.0.1:0", EngineOptions.of(engine), null);
        }
    }

    private EngineConfig engine(final String name, final TlsConfig tls)
    {
        final EngineConfig config = new EngineConfig().name(name).tls(tls);
        engines.add(config);
        return config;
    }

    private String server(final EngineConfig config)
    {
        final RpcServer server = RpcServer.builder("tcp://127.0.0.1:0")
            .transportOptions(EngineOptions.of(config))
            .addService(new TestService())
            .build()
            .start();
        closeables.add(server::close);
        return server.address();
    }

    private RpcChannel channel(final String address, final EngineConfig config)
    {
        final RpcChannel.Builder builder = RpcChannel.builder(address)
            .reconnectBackoff(Duration.ofMillis(10), Duration.ofMillis(100))
            .maxInboundMessageSize(8 << 20);
        if (config != null)
        {
            builder.transportOptions(EngineOptions.of(config));
        }
        final RpcChannel channel = builder.build();
        closeables.add(channel::close);
        return channel;
    }

    private static TlsConfig serverTls(final TlsConfig.ClientAuth clientAuth)
    {
        return TlsConfig.builder().keyManager(serverCert.keyManager())
            .trustManager(SelfSignedCertificate.trusting(clientCert)).clientAuth(clientAuth).build();
    }

    private static TlsConfig clientTls(final SelfSignedCertificate own, final SelfSignedCertificate trusted)
    {
        return TlsConfig.builder().keyManager(own == null ? null : own.keyManager())
            .trustManager(SelfSignedCertificate.trusting(trusted)).build();
    }

    private static String echo(final RpcChannel channel, final String text)
    {
        return channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of(text)).block(WAIT).getValue();
    }

    private static void assertRefused(final RpcChannel channel, final StatusCode code, final String... why)
    {
        assertThatThrownBy(() -> echo(channel, "refused")).isInstanceOfSatisfying(RpcException.class, e ->
        {
            assertThat(e.status().code()).as(e.getMessage()).isEqualTo(code);
            assertThat(e.status().description()).contains(why);
        });
    }

    @Test
    void shouldCarryUnaryStreamingAndLargeCallsInsideTls()
    {
        // the auth token's challenge-response inside TLS too
        final String address = server(engine("tls-server", serverTls(TlsConfig.ClientAuth.NONE)).authToken("s3cret"));
        final RpcChannel channel = channel(address, engine("tls-client", clientTls(null, serverCert)).authToken("s3cret"));

        assertThat(echo(channel, "over TLS")).isEqualTo("over TLS");
        // 1 MiB each way: rendezvous (RDMA WRITE) frames, many TLS records per message
        final int size = 1 << 20;
        for (int i = 0; i < 3; i++)
        {
            assertThat(channel.newUnaryCall(TestService.BLOB, CallOptions.DEFAULT, Int32Value.of(size)).block(WAIT)
                .getValue().size()).isEqualTo(size);
            final byte[] payload = new byte[size];
            new Random(i).nextBytes(payload);
            assertThat(channel.newUnaryCall(TestService.SIZE, CallOptions.DEFAULT,
                BytesValue.of(ByteString.copyFrom(payload))).block(WAIT).getValue()).isEqualTo(size);
        }
        final List<BytesValue> streamed = channel.newCall(TestService.RANGE, CallOptions.DEFAULT,
            Mono.just(Int32Value.of(500))).collectList().block(WAIT);
        assertThat(streamed).hasSize(500);
        for (int i = 0; i < 200; i++)
        {
            assertThat(echo(channel, "call " + i)).isEqualTo("call " + i);
        }
    }

    @Test
    void shouldAdmitAClientWithATrustedCertificateUnderMutualTlsAndRefuseOthersWhileServing()
    {
        final String address = server(engine("mtls-server", serverTls(TlsConfig.ClientAuth.REQUIRE)));
        final RpcChannel trusted = channel(address, engine("mtls-trusted", clientTls(clientCert, serverCert)));
        final RpcChannel anonymous = channel(address, engine("mtls-anonymous", clientTls(null, serverCert)));
        final RpcChannel stranger = channel(address, engine("mtls-stranger", clientTls(strangerCert, serverCert)));

        assertThat(echo(trusted, "mutual")).isEqualTo("mutual");
        assertRefused(anonymous, StatusCode.UNAUTHENTICATED, "TLS", "client certificate");
        assertRefused(stranger, StatusCode.UNAUTHENTICATED, "TLS");
        // refused again on a new attempt (not cached as a transient failure that heals), the listener still serves
        assertRefused(anonymous, StatusCode.UNAUTHENTICATED, "TLS");
        assertThat(echo(trusted, "still serving")).isEqualTo("still serving");
        assertThat(echo(channel(address, engine("mtls-new", clientTls(clientCert, serverCert))), "new")).isEqualTo("new");
    }

    /**
     * Each side finds the TLS session, with the other's certificate: the server on the accepted connection (what
     * {@code RpcContext.connection()} gives a handler: mutual TLS as the caller's identity), the client on its
     * connection; without TLS there is none.
     */
    @Test
    void shouldGiveBothSidesTheTlsSessionWithThePeersCertificate() throws Exception
    {
        // each accepted connection's session (none: empty), as the server's listener is told of it: on the server's
        // own thread, possibly after the client's connect completed
        final BlockingQueue<Optional<SSLSession>> accepted = new LinkedBlockingQueue<>();
        final AcceptedConnection.Listener listener = new AcceptedConnection.Listener()
        {
            @Override
            public void connectionAccepted(final AcceptedConnection connection)
            {
                accepted.add(Optional.ofNullable(connection.sslSession()));
            }

            @Override
            public void connectionClosed(final AcceptedConnection connection, final Throwable cause)
            {
            }
        };
        final RpcServer server = RpcServer.builder("tcp://127.0.0.1:0")
            .transportOptions(EngineOptions.of(engine("session-server", serverTls(TlsConfig.ClientAuth.REQUIRE))))
            .addService(new TestService())
            .addConnectionListener(listener)
            .build()
            .start();
        closeables.add(server::close);
        final RpcClientConnection client = RpcClientConnection.create(RpcChannel.builder(server.address())
            .transportOptions(EngineOptions.of(engine("session-client", clientTls(clientCert, serverCert)))));
        closeables.add(client::close);
        assertThat(client.sslSession()).as("not connected yet").isNull();
        client.connect().get(WAIT.toSeconds(), TimeUnit.SECONDS);

        assertThat(subject(client.sslSession())).as("the server's certificate").contains("CN=reverb-test-server");
        assertThat(client.sslSession().getProtocol()).startsWith("TLS");
        final Optional<SSLSession> onServer = accepted.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(onServer).as("the server accepted the connection").isNotNull();
        assertThat(subject(onServer.orElseThrow())).as("the client's certificate").contains("CN=reverb-test-client");

        final RpcServer plain = RpcServer.builder("tcp://127.0.0.1:0").addService(new TestService())
            .addConnectionListener(listener).build().start();
        closeables.add(plain::close);
        final RpcClientConnection plainClient = RpcClientConnection.create(RpcChannel.builder(plain.address()));
        closeables.add(plainClient::close);
        plainClient.connect().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(plainClient.sslSession()).as("plaintext: no session").isNull();
        assertThat(accepted.poll(WAIT.toSeconds(), TimeUnit.SECONDS)).as("plaintext: no session on the server").isEmpty();
    }

    private static String subject(final SSLSession session) throws IOException
    {
        return ((X509Certificate)session.getPeerCertificates()[0]).getSubjectX500Principal().getName();
    }

    @Test
    void shouldRefuseAServerWhoseCertificateIsNotTrustedOrNamesAnotherHost()
    {
        final String address = server(engine("untrusted-server", serverTls(TlsConfig.ClientAuth.NONE)));
        assertRefused(channel(address, engine("trusts-stranger", clientTls(null, strangerCert))),
            StatusCode.UNAUTHENTICATED, "TLS", "does not chain to a CA");

        final TlsConfig elsewhere = TlsConfig.builder().keyManager(elsewhereCert.keyManager()).build();
        final String wrongHost = server(engine("elsewhere-server", elsewhere));
        assertRefused(channel(wrongHost, engine("trusts-elsewhere", clientTls(null, elsewhereCert))),
            StatusCode.UNAUTHENTICATED, "TLS", "does not name the host");
        // the same certificate without host name verification: the trust manager pins it
        final TlsConfig pinned = TlsConfig.builder().trustManager(SelfSignedCertificate.trusting(elsewhereCert))
            .verifyHostname(false).build();
        assertThat(echo(channel(wrongHost, engine("pins-elsewhere", pinned)), "pinned")).isEqualTo("pinned");
    }

    @Test
    void shouldRefusePlaintextAgainstTlsBothWaysWithAClearError()
    {
        final String tlsServer = server(engine("tls-only-server", serverTls(TlsConfig.ClientAuth.NONE)));
        assertRefused(channel(tlsServer, engine("plain-client", null)), StatusCode.UNAUTHENTICATED, "requires TLS");

        final String plainServer = server(engine("plain-server", null));
        assertRefused(channel(plainServer, engine("tls-client-of-plain", clientTls(null, serverCert))),
            StatusCode.UNAUTHENTICATED, "does not use TLS");

        // both listeners still serve their own kind
        assertThat(echo(channel(tlsServer, engine("tls-client-2", clientTls(null, serverCert))), "tls")).isEqualTo("tls");
        assertThat(echo(channel(plainServer, engine("plain-client-2", null)), "plain")).isEqualTo("plain");
    }

    @Test
    void shouldReportANetworkFailureAsUnavailableNotUnauthenticated() throws IOException
    {
        final int closedPort;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            closedPort = socket.getLocalPort();
        }
        assertRefused(channel("tcp://127.0.0.1:" + closedPort, engine("tls-nowhere", clientTls(null, serverCert))),
            StatusCode.UNAVAILABLE, "cannot connect");
    }

    @Test
    void shouldDropGarbageAndSilenceAtATlsListenerWithBoundedLoggingAndKeepServing() throws Exception
    {
        final String address = server(engine("garbage-server", serverTls(TlsConfig.ClientAuth.NONE)));
        final int port = URI.create(address).getPort();
        final RpcChannel good = channel(address, engine("garbage-good", clientTls(null, serverCert)));
        assertThat(echo(good, "before")).isEqualTo("before");

        final PrintStream originalErr = System.err;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        final int attempts = 30;
        try (Socket silent = new Socket(InetAddress.getLoopbackAddress(), port))
        {
            System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
            final Random random = new Random(42);
            for (int i = 0; i < attempts; i++)
            {
                final byte[] garbage = new byte[512];
                random.nextBytes(garbage);
                if (i % 2 == 0)
                {
                    garbage[0] = 0x16; // a TLS handshake record header, then nonsense
                    garbage[1] = 0x03;
                    garbage[2] = 0x03;
                }
                assertClosedByServer(port, garbage);
            }
            // a silent socket holds no one up: a new client handshakes while it waits
            assertThat(echo(channel(address, engine("garbage-new", clientTls(null, serverCert))), "after"))
                .isEqualTo("after");
        }
        finally
        {
            System.setErr(originalErr);
        }
        assertThat(echo(good, "still")).isEqualTo("still");
        final long lines = captured.toString(StandardCharsets.UTF_8).lines()
            .filter(line -> line.contains("refused a connection")).count();
        assertThat(lines).as(captured.toString(StandardCharsets.UTF_8)).isBetween(1L, 12L);
    }

    /** Sends bytes and expects the server to close the socket (EOF or reset) instead of waiting for more. */
    private static void assertClosedByServer(final int port, final byte[] bytes) throws IOException
    {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port))
        {
            socket.setSoTimeout(20_000);
            final OutputStream out = socket.getOutputStream();
            out.write(bytes);
            out.flush();
            final InputStream in = socket.getInputStream();
            final byte[] buffer = new byte[4096];
            try
            {
                while (in.read(buffer) >= 0)
                {
                    // whatever the server answers (a TLS alert) before closing
                }
            }
            catch (final SocketTimeoutException ex)
            {
                throw new AssertionError("the TLS listener kept a garbage connection open", ex);
            }
            catch (final IOException reset)
            {
                // reset by the server: closed too
            }
        }
    }
}
