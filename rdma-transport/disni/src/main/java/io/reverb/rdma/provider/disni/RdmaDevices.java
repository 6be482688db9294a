package io.reverb.rdma.provider.disni;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The RDMA devices the kernel lists in sysfs ({@code /sys/class/infiniband}), read without native code:
 * transport (InfiniBand/RoCE vs iWARP), ports, link layer, GIDs and network interfaces. Used to pick the
 * device of an address, to refuse iWARP, and by {@link RdmaHostCheck}.
 */
final class RdmaDevices
{
    /** sysfs {@code node_type} of InfiniBand and RoCE devices (incl. Soft-RoCE rxe): {@code "1: CA"}. */
    static final int NODE_TYPE_CA = 1;
    /** sysfs {@code node_type} of iWARP devices (incl. Soft-iWARP siw): {@code "4: RNIC"}. */
    static final int NODE_TYPE_RNIC = 4;

    /** Why iWARP cannot carry the engine; one sentence, used in every error about it. */
    static final String IWARP_REASON =
        "iWARP has no RDMA_WRITE_WITH_IMM (the engine's rendezvous completes large messages with it) and no " +
        "RNR retry, so rdma:// does not support it; use an InfiniBand or RoCE device (Soft-RoCE: " +
        "sudo rdma link add rxe0 type rxe netdev <if>) or tcp://";

    /**
     * One port of a device.
     *
     * @param number    port number.
     * @param state     sysfs {@code state}, e.g. {@code "4: ACTIVE"}.
     * @param linkLayer {@code "InfiniBand"} or {@code "Ethernet"}.
     * @param gids      non-zero GIDs as {@code "index=gid"}.
     * @param netdevs   network interfaces of its GIDs.
     * @param physState sysfs {@code phys_state}, e.g. {@code "5: LinkUp"} (carrier).
     * @param rate      sysfs {@code rate}, e.g. {@code "100 Gb/sec (4X EDR)"}.
     * @param gidTable  the non-zero GID entries with their types and network interfaces.
     */
    record Port(int number, String state, String linkLayer, List<String> gids, List<String> netdevs, String physState,
                String rate, List<Gid> gidTable)
    {
        /** @return true if the port state is ACTIVE (4). */
        boolean isActive()
        {
            return state.startsWith("4") || state.toUpperCase(Locale.ROOT).contains("ACTIVE");
        }

        /** @return true if the physical link is up (phys_state 5, LinkUp): the port has carrier. */
        boolean hasCarrier()
        {
            return physState.startsWith("5") || physState.contains("LinkUp");
        }
    }

    /**
     * One entry of a port's GID table.
     *
     * @param index  table index.
     * @param gid    the GID.
     * @param type   sysfs {@code gid_attrs/types/N}: {@code "IB/RoCE v1"} or {@code "RoCE v2"} ("" if unknown).
     * @param netdev sysfs {@code gid_attrs/ndevs/N} ("" on InfiniBand).
     */
    record Gid(int index, String gid, String type, String netdev)
    {
        /** @return the IPv4 address of an IPv4-mapped GID ({@code ::ffff:a.b.c.d}), or null. */
        String ipv4()
        {
            final String hex = gid.replace(":", "");
            if (hex.length() != 32 || !hex.startsWith("00000000000000000000ffff"))
            {
                return null;
            }
            final StringBuilder ip = new StringBuilder();
            for (int i = 24; i < 32; i += 2)
            {
                ip.append(ip.length() == 0 ? "" : ".").append(Integer.parseInt(hex.substring(i, i + 2), 16));
            }
            return ip.toString();
        }
    }

    /** One device. */
    record Device(String name, int nodeType, String nodeTypeText, List<Port> ports, List<String> netdevs)
    {
        /** @return true for iWARP (node type RNIC). */
        boolean isIwarp()
        {
            return nodeType == NODE_TYPE_RNIC;
        }

        /** @return "InfiniBand", "RoCE", "iWARP" or the raw node type. */
        String transport()
        {
            if (isIwarp())
            {
                return "iWARP";
            }
            if (nodeType == NODE_TYPE_CA)
            {
                for (final Port port : ports)
                {
                    if ("Ethernet".equalsIgnoreCase(port.linkLayer()))
                    {
                        return "RoCE";
                    }
                }
                return "InfiniBand";
            }
            return nodeTypeText.isEmpty() ? "unknown" : nodeTypeText;
        }
    }

    /** Looks up the IPv4 addresses of a network interface (injected in tests). */
    @FunctionalInterface
    interface InterfaceAddresses
    {
        /**
         * @param netdev interface name.
         * @return its IPv4 addresses if it is up, else empty.
         */
        List<InetAddress> upIpv4(String netdev);
    }

    /** The JVM's view of this host's interfaces. */
    static final InterfaceAddresses SYSTEM_INTERFACES = RdmaDevices::systemUpIpv4;

    private RdmaDevices()
    {
    }

    /**
     * @param sysfsInfiniband e.g. {@code /sys/class/infiniband}.
     * @return every device listed there, by name; empty if none.
     */
    static List<Device> scan(final Path sysfsInfiniband)
    {
        final List<Device> devices = new ArrayList<>();
        for (final String name : DisniAvailability.listDevices(sysfsInfiniband))
        {
            devices.add(read(sysfsInfiniband.resolve(name)));
        }
        return devices;
    }

    /**
     * @param device {@code /sys/class/infiniband/<dev>}.
     * @return what sysfs says of it.
     */
    static Device read(final Path device)
    {
        final String nodeTypeText = readLine(device.resolve("node_type"));
        final List<Port> ports = new ArrayList<>();
        for (final Path port : list(device.resolve("ports")))
        {
            final int number;
            try
            {
                number = Integer.parseInt(port.getFileName().toString());
            }
            catch (final NumberFormatException ex)
            {
                continue;
            }
            final List<String> gids = new ArrayList<>();
            final List<Gid> table = new ArrayList<>();
            for (final Path gid : list(port.resolve("gids")))
            {
                final String value = readLine(gid);
                // Unused GID table entries read as zeros (or fail to read).
                if (!value.isEmpty() && !value.replace(":", "").chars().allMatch(c -> c == '0'))
                {
                    final String index = gid.getFileName().toString();
                    gids.add(index + "=" + value);
                    try
                    {
                        table.add(new Gid(Integer.parseInt(index), value,
                            readLine(port.resolve("gid_attrs").resolve("types").resolve(index)),
                            readLine(port.resolve("gid_attrs").resolve("ndevs").resolve(index))));
                    }
                    catch (final NumberFormatException ex)
                    {
                        // not a table entry
                    }
                }
            }
            table.sort((a, b) -> Integer.compare(a.index(), b.index()));
            final Set<String> portNetdevs = new LinkedHashSet<>();
            for (final Path ndev : list(port.resolve("gid_attrs").resolve("ndevs")))
            {
                final String value = readLine(ndev);
                if (!value.isEmpty())
                {
                    portNetdevs.add(value);
                }
            }
            ports.add(new Port(number, readLine(port.resolve("state")), readLine(port.resolve("link_layer")),
                gids, new ArrayList<>(portNetdevs), readLine(port.resolve("phys_state")), readLine(port.resolve("rate")),
                table));
        }
        ports.sort((a, b) -> Integer.compare(a.number(), b.number()));
        return new Device(device.getFileName().toString(), parseNodeType(nodeTypeText), nodeTypeText, ports,
            DisniVerbsContext.netdevsOf(device));
    }

    /**
     * @param text sysfs {@code node_type}, e.g. {@code "1: CA"}.
     * @return the number, or -1.
     */
    static int parseNodeType(final String text)
    {
        final int colon = text.indexOf(':');
        try
        {
            return Integer.parseInt((colon < 0 ? text : text.substring(0, colon)).trim());
        }
        catch (final NumberFormatException ex)
        {
            return -1;
        }
    }

    /**
     * @param devices    scanned devices.
     * @param address    an IPv4 address of this host.
     * @param interfaces address lookup.
     * @return the device one of whose network interfaces has {@code address}, or null.
     */
    static Device deviceOf(final List<Device> devices, final InetAddress address, final InterfaceAddresses interfaces)
    {
        for (final Device device : devices)
        {
            for (final String netdev : device.netdevs())
            {
                if (interfaces.upIpv4(netdev).contains(address))
                {
                    return device;
                }
            }
        }
        return null;
    }

    /**
     * The default local address of a context when none is configured: the first IPv4 address of an up network
     * interface of the first device that is not iWARP.
     *
     * @param devices    scanned devices.
     * @param interfaces address lookup.
     * @return the address.
     * @throws IOException naming the devices and the fix if there is none (or only iWARP ones).
     */
    static InetAddress defaultAddress(final List<Device> devices, final InterfaceAddresses interfaces) throws IOException
    {
        final List<String> iwarp = new ArrayList<>();
        for (final Device device : devices)
        {
            if (device.isIwarp())
            {
                iwarp.add(device.name());
                continue;
            }
            for (final String netdev : device.netdevs())
            {
                final List<InetAddress> addresses = interfaces.upIpv4(netdev);
                if (!addresses.isEmpty())
                {
                    return addresses.get(0);
                }
            }
        }
        if (!iwarp.isEmpty() && iwarp.size() == devices.size())
        {
            throw new IOException("RDMA device(s) " + iwarp + " are iWARP: " + IWARP_REASON);
        }
        final List<String> names = new ArrayList<>();
        for (final Device device : devices)
        {
            names.add(device.name());
        }
        throw new IOException("no IPv4 address found on an up network interface of RDMA device(s) " + names +
            "; configure one (IPoIB or RoCE netdev) or set -D" + DisniVerbsProvider.LOCAL_ADDRESS_PROP + "=<ipv4>");
    }

    private static List<InetAddress> systemUpIpv4(final String netdev)
    {
        try
        {
            final NetworkInterface ni = NetworkInterface.getByName(netdev);
            if (ni == null || !ni.isUp())
            {
                return Collections.emptyList();
            }
            final List<InetAddress> result = new ArrayList<>();
            final Enumeration<InetAddress> addresses = ni.getInetAddresses();
            while (addresses.hasMoreElements())
            {
                final InetAddress address = addresses.nextElement();
                if (address instanceof Inet4Address)
                {
                    result.add(address);
                }
            }
            return result;
        }
        catch (final SocketException ex)
        {
            return Collections.emptyList();
        }
    }

    private static List<Path> list(final Path dir)
    {
        final List<Path> entries = new ArrayList<>();
        if (!Files.isDirectory(dir))
        {
            return entries;
        }
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir))
        {
            for (final Path entry : stream)
            {
                entries.add(entry);
            }
        }
        catch (final IOException | SecurityException ex)
        {
            // unreadable: reported as empty
        }
        entries.sort(null);
        return entries;
    }

    private static String readLine(final Path file)
    {
        try
        {
            return new String(Files.readAllBytes(file)).trim();
        }
        catch (final IOException | RuntimeException ex)
        {
            return "";
        }
    }
}
