package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.TestService;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * {@code reverb://} moving to rdma: a server that offers shm and rdma, a client that cannot share the server's shm
 * directory (another one of its own: another host, as far as shm can tell) but has the rdma fabric and the server's
 * subnet. Runs on this host's RDMA device, or on the emulated one ({@link RdmaTestDevice}); skipped with the reason
 * where neither is there.
 */
class RdmaRpcReverbTest
{
    private static final Duration WAIT = Duration.ofSeconds(30);

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

    private static Path privateDirectory(final String prefix) throws IOException
    {
        return Files.createTempDirectory(Path.of("/dev/shm"), prefix,
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    }

    private static void delete(final Path dir) throws IOException
    {
        try (Stream<Path> files = Files.walk(dir))
        {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
