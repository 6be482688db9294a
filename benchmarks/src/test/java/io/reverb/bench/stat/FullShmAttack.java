package io.reverb.bench.stat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.reverb.bench.clitest.Item;
import io.reverb.bench.clitest.ItemRequest;
import io.reverb.bench.clitest.ShopRpc;
import io.reverb.common.counters.ProcessCounters;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.publisher.Mono;

/**
 * Attack case (bin/attack-suite, issue 38 item 5): the file system of the counters directory is full, before the
 * server starts or while it serves (another local user can fill /dev/shm). The counters directory points at a small
 * tmpfs mounted for the test. Held when the server starts and answers every call of every new connection (no
 * SIGBUS turned InternalError on the accept path) and the counters log at most one warning. Needs root (mount).
 */
class FullShmAttack
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final int CONNECTIONS = 40;

    @TempDir
    Path tmp;
    private Path mount;
    private boolean mounted;

    @BeforeEach
    void setUp() throws Exception
    {
        assumeTrue(LocalUserAttackSupport.root(), "needs root to mount a small tmpfs");
        assumeTrue(ProcessCounters.current() == null, "another test holds this JVM's counters");
        mount = Files.createDirectory(tmp.resolve("shm"));
    }

    @AfterEach
    void tearDown() throws Exception
    {
        System.clearProperty(ProcessCounters.DIR_PROPERTY);
        if (mounted)
        {
            LocalUserAttackSupport.sh("umount", "-l", mount.toString());
        }
    }

    private void mountTmpfs(final String size) throws Exception
    {
        assumeTrue(LocalUserAttackSupport.sh("mount", "-t", "tmpfs", "-o", "size=" + size + ",mode=0700", "tmpfs",
            mount.toString()) == 0, "mount -t tmpfs failed (no CAP_SYS_ADMIN in this container?)");
        mounted = true;
        System.setProperty(ProcessCounters.DIR_PROPERTY, mount.resolve("reverb-stat-victim").toString());
    }

    /** Writes a file until the file system says it is full. */
    private void fill() throws IOException
    {
        final byte[] chunk = new byte[64 * 1024];
        try (OutputStream out = Files.newOutputStream(mount.resolve("filler")))
        {
            while (true)
            {
                out.write(chunk);
            }
        }
        catch (final IOException full)
        {
            assertThat(full.getMessage()).contains("No space left");
        }
    }

    private static RpcServer server(final String uri) throws IOException
    {
        return RpcServer.builder(uri).addService(new ShopRpc.ShopImplBase()
        {
            @Override
            public Mono<Item> getItem(final ItemRequest request)
            {
                return Mono.just(Item.newBuilder().setName(request.getName()).build());
            }
        }).build().start();
    }

    /** New connections, one call each: every one answered. */
    private static void serveNewConnections(final String uri)
    {
        final List<RpcChannel> channels = new ArrayList<>();
        try
        {
            for (int i = 0; i < CONNECTIONS; i++)
            {
                final RpcChannel channel = RpcChannel.builder(uri).build();
                channels.add(channel);
                assertThat(ShopRpc.newReactorStub(channel).getItem(ItemRequest.newBuilder().setName("c" + i).build())
                    .block(TIMEOUT).getName()).isEqualTo("c" + i);
            }
        }
        finally
        {
            channels.forEach(RpcChannel::close);
        }
    }

    @Test
    void fullBeforeTheServerStarts() throws Exception
    {
        mountTmpfs("1m");
        fill();
        try (LocalUserAttackSupport.CountersLog log = new LocalUserAttackSupport.CountersLog())
        {
            final String uri = "shm://full-before-" + ProcessHandle.current().pid();
            final RpcServer server = server(uri);
            try
            {
                serveNewConnections(uri);
                assertThat(ProcessCounters.current().file()).as("counters in memory").isNull();
            }
            finally
            {
                server.close();
            }
            assertThat(log.warnings()).as(log.all()).isLessThanOrEqualTo(1);
            assertThat(log.all()).contains("No space left");
        }
    }

    @Test
    void fillsWhileTheServerServes() throws Exception
    {
        mountTmpfs("16m");
        try (LocalUserAttackSupport.CountersLog log = new LocalUserAttackSupport.CountersLog())
        {
            final String uri = "shm://full-while-" + ProcessHandle.current().pid();
            final RpcServer server = server(uri);
            try
            {
                assertThat(ProcessCounters.current().file()).as("counters file in the small tmpfs").isNotNull();
                fill();
                // Every new connection (both sides in this process) takes counters further into the file.
                serveNewConnections(uri);
            }
            finally
            {
                server.close();
            }
            assertThat(log.warnings()).as(log.all()).isLessThanOrEqualTo(1);
        }
    }
}
