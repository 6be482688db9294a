package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 38, item 10: who owns the shm directory is decided by uid, as ShmFiles decides it. A process whose uid has no
 * passwd entry (containers: {@code user.name} is then {@code ?}) still recognises its own directory and moves to shm.
 */
class HostIdentityUidTest
{
    @TempDir
    Path dir;

    @Test
    void shouldRecogniseItsOwnDirectoryWhenTheUserNameIsNoPasswdEntry() throws IOException
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"),
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        final String name = System.getProperty("user.name");
        System.setProperty("user.name", "?"); // what the JVM reports for a uid without a passwd entry
        try
        {
            assertThat(HostIdentity.privateDirectoryProblem(shm)).isNull();
        }
        finally
        {
            System.setProperty("user.name", name);
        }
        Files.setPosixFilePermissions(shm, PosixFilePermissions.fromString("rwx--x--x"));
        assertThat(HostIdentity.privateDirectoryProblem(shm)).contains("has mode rwx--x--x");
    }

    @Test
    void shouldRefuseADirectoryOfAnotherUidNamingIt() throws IOException
    {
        assumeThat(Files.getAttribute(Path.of("/proc/self"), "unix:uid")).as("needs root to give a directory away")
            .isEqualTo(0);
        final Path shm = Files.createDirectory(dir.resolve("shm"),
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Files.setAttribute(shm, "unix:uid", 65534);
        assertThat(HostIdentity.privateDirectoryProblem(shm)).contains("(uid 65534), not by this user (uid 0)");
    }
}
