package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.rdma.provider.shm.ShmTestDirectories;
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
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Attack case (bin/attack-suite): a plain {@code rdma://} client without a certificate against a mutual-TLS
 * {@code reverb://} server, over this host's RDMA device or, without one, the emulated device (this class asks for
 * it: {@link RdmaTestDevice#EMULATION_PROP}). Held: a server with TLS offers no rdma unless told it may
 * (allowPlaintextRdma), and then its rdma listener answers no call of a client that did not claim a ticket of a TLS
 * connection.
 */
class RdmaWithoutCredentialsAttack
{
    private static final long SLOW_HANDSHAKE = TimeUnit.SECONDS.toNanos(20);

    @Test
    void rdmaClientWithoutCertificateAgainstAMutualTlsServer() throws Exception
    {
        if (System.getProperty(RdmaTestDevice.EMULATION_PROP) == null)
        {
            System.setProperty(RdmaTestDevice.EMULATION_PROP, "true");
        }
        final String cause = RdmaTestDevice.unavailabilityCause();
        Assumptions.assumeTrue(cause == null, cause);
        final String host = System.getProperty("reverb.disni.localAddress", RdmaTestDevice.EMULATED_HOST);
        final Path serverDir = Files.createTempDirectory(Path.of("/dev/shm"), "attack-rdma-server-",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        final Path clientDir = Files.createTempDirectory(Path.of("/dev/shm"), "attack-rdma-client-",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        final SelfSignedCertificate serverCert = SelfSignedCertificate.generate("attack-rdma-server", "ip:" + host);
        final SelfSignedCertificate clientCert = SelfSignedCertificate.generate("attack-rdma-client");
        final List<AutoCloseable> closeables = new ArrayList<>();
        try
        {
            final RpcServer strict = server(host, serverDir, "attack-rdma-strict", TlsConfig.builder()
                .keyManager(serverCert.keyManager()).trustManager(SelfSignedCertificate.trusting(clientCert))
                .clientAuth(TlsConfig.ClientAuth.REQUIRE).build());
            closeables.add(strict::close);
            final boolean strictOffersRdma = ReverbTransportTest.listener(strict.port()).rdmaAddress() != null;
            final RpcServer open = server(host, serverDir, "attack-rdma-open", TlsConfig.builder()
                .keyManager(serverCert.keyManager()).trustManager(SelfSignedCertificate.trusting(clientCert))
                .clientAuth(TlsConfig.ClientAuth.REQUIRE).allowPlaintextRdma(true).build());
            closeables.add(open::close);
            final String rdma = ReverbTransportTest.listener(open.port()).rdmaAddress();
            assertThat(rdma).as("a server that allows plaintext rdma offers it").isNotNull();
            final RpcChannel intruder = RpcChannel.builder(rdma).transportOptions(EngineOptions.of(
                new EngineConfig().name("attack-rdma-intruder").verbsConfig(VerbsConfig.defaults()
                    .withHandshakeTimeoutNanos(SLOW_HANDSHAKE).withShmDirectory(clientDir)))).build();
            closeables.add(intruder::close);
            String outcome;
            boolean answered;
            try
            {
                outcome = "answered: " + intruder.newUnaryCall(TestService.ECHO,
                    CallOptions.DEFAULT.withDeadline(Deadline.after(Duration.ofSeconds(20))),
                    StringValue.of("no certificate")).block(Duration.ofSeconds(60)).getValue();
                answered = true;
            }
            catch (final RuntimeException refused)
            {
                outcome = "refused: " + refused.getMessage();
                answered = false;
            }
            final boolean held = !strictOffersRdma && !answered;
            System.out.println((held ? "held" : "BROKE") + ": rdma client without a certificate vs mutual-TLS " +
                "reverb:// server" + (RdmaTestDevice.isEmulated() ? " (emulated device)" : "") + ": the default " +
                "server " + (strictOffersRdma ? "offers" : "does not offer") + " rdma; on " + rdma + " the call was " +
                outcome);
            assertThat(held).isTrue();
        }
        finally
        {
            for (int i = closeables.size() - 1; i >= 0; i--)
            {
                closeables.get(i).close();
            }
            delete(serverDir);
            delete(clientDir);
        }
    }

    private static RpcServer server(final String host, final Path dir, final String name, final TlsConfig tls)
    {
        return RpcServer.builder("reverb://" + host + ":0").transportOptions(EngineOptions.of(new EngineConfig()
            .name(name).tls(tls).verbsConfig(VerbsConfig.defaults().withHandshakeTimeoutNanos(SLOW_HANDSHAKE)
                .withShmDirectory(dir)))).addService(new TestService()).build().start();
    }

    /** Files an engine still closing removes meanwhile are passed over. */
    private static void delete(final Path dir) throws IOException
    {
        ShmTestDirectories.delete(dir);
    }
}
