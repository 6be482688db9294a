package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.shm.ShmTestDirectories;
import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.rdma.provider.tcp.SelfSignedCertificate;
import io.reverb.rdma.verbs.TlsConfig;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.TestService;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * {@code reverb://} moving to rdma: a server that offers shm and rdma, a client that cannot share the server's shm
 * directory (another one of its own: another host, as far as shm can tell) but has the rdma fabric and the server's
 * subnet. Runs on this host's RDMA device, or on the emulated one ({@link RdmaTestDevice}); skipped with the reason
 * where neither is there.
 */
class RdmaRpcReverbTest
{
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** TLS handshakes on a loaded host, next to the emulated device: far beyond the 2 s default. */
    private static final long SLOW_HANDSHAKE = TimeUnit.SECONDS.toNanos(20);

    @Test
    void shouldMoveToRdmaWhenTheClientSharesNoShmDirectoryWithTheServer() throws IOException
    {
        final String cause = RdmaTestDevice.unavailabilityCause();
        Assumptions.assumeTrue(cause == null, cause);
        final String host = System.getProperty("reverb.disni.localAddress", RdmaTestDevice.EMULATED_HOST);
        final Path serverDir = privateDirectory("fabric-rdma-server-");
        final Path clientDir = privateDirectory("fabric-rdma-client-");
        final EngineConfig serverConfig = new EngineConfig().name("fabric-rdma-server")
            .verbsConfig(VerbsConfig.defaults().withShmDirectory(serverDir));
        final EngineConfig clientConfig = new EngineConfig().name("fabric-rdma-client")
            .verbsConfig(VerbsConfig.defaults().withShmDirectory(clientDir));
        final RpcServer server = RpcServer.builder("reverb://" + host + ":0")
            .transportOptions(EngineOptions.of(serverConfig)).addService(new TestService()).build().start();
        final RpcChannel channel = RpcChannel.builder("reverb://" + host + ":" + server.port())
            .transportOptions(EngineOptions.of(clientConfig)).build();
        try
        {
            assertThat(ReverbTransportTest.listener(server.port()).fabrics())
                .isEqualTo(FabricMessages.FABRIC_SHM | FabricMessages.FABRIC_RDMA);
            assertThat(channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("over rdma"))
                .block(WAIT).getValue()).isEqualTo("over rdma");
            assertThat(channel.fabric()).isEqualTo("rdma");
        }
        finally
        {
            channel.close();
            server.close();
            delete(serverDir);
            delete(clientDir);
        }
    }

    @Test
    void shouldKeepATlsConnectionOffPlaintextRdmaUnlessBothSidesAllowItAndThenAdmitOnlyItsClaim() throws Exception
    {
        final String cause = RdmaTestDevice.unavailabilityCause();
        Assumptions.assumeTrue(cause == null, cause);
        final String host = System.getProperty("reverb.disni.localAddress", RdmaTestDevice.EMULATED_HOST);
        final Path serverDir = privateDirectory("fabric-rdma-tls-server-");
        final Path clientDir = privateDirectory("fabric-rdma-tls-client-");
        final List<String> log = new CopyOnWriteArrayList<>();
        ReverbTransportTest.reverb().logSink((line, stack) -> log.add(line));
        final SelfSignedCertificate serverCert = SelfSignedCertificate.generate("rdma-tls-server", "ip:" + host);
        final SelfSignedCertificate clientCert = SelfSignedCertificate.generate("rdma-tls-client");
        final Function<Boolean, TlsConfig> serverTls = allow -> TlsConfig.builder().keyManager(serverCert.keyManager())
            .trustManager(SelfSignedCertificate.trusting(clientCert)).clientAuth(TlsConfig.ClientAuth.REQUIRE)
            .allowPlaintextRdma(allow).build();
        final Function<Boolean, TlsConfig> clientTls = allow -> TlsConfig.builder().keyManager(clientCert.keyManager())
            .trustManager(SelfSignedCertificate.trusting(serverCert)).allowPlaintextRdma(allow).build();
        final List<AutoCloseable> closeables = new ArrayList<>();
        try
        {
            // TLS on both sides, rdma not allowed: the server does not offer it and the client stays on tcp, saying why
            final RpcServer strict = RpcServer.builder("reverb://" + host + ":0").transportOptions(EngineOptions.of(
                new EngineConfig().name("rdma-tls-strict").tls(serverTls.apply(false))
                    .verbsConfig(VerbsConfig.defaults().withHandshakeTimeoutNanos(SLOW_HANDSHAKE).withShmDirectory(serverDir))))
                .addService(new TestService()).build().start();
            closeables.add(strict::close);
            assertThat(ReverbTransportTest.listener(strict.port()).fabrics()).isEqualTo(FabricMessages.FABRIC_SHM);
            assertThat(log).anySatisfy(line -> assertThat(line).contains("does not offer rdma: its tcp port uses TLS"));
            final RpcChannel stays = RpcChannel.builder("reverb://" + host + ":" + strict.port())
                .transportOptions(EngineOptions.of(new EngineConfig().name("rdma-tls-client")
                    .tls(clientTls.apply(false)).verbsConfig(VerbsConfig.defaults()
                        .withHandshakeTimeoutNanos(SLOW_HANDSHAKE).withShmDirectory(clientDir))))
                .build();
            closeables.add(stays::close);
            assertThat(echo(stays, "tls")).isEqualTo("tls");
            assertThat(stays.fabric()).isEqualTo("tcp");

            // both sides allow plaintext rdma: the client moves and says so; a client without a certificate that
            // dials the rdma listener straight is refused before the server sees it
            final RpcServer open = RpcServer.builder("reverb://" + host + ":0").transportOptions(EngineOptions.of(
                new EngineConfig().name("rdma-tls-open").tls(serverTls.apply(true))
                    .verbsConfig(VerbsConfig.defaults().withHandshakeTimeoutNanos(SLOW_HANDSHAKE).withShmDirectory(serverDir))))
                .addService(new TestService()).build().start();
            closeables.add(open::close);
            final ReverbListener listener = ReverbTransportTest.listener(open.port());
            assertThat(listener.fabrics()).isEqualTo(FabricMessages.FABRIC_SHM | FabricMessages.FABRIC_RDMA);
            // the server allows it, this client does not: it stays on tcp and says why
            final RpcChannel unwilling = RpcChannel.builder("reverb://" + host + ":" + open.port())
                .transportOptions(EngineOptions.of(new EngineConfig().name("rdma-tls-client")
                    .tls(clientTls.apply(false)).verbsConfig(VerbsConfig.defaults()
                        .withHandshakeTimeoutNanos(SLOW_HANDSHAKE).withShmDirectory(clientDir))))
                .build();
            closeables.add(unwilling::close);
            assertThat(echo(unwilling, "still tls")).isEqualTo("still tls");
            assertThat(unwilling.fabric()).isEqualTo("tcp");
            assertThat(log).anySatisfy(line -> assertThat(line).contains("stays on tcp")
                .contains("this side uses TLS, and rdma would carry the calls in plaintext"));
            final RpcChannel moves = RpcChannel.builder("reverb://" + host + ":" + open.port())
                .transportOptions(EngineOptions.of(new EngineConfig().name("rdma-tls-client-open")
                    .tls(clientTls.apply(true))
                    .verbsConfig(VerbsConfig.defaults().withHandshakeTimeoutNanos(SLOW_HANDSHAKE).withShmDirectory(clientDir))))
                .build();
            closeables.add(moves::close);
            assertThat(echo(moves, "plaintext rdma")).isEqualTo("plaintext rdma");
            assertThat(moves.fabric()).isEqualTo("rdma");
            assertThat(log).anySatisfy(line -> assertThat(line).contains("moves from TLS on tcp to rdma"));
            final RpcChannel intruder = RpcChannel.builder(listener.rdmaAddress())
                .transportOptions(EngineOptions.of(new EngineConfig().name("rdma-intruder")
                    .verbsConfig(VerbsConfig.defaults().withHandshakeTimeoutNanos(SLOW_HANDSHAKE).withShmDirectory(clientDir))))
                .build();
            closeables.add(intruder::close);
            assertThatThrownBy(() -> intruder.newUnaryCall(TestService.ECHO,
                CallOptions.DEFAULT.withDeadline(Deadline.after(Duration.ofSeconds(10))), StringValue.of("intruder"))
                .block(WAIT)).isInstanceOf(RuntimeException.class);
        }
        finally
        {
            for (int i = closeables.size() - 1; i >= 0; i--)
            {
                closeables.get(i).close();
            }
            ReverbTransportTest.reverb().logSink((line, stack) ->
                LoggerFactory.getLogger(ReverbTransportProvider.class).warn(line));
            delete(serverDir);
            delete(clientDir);
        }
    }

    private static String echo(final RpcChannel channel, final String text)
    {
        return channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of(text)).block(WAIT).getValue();
    }

    private static Path privateDirectory(final String prefix) throws IOException
    {
        return Files.createTempDirectory(Path.of("/dev/shm"), prefix,
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    }

    /** Files an engine still closing removes meanwhile are passed over (a walk of them once failed the test). */
    private static void delete(final Path dir) throws IOException
    {
        if (dir != null)
        {
            ShmTestDirectories.delete(dir);
        }
    }
}
