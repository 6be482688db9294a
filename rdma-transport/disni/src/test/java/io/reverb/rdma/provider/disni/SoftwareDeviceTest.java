package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The conformance suite holds a software RDMA device (Soft-RoCE) to what rxe does where rxe departs from the
 * specification: only when every device of the host is one (a {@code parent} netdev and no hardware {@code device}).
 */
class SoftwareDeviceTest
{
    @Test
    void shouldNameTheSoftRoceDeviceWhenItIsTheOnlyKind(@TempDir final Path sysfs) throws IOException
    {
        Files.createDirectories(sysfs.resolve("rxe0"));
        Files.writeString(sysfs.resolve("rxe0/parent"), "eth0\n");

        assertThat(DisniConformanceTest.softwareDevice(sysfs)).isEqualTo("rxe0");
    }

    @Test
    void shouldHoldHardwareToTheSpecification(@TempDir final Path sysfs) throws IOException
    {
        Files.createDirectories(sysfs.resolve("mlx5_0/device"));
        assertThat(DisniConformanceTest.softwareDevice(sysfs)).isNull();

        // a NIC beside an rxe device: the suite cannot tell which one runs it, so the specification applies
        Files.createDirectories(sysfs.resolve("rxe0"));
        Files.writeString(sysfs.resolve("rxe0/parent"), "eth0\n");
        assertThat(DisniConformanceTest.softwareDevice(sysfs)).isNull();
    }

    @Test
    void shouldFindNoneWithoutDevices(@TempDir final Path sysfs)
    {
        assertThat(DisniConformanceTest.softwareDevice(sysfs)).isNull();
        assertThat(DisniConformanceTest.softwareDevice(sysfs.resolve("missing"))).isNull();
    }
}
