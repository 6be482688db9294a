package io.reverb.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rdma.provider.tcp.SelfSignedCertificate;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.spring.boot.health.ReverbHealthAutoConfiguration;
import io.reverb.spring.boot.test.EchoRequest;
import io.reverb.spring.boot.test.NativeEchoRpc;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.ssl.SslBundles;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ApplicationContext;

/**
 * {@code reverb.server.auth-token}, {@code reverb.server.tls.*} (a Spring Boot SSL bundle, client-auth) and the
 * channel equivalents, end to end over {@code tcp://127.0.0.1}: a client with the token (and the bundle) calls, one
 * without is refused; and the one warning of a server listening beyond loopback with neither. Before these
 * properties existed they were ignored: every client got in, and nothing was logged.
 */
@ExtendWith(OutputCaptureExtension.class)
class ReverbStarterSecurityTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final String WARNING = "listens beyond loopback with neither reverb.server.auth-token nor " +
        "reverb.server.tls";

    @TempDir
    static Path dir;

    private static Path serverCert;
    private static Path serverKey;
    private static Path clientCert;
    private static Path clientKey;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(ReverbAutoConfiguration.class, ReverbHealthAutoConfiguration.class,
            SslAutoConfiguration.class))
        .withUserConfiguration(ReverbAutoConfigurationTest.NativeEchoService.class);

    @BeforeAll
    static void certificates() throws IOException, GeneralSecurityException
    {
        // a cold JVM's first TLS handshakes on a loaded machine can take longer than the 2 s default: the engines
        // opened by this class wait long enough that only a refusal, never the clock, fails a connection
        System.setProperty(VerbsConfig.HANDSHAKE_TIMEOUT_MS_PROP, "60000");
        final SelfSignedCertificate server = SelfSignedCertificate.generate("localhost", "ip:127.0.0.1");
        final SelfSignedCertificate client = SelfSignedCertificate.generate("client");
        serverCert = pem("server.pem", "CERTIFICATE", server.certificate().getEncoded());
        serverKey = pem("server-key.pem", "PRIVATE KEY", server.keyManager().getPrivateKey("reverb").getEncoded());
        clientCert = pem("client.pem", "CERTIFICATE", client.certificate().getEncoded());
        clientKey = pem("client-key.pem", "PRIVATE KEY", client.keyManager().getPrivateKey("reverb").getEncoded());
    }

    @AfterAll
    static void defaultTimeout()
    {
        System.clearProperty(VerbsConfig.HANDSHAKE_TIMEOUT_MS_PROP);
    }

    private static Path pem(final String name, final String type, final byte[] der) throws IOException
    {
        return Files.writeString(dir.resolve(name), "-----BEGIN " + type + "-----\n" +
            Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der) +
            "\n-----END " + type + "-----\n");
    }

    /** @return a channel factory of the context's SSL bundles with one channel, "peer", to the context's server. */
    private static ReverbChannelFactory peer(final ApplicationContext context, final String token, final String bundle)
    {
        final ReverbProperties.Client client = new ReverbProperties.Client();
        final ReverbProperties.Channel channel = new ReverbProperties.Channel();
        channel.setAddress(context.getBean(ReverbServerLifecycle.class).address());
        channel.setAuthToken(token);
        channel.getTls().setBundle(bundle);
        client.getChannels().put("peer", channel);
        return new ReverbChannelFactory(client, List.of(), context.getBean(SslBundles.class));
    }

    private static String echo(final ReverbChannelFactory channels)
    {
        try
        {
            return channels.stub("peer", NativeEchoRpc::newReactorStub)
                .echo(EchoRequest.newBuilder().setText("x").build()).block(TIMEOUT).getText();
        }
        finally
        {
            channels.destroy();
        }
    }

    @Test
    void shouldAdmitOnlyClientsWithTheServersToken()
    {
        runner.withPropertyValues("reverb.server.address=tcp://127.0.0.1:0", "reverb.server.auth-token=s3cret")
            .run(context ->
            {
                assertThat(context).hasNotFailed();
                assertThat(echo(peer(context, "s3cret", null))).isEqualTo("unit:x");
                assertThatThrownBy(() -> echo(peer(context, null, null))).hasMessageContaining("UNAUTHENTICATED");
                assertThatThrownBy(() -> echo(peer(context, "guess", null))).hasMessageContaining("UNAUTHENTICATED");
            });
    }

    @Test
    void shouldRefuseATokenThatIsAnUnresolvedPlaceholder()
    {
        // the documented auth-token=${REVERB_TOKEN}, started without the variable: Spring binds the text itself,
        // which would have become a token everybody knows (and silenced the insecure-listener warning)
        runner.withPropertyValues("reverb.server.address=tcp://127.0.0.1:0",
                "reverb.server.auth-token=${REVERB_TEST_TOKEN_NEVER_SET}")
            .run(context -> assertThat(context).hasFailed().getFailure()
                .hasStackTraceContaining("reverb.server.auth-token holds an unresolved placeholder")
                .hasStackTraceContaining("${REVERB_TEST_TOKEN_NEVER_SET}"));
    }

    @Test
    void shouldServeMutualTlsFromAnSslBundle()
    {
        runner.withPropertyValues("reverb.server.address=tcp://127.0.0.1:0",
                "spring.ssl.bundle.pem.server.keystore.certificate=file:" + serverCert,
                "spring.ssl.bundle.pem.server.keystore.private-key=file:" + serverKey,
                "spring.ssl.bundle.pem.server.truststore.certificate=file:" + clientCert,
                "spring.ssl.bundle.pem.client.keystore.certificate=file:" + clientCert,
                "spring.ssl.bundle.pem.client.keystore.private-key=file:" + clientKey,
                "spring.ssl.bundle.pem.client.truststore.certificate=file:" + serverCert,
                "spring.ssl.bundle.pem.anonymous.truststore.certificate=file:" + serverCert,
                "reverb.server.tls.bundle=server", "reverb.server.tls.client-auth=require")
            .run(context ->
            {
                assertThat(context).hasNotFailed();
                assertThat(echo(peer(context, null, "client"))).isEqualTo("unit:x");
                // plaintext, and TLS without a client certificate: refused
                assertThatThrownBy(() -> echo(peer(context, null, null))).hasMessageContaining("UNAUTHENTICATED")
                    .hasMessageContaining("this listener requires TLS");
                assertThatThrownBy(() -> echo(peer(context, null, "anonymous"))).message()
                    .containsAnyOf("UNAUTHENTICATED", "UNAVAILABLE");
            });
    }

    @Test
    void shouldRefuseTlsWithoutAUsableBundle()
    {
        runner.withPropertyValues("reverb.server.address=tcp://127.0.0.1:0", "reverb.server.tls.bundle=missing")
            .run(context -> assertThat(context).hasFailed().getFailure()
                .hasStackTraceContaining("reverb.server.tls.bundle=missing"));
        runner.withPropertyValues("reverb.server.address=tcp://127.0.0.1:0", "reverb.server.tls.enabled=true")
            .run(context -> assertThat(context).hasFailed().getFailure()
                .hasStackTraceContaining("a server needs its certificate and key"));
    }

    @Test
    void shouldWarnOnceWhenListeningBeyondLoopbackWithNeitherTokenNorTls(final CapturedOutput output)
    {
        runner.withPropertyValues("reverb.server.address=tcp://127.0.0.1:0").run(context ->
            assertThat(context.getBean(ReverbServerLifecycle.class).isRunning()).isTrue());
        runner.withPropertyValues("reverb.server.address=tcp://0.0.0.0:0", "reverb.server.auth-token=s3cret")
            .run(context -> assertThat(context.getBean(ReverbServerLifecycle.class).isRunning()).isTrue());
        assertThat(output.getAll()).doesNotContain(WARNING);

        runner.withPropertyValues("reverb.server.address=tcp://0.0.0.0:0").run(context ->
        {
            final ReverbServerLifecycle server = context.getBean(ReverbServerLifecycle.class);
            server.stop();
            server.start(); // a restart says nothing new
            assertThat(server.isRunning()).isTrue();
        });
        assertThat(output.getAll().split(WARNING, -1)).hasSize(2);
    }

    @Test
    void shouldTellLoopbackFromBeyond()
    {
        assertThat(ReverbSecurity.beyondLoopback("reverb://0.0.0.0:9090")).isTrue();
        assertThat(ReverbSecurity.beyondLoopback("tcp://[::]:9090")).isTrue();
        assertThat(ReverbSecurity.beyondLoopback("tcp://127.0.0.1:9090")).isFalse();
        assertThat(ReverbSecurity.beyondLoopback("tcp://[::1]:9090")).isFalse();
        assertThat(ReverbSecurity.beyondLoopback("tcp://localhost:9090")).isFalse();
        assertThat(ReverbSecurity.beyondLoopback("shm://greeter")).isFalse();
        assertThat(ReverbSecurity.beyondLoopback("inproc://greeter")).isFalse();
    }
}
