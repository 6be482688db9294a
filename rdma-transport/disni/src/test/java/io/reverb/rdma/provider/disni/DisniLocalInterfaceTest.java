package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How a context finds the network interface of an RDMA device in sysfs (a fake sysfs here). */
class DisniLocalInterfaceTest
{
    @TempDir
    Path sysfs;

    @Test
    void shouldReadRoceNetdevsFromTheGidTable() throws IOException
    {
        final Path device = sysfs.resolve("mlx5_0");
        final Path ndevs = Files.createDirectories(device.resolve("ports/1/gid_attrs/ndevs"));
        Files.writeString(ndevs.resolve("0"), "enp1s0f0\n");
        Files.writeString(ndevs.resolve("1"), "enp1s0f0\n");
        Files.createDirectories(device.resolve("device/net/enp1s0f0"));

        assertThat(DisniVerbsContext.netdevsOf(device)).containsExactly("enp1s0f0");
    }

    @Test
    void shouldReadTheParentOfSoftRoceAndSoftIwarpDevices() throws IOException
    {
        final Path device = Files.createDirectories(sysfs.resolve("rxe0"));
        Files.createDirectories(device.resolve("ports/1/gid_attrs/ndevs"));
        Files.writeString(device.resolve("parent"), "eth0\n");

        assertThat(DisniVerbsContext.netdevsOf(device)).containsExactly("eth0");
    }

    @Test
    void shouldFindIpoibInterfacesOfInfinibandDevices() throws IOException
    {
        final Path device = sysfs.resolve("mlx4_0");
        Files.createDirectories(device.resolve("device/net/ib0"));
        Files.createDirectories(device.resolve("device/net/ib1"));

        assertThat(DisniVerbsContext.netdevsOf(device)).containsExactlyInAnyOrder("ib0", "ib1");
    }

    @Test
    void shouldFindNothingForAnEmptyDevice() throws IOException
    {
        assertThat(DisniVerbsContext.netdevsOf(Files.createDirectories(sysfs.resolve("x")))).isEmpty();
    }
}
