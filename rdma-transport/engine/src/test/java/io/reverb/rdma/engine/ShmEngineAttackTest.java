package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.reverb.rdma.verbs.VerbsConfig;
import java.io.Closeable;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * {@link AbstractEngineAttackTest} against a server on {@code shm://}, and the shm items: another user
 * cannot reach the server (6), a stale-file sweep by another process, here as from another container,
 * leaves a live server's files alone (7), and closed connections leave no mapping behind (8).
 */
class ShmEngineAttackTest extends AbstractEngineAttackTest
{
    @Override
    protected String scheme()
    {
        return "shm";
    }

    @Override
    protected String listenAddress()
    {
        return EngineTestSupport.uniqueName("attack");
    }

    @Override
    protected VerbsConfig verbsConfig()
    {
        return EngineTestSupport.verbsConfig().withHandshakeTimeoutNanos(TimeUnit.SECONDS.toNanos(30))
            .withMaxPendingHandshakes(8);
    }

    private Path socketOf(final String name)
    {
        return verbsConfig().shmDirectory().resolve(name + ".sock");
    }

    @Override
    protected List<Closeable> idleSockets(final String address, final int n) throws IOException
    {
        final List<Closeable> sockets = new ArrayList<>();
        for (int i = 0; i < n; i++)
        {
            sockets.add(SocketChannel.open(UnixDomainSocketAddress.of(socketOf(address))));
        }
        return sockets;
    }

    @Override
    protected int sendOversizeProviderHandshakes(final String address) throws IOException
    {
        final ByteBuffer[] requests = {
            ByteBuffer.allocate(4).putInt(0, Integer.MAX_VALUE),
            // a request whose first file name claims 65535 bytes (a NegativeArraySizeException once)
            ByteBuffer.allocate(64).putInt(0, 60).putInt(4, 0x5256_4853).putInt(8, 1).putLong(12, 1).putShort(20, (short)-1)};
        for (final ByteBuffer request : requests)
        {
            try (SocketChannel socket = SocketChannel.open(UnixDomainSocketAddress.of(socketOf(address))))
            {
                socket.write(request);
                final ByteBuffer answer = ByteBuffer.allocate(1);
                assertThat(socket.read(answer)).as("dropped without an answer").isEqualTo(-1);
            }
        }
        return requests.length;
    }

    @Test
    void shouldNotBeReachableByAProcessOfAnotherUser() throws Exception
    {
        assumeTrue(isRoot() && Files.isExecutable(Path.of("/usr/bin/setpriv")) && Files.isExecutable(Path.of("/usr/bin/python3")),
            "needs root, setpriv and python3 to run an attacker as user nobody");
        final Path socket = socketOf(listener.address());
        final Process attacker = new ProcessBuilder("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            "/usr/bin/python3", "-c",
            "import socket,sys\ntry:\n s=socket.socket(socket.AF_UNIX); s.connect('" + socket + "'); print('CONNECTED')\n" +
            "except OSError as e:\n print('REFUSED', e.errno)")
            .redirectErrorStream(true).start();
        final String out = new String(attacker.getInputStream().readAllBytes()).trim();
        assertThat(attacker.waitFor(20, TimeUnit.SECONDS)).isTrue();
        assertThat(out).as("the 0700 directory keeps other users out").startsWith("REFUSED 13"); // EACCES
        assertStillServing();
    }

    @Test
    void shouldKeepALiveServersFilesWhenAnotherProcessSweepsStaleFiles() throws Exception
    {
        final Path dir = verbsConfig().shmDirectory();
        final long before = countFiles(dir);
        // A sweep as another process (another container sharing /dev/shm, where pids mean nothing) does it:
        // it knows none of our contexts, and judges by the locks only.
        final Class<?> files = Class.forName("io.reverb.rdma.provider.shm.ShmFiles");
        final Method sweep = files.getDeclaredMethod("deleteStaleFiles", Path.class, Set.class);
        sweep.setAccessible(true);
        sweep.invoke(null, dir, Set.of());
        assertThat(countFiles(dir)).as("live files kept").isGreaterThanOrEqualTo(before);
        assertStillServing();
    }

    @Test
    void shouldLeaveNoMappingOfClosedConnections() throws Exception
    {
        assumeTrue(Files.isReadable(Path.of("/proc/self/maps")), "needs /proc/self/maps");
        final long baseline = deletedMappings();
        for (int i = 0; i < 100; i++)
        {
            final Connection c = client.connect(listener.address());
            assertServes(c);
            c.close();
        }
        EngineTestSupport.await("closed connections unmapped", () -> deletedMappings() <= baseline);
        assertStillServing();
    }

    private long deletedMappings()
    {
        final String dir = verbsConfig().shmDirectory().toAbsolutePath().toString();
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps")))
        {
            return lines.filter(l -> l.contains(dir) && l.endsWith("(deleted)")).count();
        }
        catch (final IOException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    private static long countFiles(final Path dir) throws IOException
    {
        try (Stream<Path> files = Files.list(dir))
        {
            return files.count();
        }
    }

    private static boolean isRoot()
    {
        try
        {
            return Integer.valueOf(0).equals(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
        }
        catch (final Exception ex)
        {
            return false;
        }
    }
}
