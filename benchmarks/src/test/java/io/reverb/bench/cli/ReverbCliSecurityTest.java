package io.reverb.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Grpc;
import io.grpc.Server;
import io.grpc.TlsServerCredentials;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.reverb.bench.cli.ReverbCliTest.Run;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.tcp.SelfSignedCertificate;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.rdma.verbs.TlsConfig;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rpc.RpcServer;
import io.reverb.services.reflection.ReflectionService;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateEncodingException;
import java.time.Duration;
import java.util.Base64;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * reverb-cli's {@code --token}, {@code --tls}, {@code --tls-ca}, {@code --tls-cert} and {@code --tls-key} against a
 * {@code tcp://} server that requires all of them (mutual TLS and the token), and a grpc-java server over Netty with
 * mutual TLS: with them it lists the services; without any one of them the server refuses it; options that do not
 * fit the address are usage errors. Before these options existed, reverb-cli could not reach such a server at all.
 */
class ReverbCliSecurityTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final String TOKEN = "s3cret-token";

    @TempDir
    static Path dir;

    private static RpcServer server;
    private static String uri;
    private static Server grpcServer;
    private static String grpcUri;
    private static Path ca;
    private static Path clientCert;
    private static Path clientKey;
    private static Path tokenFile;

    @BeforeAll
    static void startServer() throws IOException, CertificateEncodingException
    {
        // a cold JVM's first TLS handshakes on a loaded machine can take longer than the 2 s default: the engines
        // opened by this class wait long enough that only a refusal, never the clock, fails a connection
        System.setProperty(VerbsConfig.HANDSHAKE_TIMEOUT_MS_PROP, "60000");
        final SelfSignedCertificate serverCert = SelfSignedCertificate.generate("localhost", "ip:127.0.0.1");
        final SelfSignedCertificate client = SelfSignedCertificate.generate("reverb-cli");
        final TlsConfig tls = TlsConfig.builder().keyManager(serverCert.keyManager())
            .trustManager(SelfSignedCertificate.trusting(client)).clientAuth(TlsConfig.ClientAuth.REQUIRE).build();
        server = ReflectionService.addTo(RpcServer.builder("tcp://127.0.0.1:0")
            .transportOptions(EngineOptions.of(new EngineConfig().tls(tls).authToken(TOKEN)))
            .addService(new ShopFixture().nativeShop())).build().start();
        uri = "tcp://127.0.0.1:" + server.port();
        ca = pem(dir.resolve("ca.pem"), "CERTIFICATE", serverCert.certificate().getEncoded());
        clientCert = pem(dir.resolve("client.pem"), "CERTIFICATE", client.certificate().getEncoded());
        clientKey = pem(dir.resolve("client-key.pem"), "PRIVATE KEY",
            client.keyManager().getPrivateKey("reverb").getEncoded());
        tokenFile = Files.writeString(dir.resolve("token"), TOKEN + "\n");
        // grpc-java over Netty with mutual TLS, for --tls with grpc://
        final Path serverPem = pem(dir.resolve("server.pem"), "CERTIFICATE", serverCert.certificate().getEncoded());
        final Path serverKey = pem(dir.resolve("server-key.pem"), "PRIVATE KEY",
            serverCert.keyManager().getPrivateKey("reverb").getEncoded());
        grpcServer = Grpc.newServerBuilderForPort(0, TlsServerCredentials.newBuilder()
                .keyManager(serverPem.toFile(), serverKey.toFile()).trustManager(clientCert.toFile())
                .clientAuth(TlsServerCredentials.ClientAuth.REQUIRE).build())
            .addService(new ShopFixture().grpcShop()).addService(ProtoReflectionServiceV1.newInstance()).build().start();
        grpcUri = "grpc://127.0.0.1:" + grpcServer.getPort();
    }

    @AfterAll
    static void stopServer() throws InterruptedException
    {
        System.clearProperty(VerbsConfig.HANDSHAKE_TIMEOUT_MS_PROP);
        grpcServer.shutdownNow();
        assertThat(grpcServer.awaitTermination(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        server.shutdown();
        assertThat(server.awaitTermination(TIMEOUT)).isTrue();
    }

    private static Path pem(final Path file, final String type, final byte[] der) throws IOException
    {
        return Files.writeString(file, "-----BEGIN " + type + "-----\n" +
            Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der) +
            "\n-----END " + type + "-----\n");
    }

    @Test
    void shouldReachAServerRequiringMutualTlsAndTheToken()
    {
        final Run list = ReverbCliTest.run("list", uri, "--token", TOKEN, "--tls-ca", ca.toString(),
            "--tls-cert", clientCert.toString(), "--tls-key", clientKey.toString());
        assertThat(list.code).as(list.err).isZero();
        assertThat(list.outLines()).contains("reverb.bench.clitest.Shop");

        final Run call = ReverbCliTest.run("call", uri, "reverb.bench.clitest.Shop/GetItem", "-d", "{\"name\":\"pen\"}",
            "--token-file", tokenFile.toString(), "--tls", "--tls-ca", ca.toString(), "--tls-cert",
            clientCert.toString(), "--tls-key", clientKey.toString());
        assertThat(call.code).as(call.err).isZero();
        assertThat(call.out).contains("\"name\": \"pen\"");
    }

    @Test
    void shouldReachAGrpcServerRequiringMutualTls()
    {
        final Run list = ReverbCliTest.run("list", grpcUri, "--tls-ca", ca.toString(), "--tls-cert",
            clientCert.toString(), "--tls-key", clientKey.toString());
        assertThat(list.code).as(list.err).isZero();
        assertThat(list.outLines()).contains("reverb.bench.clitest.Shop");

        for (final String[] args : new String[][] {{"list", grpcUri, "--deadline", "5s"},
            {"list", grpcUri, "--deadline", "5s", "--tls-ca", ca.toString()}})
        {
            final Run refused = ReverbCliTest.run(args);
            assertThat(refused.code).as(String.join(" ", args)).isEqualTo(CliException.NO_CONNECTION);
        }
    }

    @Test
    void shouldBeRefusedWithoutAnyOneOfThem()
    {
        final String[] noToken = {"list", uri, "--deadline", "5s", "--tls-ca", ca.toString(), "--tls-cert",
            clientCert.toString(), "--tls-key", clientKey.toString()};
        final String[] noClientCert = {"list", uri, "--deadline", "5s", "--token", TOKEN, "--tls-ca", ca.toString()};
        final String[] wrongToken = {"list", uri, "--deadline", "5s", "--token", "guess", "--tls-ca", ca.toString(),
            "--tls-cert", clientCert.toString(), "--tls-key", clientKey.toString()};
        final String[] plaintext = {"list", uri, "--deadline", "5s", "--token", TOKEN};
        for (final String[] args : new String[][] {noToken, noClientCert, wrongToken, plaintext})
        {
            final Run list = ReverbCliTest.run(args);
            assertThat(list.code).as(String.join(" ", args) + ": " + list.out).isEqualTo(CliException.NO_CONNECTION);
            assertThat(list.out).isEmpty();
        }
    }

    @Test
    void shouldRefuseOptionsThatDoNotFit() throws IOException
    {
        assertUsage(ReverbCliTest.run("list", uri, "--tls-cert", clientCert.toString()),
            "--tls-cert and --tls-key go together");
        assertUsage(ReverbCliTest.run("list", "shm://nowhere", "--tls"), "--tls applies to tcp://, reverb:// and grpc://");
        assertUsage(ReverbCliTest.run("list", "grpc://127.0.0.1:1", "--token", TOKEN), "--token is Reverb's");
        assertUsage(ReverbCliTest.run("list", uri, "--token", TOKEN, "--token-file", tokenFile.toString()),
            "give --token or --token-file, not both");
        final Path sec1 = Files.writeString(dir.resolve("ec.pem"), "-----BEGIN EC PRIVATE KEY-----\nAAAA\n" +
            "-----END EC PRIVATE KEY-----\n");
        assertUsage(ReverbCliTest.run("list", uri, "--tls-cert", clientCert.toString(), "--tls-key", sec1.toString()),
            "openssl pkcs8 -topk8 -nocrypt");
        assertUsage(ReverbCliTest.run("list", uri, "--tls-ca", tokenFile.toString()), "cannot");
    }

    private static void assertUsage(final Run run, final String message)
    {
        assertThat(run.code).as(run.err).isEqualTo(CliException.USAGE);
        assertThat(run.err).contains(message);
    }
}
