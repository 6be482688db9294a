package io.reverb.rdma.provider.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.MappedByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shm provider's files on a tmpfs another user has filled (SECURITY.md: another local user can fill /dev/shm):
 * creating one fails with an {@link IOException} and leaves nothing, instead of mapping a sparse file whose first
 * touched page raises SIGBUS (an {@code InternalError} wherever a copy into it runs, in this process or the peer's).
 * Needs root to mount a small tmpfs; skipped with the cause otherwise.
 */
class ShmFullFileSystemTest
{
    @TempDir
    Path tmp;
    private Path mount;
    private boolean mounted;

    @BeforeEach
    void mountSmallTmpfs() throws Exception
    {
        // uid 0 by number: in a container root's user.name may be "?"
        assumeTrue(Integer.valueOf(0).equals(Files.getAttribute(Path.of("/proc/self"), "unix:uid")),
            "skipped: needs root (uid 0) to mount a small tmpfs; run the build as root, or see FullShmAttack in " +
            "bin/attack-suite for the same case end to end");
        mount = Files.createDirectory(tmp.resolve("shm"));
        final Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs",
            mount.toString()).inheritIO().start();
        assumeTrue(p.waitFor() == 0, "mount -t tmpfs failed (no CAP_SYS_ADMIN here?)");
        mounted = true;
    }

    @AfterEach
    void unmount() throws Exception
    {
        if (mounted)
        {
            new ProcessBuilder("umount", "-l", mount.toString()).inheritIO().start().waitFor();
        }
    }

    @Test
    void shouldRefuseAFileTheFileSystemCannotHold() throws Exception
    {
        final Path file = mount.resolve("mr0");
        assertThatThrownBy(() -> ShmFiles.createAndMap(file, 4L * 1024 * 1024)).isInstanceOf(IOException.class)
            .hasMessageContaining("No space left");
        assertThat(Files.exists(file)).as("nothing left behind").isFalse();
    }

    @Test
    void shouldRefuseAFileOnceAnotherUserFilledTheFileSystem() throws Exception
    {
        final MappedByteBuffer fits = ShmFiles.createAndMap(mount.resolve("ring0"), 64 * 1024);
        fits.putLong(64 * 1024 - 8, 7L); // its pages are there: no SIGBUS
        try (OutputStream out = Files.newOutputStream(mount.resolve("filler")))
        {
            final byte[] chunk = new byte[16 * 1024];
            while (true)
            {
                out.write(chunk);
            }
        }
        catch (final IOException full)
        {
            assertThat(full.getMessage()).contains("No space left");
        }
        fits.putLong(0, 1L); // written before the file system filled: still usable
        assertThatThrownBy(() -> ShmFiles.createAndMap(mount.resolve("mr1"), 64 * 1024)).isInstanceOf(IOException.class);
    }
}
