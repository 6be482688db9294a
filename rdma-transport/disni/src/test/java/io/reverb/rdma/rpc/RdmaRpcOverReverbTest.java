package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.shm.ShmTestDirectories;
import io.reverb.rdma.provider.disni.EmulatedDeviceLeakCheck;
import io.reverb.rdma.provider.disni.RdmaTrafficCheck;
import io.reverb.rdma.verbs.TestScale;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rpc.AbstractRpcTransportTest;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * rpc-core's call suite over {@code reverb://} that ends on rdma: the server offers shm and rdma, the client has a shm
 * directory of its own (another host, as far as shm can tell) and the rdma fabric, so every call of the suite travels
 * over the rdma connection the client moved to (the RDMA device, or the emulated one), through the same transport SPI
 * as {@code ReverbRpcTest}'s shm. After each test the channel, where it is connected, must be on rdma.
 */
@ExtendWith({RdmaTrafficCheck.class, EmulatedDeviceLeakCheck.class})
class RdmaRpcOverReverbTest extends AbstractRpcTransportTest
{
    /** Over a real device on a slow host (TestScale: a VM under emulation), fewer rounds. */
    @Override
    protected int scaledRounds(final int count)
    {
        return TestScale.rounds(count);
    }

    /** Over a real device on a slow host (TestScale), longer limits. */
    @Override
    protected Duration scaledLimit(final Duration limit)
    {
        return Duration.ofNanos(TestScale.nanos(limit.toNanos()));
    }

    /**
     * The suite's one test that is a round trip per message: 10,000 client-stream messages each waiting for its own
     * REQUEST_N. Here client and server run on two engines (the shm directories differ), so each of the 20,000 hops
     * wakes the other engine's poller through the emulated device's completion-event thread: 10-15 s at load 25-30
     * on the 2-core build machine, past the suite's 20 s once. A limit on a wait that must end, not a measurement.
     */
    @Override
    protected Duration messagePerRoundTripLimit()
    {
        return scaledLimit(Duration.ofSeconds(120));
    }

    /** TLS is off here, but a loaded 2-core host next to the emulated device is slow: far beyond the 2 s default. */
    private static final long SLOW_HANDSHAKE = TimeUnit.SECONDS.toNanos(20);
    private static Path serverDir;
    private static Path clientDir;

    @BeforeAll
    static void privateShmDirectories() throws IOException
    {
        serverDir = privateDirectory("reverb-rdma-server-");
        clientDir = privateDirectory("reverb-rdma-client-");
    }

    @AfterAll
    static void deleteShmDirectories() throws IOException
    {
        delete(serverDir);
        delete(clientDir);
    }

    @Override
    protected String newServerUri()
    {
        return RdmaTestUris.newServerUri("reverb");
    }

    @Override
    protected RpcServer.Builder configureServer(final RpcServer.Builder builder)
    {
        return builder.transportOptions(EngineOptions.of(config("reverb-rdma-server", serverDir)));
    }

    @Override
    protected RpcChannel.Builder configureChannel(final RpcChannel.Builder builder)
    {
        return builder.transportOptions(EngineOptions.of(config("reverb-rdma-client", clientDir)));
    }

    private static EngineConfig config(final String name, final Path shmDirectory)
    {
        return new EngineConfig().name(name)
            .verbsConfig(VerbsConfig.defaults().withHandshakeTimeoutNanos(SLOW_HANDSHAKE).withShmDirectory(shmDirectory));
    }

    /** Runs before the suite's own clean-up: a connected channel of the test is on rdma, never on shm or tcp. */
    @AfterEach
    void assertTheChannelIsOnRdma()
    {
        final String fabric = channel == null ? null : channel.fabric();
        if (fabric != null)
        {
            assertThat(fabric).as("the fabric the reverb:// channel ended on").isEqualTo("rdma");
        }
    }

    /** @return the rdma address the reverb:// server on this URI's port listens on. */
    private static String rdmaAddress(final String serverUri)
    {
        final String address = ReverbTransportTest.listener(URI.create(serverUri).getPort()).rdmaAddress();
        assertThat(address).as("the reverb:// server offers rdma").isNotNull();
        return address;
    }

    @Override
    protected boolean killServerConnections(final String serverUri)
    {
        final String rdma = rdmaAddress(serverUri);
        int n = 0;
        for (final EngineTransportConnection connection : ReverbTransportTest.reverb().rdma.connections())
        {
            if (connection.localAddress().equals(rdma))
            {
                connection.engineConnection().abort(new IOException("killed for a test"));
                n++;
            }
        }
        return n > 0;
    }

    @Override
    protected boolean freezeServer(final String serverUri, final boolean frozen)
    {
        final String rdma = rdmaAddress(serverUri);
        int n = 0;
        for (final EngineTransportConnection connection : ReverbTransportTest.reverb().rdma.connections())
        {
            if (connection.localAddress().equals(rdma))
            {
                connection.engineConnection().pauseReceiving(frozen);
                n++;
            }
        }
        return n > 0;
    }

    @Override
    protected boolean freezeClients(final String serverUri, final boolean frozen)
    {
        final String rdma = rdmaAddress(serverUri);
        int n = 0;
        for (final EngineTransportConnection connection : ReverbTransportTest.reverb().rdma.connections())
        {
            if (!connection.localAddress().equals(rdma) && connection.remoteAddress().equals(rdma))
            {
                connection.engineConnection().pauseReceiving(frozen);
                n++;
            }
        }
        return n > 0;
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
