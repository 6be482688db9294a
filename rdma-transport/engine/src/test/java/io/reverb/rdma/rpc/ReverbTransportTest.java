package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.EngineListener;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.provider.shm.ShmTestDirectories;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportProvider;
import io.reverb.rpc.transport.Transports;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * {@code reverb://} in one JVM: the same client code lands on shm when it can prove it shares the server's host and
 * shm directory, and on tcp, with the reason in the log, when it cannot; a refused upgrade never fails a call; plain
 * {@code tcp://} clients and servers interoperate with it. The two-host case (network namespaces) is
 * {@link ReverbNamespacesTest}.
 */
class ReverbTransportTest
{
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final List<String> log = new CopyOnWriteArrayList<>();
    private Path dir;
    private EngineConfig config;

    static ReverbTransportProvider reverb()
    {
        for (final TransportProvider provider : Transports.providers())
        {
            if (provider instanceof ReverbTransportProvider)
            {
                return (ReverbTransportProvider)provider;
            }
        }
        throw new AssertionError("no reverb:// provider on the class path");
    }

    static ReverbListener listener(final int port)
    {
        return reverb().listeners.stream().filter(l -> l.port() == port).findFirst()
            .orElseThrow(() -> new AssertionError("no reverb:// listener on port " + port));
    }

    @BeforeEach
    void setUp() throws IOException
    {
        dir = Files.createTempDirectory(Path.of("/dev/shm"), "fabric-test-",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        // a generous handshake: on a loaded machine the 2 s default expired before the client proved its token
        config = new EngineConfig().name("fabric-test").verbsConfig(VerbsConfig.defaults().withShmDirectory(dir)
            .withHandshakeTimeoutNanos(TimeUnit.SECONDS.toNanos(30)));
        reverb().logSink((line, stack) -> log.add(line));
    }

    @AfterEach
    void tearDown() throws IOException
    {
        reverb().logSink((line, stack) -> LoggerFactory.getLogger(ReverbTransportProvider.class).warn(line));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        ShmTestDirectories.delete(dir);
    }

    private RpcServer server(final EngineConfig serverConfig)
    {
        return RpcServer.builder("reverb://127.0.0.1:0").transportOptions(EngineOptions.of(serverConfig))
            .addService(new TestService()).build().start();
    }

    private static String echo(final RpcChannel channel, final String text)
    {
        return channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of(text)).block(WAIT).getValue();
    }

    @Test
    void shouldMoveToShmOnTheSameHostAndCloseTheTcpConnection()
    {
        final RpcServer server = server(config);
        final ReverbListener listener = listener(server.port());
        assertThat(server.address()).isEqualTo("reverb://127.0.0.1:" + server.port());
        assertThat(listener.fabrics()).isEqualTo(FabricMessages.FABRIC_SHM);
        final RpcChannel channel = RpcChannel.builder("reverb://127.0.0.1:" + server.port())
            .transportOptions(EngineOptions.of(config)).build();
        try
        {
            assertThat(channel.fabric()).as("no connection before the first call").isNull();
            assertThat(echo(channel, "over shm")).isEqualTo("over shm");
            assertThat(channel.fabric()).isEqualTo("shm");
            assertThat(echo(channel, "again")).isEqualTo("again");
            assertThat(log).as("an upgrade that works says nothing").isEmpty();
        }
        finally
        {
            channel.close();
            server.close();
        }
        assertThat(Files.exists(listener.secretFile())).as("the secret file goes with the server").isFalse();
    }

    @Test
    void shouldDeleteTheSecretFilesOfServersThatDiedWithoutClosing() throws IOException
    {
        // a server killed with SIGKILL: its secret file stays, its socket is gone (the shm fabric removes it)
        final Path stale = dir.resolve(ReverbListener.SECRET_PREFIX + "reverb-1-dead" + ReverbListener.SECRET_SUFFIX);
        HostIdentity.writeSecret(stale, FabricMessages.random(FabricMessages.SECRET_LENGTH));
        final RpcServer server = server(config);
        try
        {
            assertThat(stale).doesNotExist();
            assertThat(listener(server.port()).secretFile()).as("its own stays").exists();
        }
        finally
        {
            server.close();
        }
    }

    @Test
    void shouldTagEngineMetricsWithTheFabric()
    {
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        final EngineConfig metered = config.copy().meterRegistry(registry);
        final RpcServer server = server(metered);
        final RpcChannel channel = RpcChannel.builder("reverb://127.0.0.1:" + server.port())
            .transportOptions(EngineOptions.of(metered)).build();
        try
        {
            assertThat(echo(channel, "m")).isEqualTo("m");
            final List<String> fabrics = registry.getMeters().stream().map(Meter::getId)
                .filter(id -> id.getName().equals("reverb.engine.messages.sent"))
                .map(id -> id.getTag("fabric")).distinct().sorted().toList();
            // the server's tcp engine and both sides' shm engines
            assertThat(fabrics).containsExactly("shm", "tcp");
            final double shmSent = registry.find("reverb.engine.messages.sent").tag("fabric", "shm").meters().stream()
                .flatMap(m -> StreamSupport.stream(m.measure().spliterator(), false))
                .mapToDouble(m -> m.getValue()).sum();
            assertThat(shmSent).as("the call went over shm").isPositive();
        }
        finally
        {
            channel.close();
            server.close();
        }
    }

    @Test
    void shouldStayOnTcpAndSayWhyWhenTheShmDirectoryIsNotPrivate() throws IOException
    {
        final RpcServer server = server(config);
        // the client's directory is the server's, but no longer private to this user: a file in it proves nothing
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        final RpcChannel channel = RpcChannel.builder("reverb://127.0.0.1:" + server.port())
            .transportOptions(EngineOptions.of(config)).build();
        try
        {
            assertThat(echo(channel, "over tcp")).isEqualTo("over tcp");
            assertThat(channel.fabric()).isEqualTo("tcp");
            assertThat(log).singleElement().asString().contains("stays on tcp").contains("not private")
                .contains("rwxr-xr-x");
        }
        finally
        {
            channel.close();
            server.close();
        }
    }

    @Test
    void shouldStayOnTcpAndSayWhyWhenTheSecretFileCannotBeRead() throws IOException
    {
        final RpcServer server = server(config);
        Files.delete(listener(server.port()).secretFile());
        final RpcChannel channel = RpcChannel.builder("reverb://127.0.0.1:" + server.port())
            .transportOptions(EngineOptions.of(config)).build();
        try
        {
            assertThat(echo(channel, "over tcp")).isEqualTo("over tcp");
            assertThat(channel.fabric()).isEqualTo("tcp");
            assertThat(log).singleElement().asString().contains("cannot read the server's secret file");
        }
        finally
        {
            channel.close();
            server.close();
        }
    }

    @Test
    void shouldStayOnTcpWhenTheClientUsesAnotherShmDirectory() throws IOException
    {
        final RpcServer server = server(config);
        final Path other = Files.createDirectory(dir.resolve("other"),
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        final EngineConfig elsewhere = new EngineConfig().name("fabric-elsewhere")
            .verbsConfig(VerbsConfig.defaults().withShmDirectory(other));
        final RpcChannel channel = RpcChannel.builder("reverb://127.0.0.1:" + server.port())
            .transportOptions(EngineOptions.of(elsewhere)).build();
        try
        {
            assertThat(echo(channel, "over tcp")).isEqualTo("over tcp");
            assertThat(channel.fabric()).isEqualTo("tcp");
            assertThat(log).singleElement().asString().contains("is not this side's");
        }
        finally
        {
            channel.close();
            server.close();
        }
    }

    @Test
    void shouldKeepCallsWorkingOverTcpWhenTheServerRefusesTheUpgradeMidWay()
    {
        final RpcServer server = server(config);
        listener(server.port()).refuseClaims(true);
        final RpcChannel channel = RpcChannel.builder("reverb://127.0.0.1:" + server.port())
            .transportOptions(EngineOptions.of(config)).build();
        try
        {
            assertThat(echo(channel, "still works")).isEqualTo("still works");
            assertThat(channel.fabric()).isEqualTo("tcp");
            assertThat(log).singleElement().asString().contains("refused the upgrade");
        }
        finally
        {
            channel.close();
            server.close();
        }
    }

    @Test
    void shouldUpgradeWithATokenOnBothSidesAndServePlainTcpClientsOnTheSamePort()
    {
        final EngineConfig withToken = config.copy().authToken("fabric-token-0123456789abcdef");
        final RpcServer server = server(withToken);
        final RpcChannel reverbChannel = RpcChannel.builder("reverb://127.0.0.1:" + server.port())
            .transportOptions(EngineOptions.of(withToken)).build();
        final RpcChannel tcpChannel = RpcChannel.builder("tcp://127.0.0.1:" + server.port())
            .transportOptions(EngineOptions.of(withToken)).build();
        final RpcChannel shmChannel = RpcChannel.builder(listener(server.port()).shmAddress())
            .transportOptions(EngineOptions.of(withToken)).build();
        try
        {
            assertThat(echo(reverbChannel, "r")).isEqualTo("r");
            assertThat(reverbChannel.fabric()).isEqualTo("shm");
            assertThat(echo(tcpChannel, "t")).isEqualTo("t");
            assertThat(tcpChannel.fabric()).isEqualTo("tcp");
            assertThat(echo(shmChannel, "s")).isEqualTo("s");
            assertThat(shmChannel.fabric()).isEqualTo("shm");
            assertThat(log).isEmpty();
        }
        finally
        {
            reverbChannel.close();
            tcpChannel.close();
            shmChannel.close();
            server.close();
        }
    }

    @Test
    void shouldNotLetAPeerOnTheTcpPortRedirectTheClientToAnotherServersShmName() throws Exception
    {
        // the victim: a reverb:// server of this user on this host, whose shm name and secret file the peer knows
        final RpcServer victim = server(config);
        final ReverbListener victimListener = listener(victim.port());
        // the peer on the tcp port: answers the fabric request with an offer of the victim's shm name, and a ticket of
        // its own making (it cannot have one of the victim's: those are given only to the victim's own connections)
        final FabricMessages.Offer forged = new FabricMessages.Offer();
        forged.fabrics = FabricMessages.FABRIC_SHM;
        forged.bootId = HostIdentity.bootId(HostIdentity.BOOT_ID);
        final long[] key = HostIdentity.deviceAndInode(dir);
        forged.shmDevice = key[0];
        forged.shmInode = key[1];
        forged.shmName = victimListener.shmAddress().substring("shm://".length());
        forged.secretFile = victimListener.secretFile().getFileName().toString();
        forged.ticket = FabricMessages.random(16);
        final ServerListener peer = reverb().tcp.listen(
            URI.create("tcp://127.0.0.1:0"), EngineOptions.of(config), connection -> new RecordingHandler()
            {
                @Override
                public void onMessage(final Connection c, final ByteBuffer message)
                {
                    final byte[] nonce = FabricMessages.helloNonce(message);
                    ReverbTransportProvider.send(c, FabricMessages.offer(forged, nonce, null));
                }
            });
        final RecordingHandler client = new RecordingHandler();
        try
        {
            final Connection connection = reverb().connect(
                URI.create("reverb://127.0.0.1:" + peer.port()), EngineOptions.of(config), client)
                .get(30, TimeUnit.SECONDS);
            assertThat(connection.fabric()).as("still on the peer's tcp connection, not the victim's shm").isEqualTo("tcp");
            assertThat(log).singleElement().asString().contains("refused the upgrade")
                .contains("unknown, used or expired ticket");
            connection.close();
        }
        finally
        {
            peer.close();
            victim.close();
        }
    }

    /** A connection handler that does nothing. */
    private static class RecordingHandler implements ConnectionHandler
    {
        @Override
        public void onMessage(final Connection connection, final ByteBuffer message)
        {
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

    @Test
    void shouldFallBackToPlainTcpAgainstATcpServer()
    {
        final RpcServer server = RpcServer.builder("tcp://127.0.0.1:0").transportOptions(EngineOptions.of(config))
            .addService(new TestService()).build().start();
        final RpcChannel channel = RpcChannel.builder("reverb://127.0.0.1:" + server.port())
            .transportOptions(EngineOptions.of(config)).build();
        try
        {
            assertThat(echo(channel, "plain")).isEqualTo("plain");
            assertThat(channel.fabric()).isEqualTo("tcp");
            assertThat(log).singleElement().asString()
                .contains("the server answered the fabric request with an RPC frame (a tcp:// server, not reverb://)")
                .contains("connecting over plain tcp");
        }
        finally
        {
            channel.close();
            server.close();
        }
    }

    /**
     * A server whose connections close before it offers fabrics (a server shutting down; here an engine that closes
     * every connection it accepts): the client says so, tries plain tcp, and the call fails UNAVAILABLE. The log said
     * "answered ... with an RPC frame or closed the connection" before, which read as a tcp:// server.
     */
    @Test
    void shouldSayTheServerClosedTheConnectionBeforeOfferingFabrics() throws IOException
    {
        try (RdmaEngine closing = RdmaEngine.open("tcp", new EngineConfig().name("closing-server"));
            EngineListener listener = closing.listen("127.0.0.1:0", refused -> refused.close());
            RpcChannel channel = RpcChannel.builder("reverb://" + listener.address())
                .transportOptions(EngineOptions.of(config)).build())
        {
            assertThatThrownBy(() -> echo(channel, "gone")).isInstanceOf(RpcException.class)
                .satisfies(e -> assertThat(((RpcException)e).status().code()).isEqualTo(StatusCode.UNAVAILABLE));
            assertThat(log).anySatisfy(line -> assertThat(line)
                .contains("the server closed the connection before offering fabrics (a tcp:// server, not reverb://, " +
                    "or one shutting down")
                .contains("connecting over plain tcp"));
            assertThat(log).noneSatisfy(line -> assertThat(line).contains("RPC frame"));
        }
    }
}
