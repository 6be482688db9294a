package io.reverb.rdma.provider.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The shm trust boundary (issue 13, items 6 to 8): the directory must be this user's with mode 0700, peers
 * must be this user (SO_PEERCRED), file names cannot collide and liveness is an advisory lock (not a pid),
 * and closed connections leave no mapping behind.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmTrustTest
{
    private final Path directory = ShmTestDirectories.newDirectory("trust");

    @AfterEach
    void cleanUp() throws IOException
    {
        ShmTestDirectories.delete(directory);
    }

    @Test
    void shouldUseAPerUserDirectoryByDefault()
    {
        assertThat(VerbsConfig.SHM_DIR_DEFAULT).startsWith("/dev/shm/reverb-");
        assertThat(VerbsConfig.SHM_DIR_DEFAULT.substring("/dev/shm/reverb-".length())).isNotEmpty().doesNotContain("/");
    }

    @Test
    void shouldRefuseADirectoryOthersCanWrite() throws Exception
    {
        Files.setPosixFilePermissions(directory, PosixFilePermissions.fromString("rwxrwxrwx"));
        assertThatThrownBy(() -> new ShmVerbsProvider().open(VerbsConfig.defaults().withShmDirectory(directory)))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("has mode rwxrwxrwx")
            .hasMessageContaining("0700");
        Files.setPosixFilePermissions(directory, PosixFilePermissions.fromString("rwxr-x---"));
        assertThatThrownBy(() -> ShmFiles.ensureDirectory(directory)).hasMessageContaining("rwxr-x---");
    }

    @Test
    void shouldRefuseASymbolicLinkAsDirectory() throws Exception
    {
        final Path link = directory.resolveSibling(directory.getFileName() + "-link");
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, directory);
        try
        {
            assertThatThrownBy(() -> ShmFiles.ensureDirectory(link)).hasMessageContaining("symbolic link");
        }
        finally
        {
            Files.deleteIfExists(link);
        }
    }

    @Test
    void shouldRefuseADirectoryOwnedByAnotherUser() throws Exception
    {
        assumeTrue(isRoot(), "changing a directory's owner needs root; this JVM runs as " + System.getProperty("user.name"));
        final UserPrincipal nobody = FileSystems.getDefault().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
        Files.setOwner(directory, nobody);
        assertThatThrownBy(() -> ShmFiles.ensureDirectory(directory))
            .hasMessageContaining("is owned by 'nobody'")
            .hasMessageContaining(VerbsConfig.SHM_DIR_PROP);
    }

    @Test
    void shouldRefuseAPeerProcessOfAnotherUser() throws Exception
    {
        assumeTrue(isRoot() && Files.isExecutable(Path.of("/usr/bin/setpriv")) && Files.isExecutable(Path.of("/usr/bin/python3")),
            "needs root, setpriv and python3 to run a peer process as user nobody");
        // A socket outside the 0700 directory (which nobody could not even reach): the credential check itself.
        final Path open = Files.createTempDirectory(Path.of("/tmp"), "rvb-peer");
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxrwxrwx"));
        final Path socket = open.resolve("s.sock");
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX))
        {
            server.bind(UnixDomainSocketAddress.of(socket));
            Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rwxrwxrwx"));
            final Process peer = new ProcessBuilder("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                "/usr/bin/python3", "-c",
                "import socket,time; s=socket.socket(socket.AF_UNIX); s.connect('" + socket + "'); time.sleep(5)")
                .redirectErrorStream(true).start();
            try (SocketChannel accepted = server.accept())
            {
                final UserPrincipal self = ShmFiles.ensureDirectory(directory);
                assertThatThrownBy(() -> ShmPeers.checkSameUser(accepted, self))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("runs as user 'nobody'")
                    .hasMessageContaining("one user only");
            }
            finally
            {
                peer.destroyForcibly().waitFor();
            }
        }
        finally
        {
            Files.deleteIfExists(socket);
            Files.deleteIfExists(open);
        }
    }

    @Test
    void shouldAcceptAPeerOfTheSameUser() throws Exception
    {
        final UserPrincipal self = ShmFiles.ensureDirectory(directory);
        final Path socket = directory.resolve("same.sock");
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX))
        {
            server.bind(UnixDomainSocketAddress.of(socket));
            try (SocketChannel client = SocketChannel.open(UnixDomainSocketAddress.of(socket));
                SocketChannel accepted = server.accept())
            {
                ShmPeers.checkSameUser(accepted, self);
                ShmPeers.checkSameUser(client, self);
            }
        }
    }

    @Test
    void shouldNameFilesWithRandomPrefixesAndHoldALockWhileOpen() throws Exception
    {
        final VerbsConfig config = VerbsConfig.defaults().withShmDirectory(directory);
        try (ShmVerbsContext a = (ShmVerbsContext)new ShmVerbsProvider().open(config);
            ShmVerbsContext b = (ShmVerbsContext)new ShmVerbsProvider().open(config))
        {
            assertThat(a.prefix()).matches("r[0-9a-f]{16}").isNotEqualTo(b.prefix());
            final Path lock = directory.resolve(a.prefix() + ShmFiles.LOCK_SUFFIX);
            assertThat(lock).exists();
            a.allocPd().allocate(64, Access.LOCAL_WRITE);
            // A sweep that does not know `a` is of this JVM finds its lock held (here: by this process) and keeps it.
            ShmFiles.deleteStaleFiles(directory, Set.of());
            assertThat(lock).exists();
            try (Stream<Path> files = Files.list(directory))
            {
                assertThat(files.filter(f -> f.getFileName().toString().startsWith(a.prefix() + "-mr"))).hasSize(1);
            }
        }
        try (Stream<Path> files = Files.list(directory))
        {
            assertThat(files).as("closed contexts leave nothing").isEmpty();
        }
    }

    @Test
    void shouldDeleteTheFilesOfAContextWhoseLockNobodyHolds() throws Exception
    {
        final Path lock = directory.resolve("rfedcba9876543210" + ShmFiles.LOCK_SUFFIX);
        final Path region = directory.resolve("rfedcba9876543210-mr3");
        Files.write(region, new byte[64]);
        try (FileChannel channel = FileChannel.open(lock, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE))
        {
            // Opened, never locked: like the lock file of a process the kernel has since reaped.
        }
        assertThat(ShmFiles.deleteStaleFiles(directory, Set.of())).isEqualTo(2);
        assertThat(region).doesNotExist();
        assertThat(lock).doesNotExist();
    }

    @Test
    void shouldUnmapEveryFileOfClosedConnections() throws Exception
    {
        assumeTrue(Files.isReadable(Path.of("/proc/self/maps")), "needs /proc/self/maps to count mappings");
        final VerbsConfig config = VerbsConfig.defaults().withShmDirectory(directory);
        try (VerbsContext server = new ShmVerbsProvider().open(config);
            VerbsContext client = new ShmVerbsProvider().open(config);
            ConnectionListener listener = server.listen("unmap", 8))
        {
            for (int i = 0; i < 20; i++)
            {
                final QueuePair[] pair = connect(server, client, listener);
                assertThat(mappingsOf(directory)).isGreaterThan(0);
                for (final QueuePair qp : pair)
                {
                    final QueuePairAttributes attributes = attributesOf(qp);
                    qp.close();
                    attributes.sendCq().close();
                    region.get(qp).close();
                    attributes.pd().close();
                }
            }
            assertThat(mappingsOf(directory)).as("mappings of closed connections").isZero();
        }
    }

    private final Map<QueuePair, QueuePairAttributes> attributes = new HashMap<>();
    private final Map<QueuePair, MemoryRegion> region = new HashMap<>();

    private QueuePairAttributes attributesOf(final QueuePair qp)
    {
        return attributes.remove(qp);
    }

    private QueuePair[] connect(final VerbsContext server, final VerbsContext client, final ConnectionListener listener)
        throws Exception
    {
        final CompletableFuture<QueuePair> accepted = CompletableFuture.supplyAsync(() ->
        {
            try
            {
                final ConnectionRequest request = listener.accept(TimeUnit.SECONDS.toNanos(20));
                return open(server, (attributes) -> request.accept(attributes, null));
            }
            catch (final Exception ex)
            {
                throw new IllegalStateException(ex);
            }
        });
        final QueuePair qp = open(client, (attributes) -> client.connect("unmap", attributes, null));
        return new QueuePair[] {accepted.get(20, TimeUnit.SECONDS), qp};
    }

    private interface Opener
    {
        QueuePair open(QueuePairAttributes attributes) throws IOException;
    }

    private QueuePair open(final VerbsContext context, final Opener opener) throws IOException
    {
        final CompletionQueue cq = context.createCq(64, null);
        final var pd = context.allocPd();
        final MemoryRegion mr = pd.allocate(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        final QueuePairAttributes a = new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq).maxSendWr(16).maxRecvWr(16);
        final QueuePair qp = opener.open(a);
        synchronized (this)
        {
            attributes.put(qp, a);
            region.put(qp, mr);
        }
        return qp;
    }

    private static long mappingsOf(final Path dir) throws IOException
    {
        final String prefix = dir.toAbsolutePath().toString() + "/r";
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps")))
        {
            return lines.filter(line -> line.contains(prefix)).count();
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
