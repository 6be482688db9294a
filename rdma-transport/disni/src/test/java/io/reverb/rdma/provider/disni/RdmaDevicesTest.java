package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Devices as sysfs lists them (a fake sysfs tree here, laid out as the kernel does): which device an
 * address belongs to on a multi-device host, iWARP detection, and the default address.
 */
class RdmaDevicesTest
{
    @TempDir
    Path sysfs;

    private Map<String, List<InetAddress>> interfaces;

    @BeforeEach
    void setUp() throws IOException
    {
        // A dual-port ConnectX (two devices, one netdev each), and a Soft-iWARP device.
        device("mlx5_0", "1: CA", "Ethernet", "eth0");
        device("mlx5_1", "1: CA", "Ethernet", "eth1");
        final Path siw = device("siw0", "4: RNIC", "Ethernet", null);
        Files.writeString(siw.resolve("parent"), "eth2\n");
        interfaces = Map.of(
            "eth0", List.of(InetAddress.getByName("10.0.0.5")),
            "eth1", List.of(InetAddress.getByName("10.0.1.5")),
            "eth2", List.of(InetAddress.getByName("10.0.2.5")));
    }

    @Test
    void shouldFindTheDeviceOfEachAddressOnAMultiDeviceHost() throws IOException
    {
        final List<RdmaDevices.Device> devices = RdmaDevices.scan(sysfs);

        assertThat(RdmaDevices.deviceOf(devices, InetAddress.getByName("10.0.1.5"), this::lookup).name()).isEqualTo("mlx5_1");
        assertThat(RdmaDevices.deviceOf(devices, InetAddress.getByName("10.0.0.5"), this::lookup).name()).isEqualTo("mlx5_0");
        assertThat(RdmaDevices.deviceOf(devices, InetAddress.getByName("10.9.9.9"), this::lookup)).isNull();
    }

    @Test
    void shouldTellIwarpFromRoceAndInfiniband() throws IOException
    {
        device("mlx4_0", "1: CA", "InfiniBand", "ib0");
        final List<RdmaDevices.Device> devices = RdmaDevices.scan(sysfs);

        assertThat(devices).extracting(RdmaDevices.Device::name).containsExactly("mlx4_0", "mlx5_0", "mlx5_1", "siw0");
        assertThat(devices).extracting(RdmaDevices.Device::transport).containsExactly("InfiniBand", "RoCE", "RoCE", "iWARP");
        assertThat(RdmaDevices.deviceOf(devices, InetAddress.getByName("10.0.2.5"), this::lookup).isIwarp()).isTrue();
    }

    @Test
    void shouldReadPortsLinkLayerAndNonZeroGids() throws IOException
    {
        final RdmaDevices.Device device = RdmaDevices.read(sysfs.resolve("mlx5_0"));

        assertThat(device.ports()).hasSize(1);
        final RdmaDevices.Port port = device.ports().get(0);
        assertThat(port.state()).isEqualTo("4: ACTIVE");
        assertThat(port.linkLayer()).isEqualTo("Ethernet");
        assertThat(port.gids()).containsExactly("0=fe80:0000:0000:0000:0000:0000:0000:0001");
        assertThat(port.netdevs()).containsExactly("eth0");
    }

    @Test
    void shouldDefaultToTheFirstNonIwarpDeviceWithAnAddress() throws IOException
    {
        assertThat(RdmaDevices.defaultAddress(RdmaDevices.scan(sysfs), this::lookup).getHostAddress()).isEqualTo("10.0.0.5");
    }

    @Test
    void shouldRefuseAHostWhoseOnlyDevicesAreIwarp() throws IOException
    {
        final List<RdmaDevices.Device> onlySiw = List.of(RdmaDevices.read(sysfs.resolve("siw0")));

        assertThatThrownBy(() -> RdmaDevices.defaultAddress(onlySiw, this::lookup))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("[siw0] are iWARP")
            .hasMessageContaining("no RDMA_WRITE_WITH_IMM");
    }

    @Test
    void shouldNameThePropertyWhenNoDeviceHasAnAddress()
    {
        assertThatThrownBy(() -> RdmaDevices.defaultAddress(RdmaDevices.scan(sysfs), netdev -> Collections.emptyList()))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("[mlx5_0, mlx5_1, siw0]")
            .hasMessageContaining("-D" + DisniVerbsProvider.LOCAL_ADDRESS_PROP);
    }

    @Test
    void shouldParseNodeTypes()
    {
        assertThat(RdmaDevices.parseNodeType("1: CA")).isEqualTo(RdmaDevices.NODE_TYPE_CA);
        assertThat(RdmaDevices.parseNodeType("4: RNIC")).isEqualTo(RdmaDevices.NODE_TYPE_RNIC);
        assertThat(RdmaDevices.parseNodeType("")).isEqualTo(-1);
    }

    private List<InetAddress> lookup(final String netdev)
    {
        return interfaces.getOrDefault(netdev, Collections.emptyList());
    }

    private Path device(final String name, final String nodeType, final String linkLayer, final String netdev)
        throws IOException
    {
        final Path device = Files.createDirectories(sysfs.resolve(name));
        Files.writeString(device.resolve("node_type"), nodeType + "\n");
        final Path port = Files.createDirectories(device.resolve("ports/1"));
        Files.writeString(port.resolve("state"), "4: ACTIVE\n");
        Files.writeString(port.resolve("link_layer"), linkLayer + "\n");
        final Path gids = Files.createDirectories(port.resolve("gids"));
        Files.writeString(gids.resolve("0"), "fe80:0000:0000:0000:0000:0000:0000:0001\n");
        Files.writeString(gids.resolve("1"), "0000:0000:0000:0000:0000:0000:0000:0000\n");
        if (netdev != null)
        {
            final Path ndevs = Files.createDirectories(port.resolve("gid_attrs/ndevs"));
            Files.writeString(ndevs.resolve("0"), netdev + "\n");
        }
        return device;
    }
}
