package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.shm.ShmTestDirectories;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.TestService;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import com.google.protobuf.StringValue;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.slf4j.LoggerFactory;

/**
 * What the {@code reverb://} attack cases of {@code bin/attack-suite} share: a private shm directory, the provider's
 * log lines collected, servers and channels closed after each case. Not a test itself.
 */
abstract class FabricAttackBase
{
    static final Duration WAIT = Duration.ofSeconds(60);

    final List<String> log = new CopyOnWriteArrayList<>();
    final List<AutoCloseable> closeables = new ArrayList<>();
    Path dir;
    EngineConfig config;

    @BeforeEach
    void setUpFabric() throws IOException
    {
        dir = Files.createTempDirectory(Path.of("/dev/shm"), "fabric-attack-",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        config = new EngineConfig().name("fabric-attack").verbsConfig(VerbsConfig.defaults().withShmDirectory(dir)
            .withHandshakeTimeoutNanos(Duration.ofSeconds(20).toNanos()));
        ReverbTransportTest.reverb().logSink((line, stack) ->
        {
            log.add(line);
            System.out.println("[reverb log] " + line);
        });
    }

    @AfterEach
    void tearDownFabric() throws Exception
    {
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            try
            {
                closeables.get(i).close();
            }
            catch (final RuntimeException ex)
            {
                // closing what an attack left behind
            }
        }
        ReverbTransportTest.reverb().logSink((line, stack) ->
            LoggerFactory.getLogger(ReverbTransportProvider.class).warn(line));
        ShmTestDirectories.delete(dir);
    }

    RpcServer server(final String address, final EngineConfig serverConfig)
    {
        final RpcServer server = RpcServer.builder(address).transportOptions(EngineOptions.of(serverConfig))
            .addService(new TestService()).build().start();
        closeables.add(server::close);
        return server;
    }

    RpcChannel channel(final String address, final EngineConfig channelConfig)
    {
        final RpcChannel channel = RpcChannel.builder(address).transportOptions(EngineOptions.of(channelConfig))
            .reconnectBackoff(Duration.ofMillis(10), Duration.ofMillis(100)).build();
        closeables.add(channel::close);
        return channel;
    }

    static String echo(final RpcChannel channel, final String text)
    {
        return channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT.withDeadline(Deadline.after(
            Duration.ofSeconds(20))), StringValue.of(text)).block(WAIT).getValue();
    }

    /** Prints the verdict line the suite greps for, and passes it on. */
    static void verdict(final String attack, final boolean held, final String detail)
    {
        System.out.println((held ? "held" : "BROKE") + ": " + attack + ": " + detail);
    }

    /** A connection handler that completes a future with the first message (copied) and the close. */
    static class Recording implements ConnectionHandler
    {
        final CompletableFuture<ByteBuffer> first = new CompletableFuture<>();
        final CompletableFuture<Throwable> closed = new CompletableFuture<>();

        @Override
        public void onMessage(final Connection connection, final ByteBuffer message)
        {
            first.complete(ByteBuffer.allocate(message.remaining()).put(message.duplicate()).flip());
        }

        @Override
        public void onWritable(final Connection connection)
        {
        }

        @Override
        public void onClose(final Connection connection, final Throwable cause)
        {
            closed.complete(cause);
        }
    }
}
