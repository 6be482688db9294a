package io.reverb.rdma.provider.disni;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.RdmaEngine;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What {@link RdmaHostCheck} requires of a host beyond DiSNi's own availability, read from sysfs and
 * {@code /proc} only (both injectable, so a test runs it over a fake tree): an ACTIVE port with carrier on a
 * device that is not iWARP, and a locked-memory limit large enough for the engine's registrations. Also which
 * GID rdma_cm will use for an address and a RoCE port's active MTU.
 */
final class RdmaHostReadiness
{
    /** Soft memlock limit that means "unlimited". */
    static final long UNLIMITED = Long.MAX_VALUE;
    /** Soft memlock limit that could not be read. */
    static final long UNKNOWN = -1;

    /**
     * Bytes RoCE headers take from a netdev MTU, as the kernel's {@code iboe_get_mtu}: GRH 40, UDP 8, BTH 12,
     * XRC 4, AtomicETH 28, ICRC 4.
     */
    static final int ROCE_HEADER_BYTES = 96;

    /** The rdma_cm GID type preferred on RoCE (the kernel's CMA_PREFERRED_ROCE_GID_TYPE), unless configfs says else. */
    static final String PREFERRED_ROCE_GID_TYPE = "RoCE v2";

    /**
     * Bytes of one send work request the estimate assumes: mlx5 builds a send WQE of 64-byte basic blocks (control,
     * remote address and two data segments, or inline data) and sizes the queue for its largest; four blocks.
     */
    static final int SEND_WQE_BYTES = 256;
    /** Bytes of one receive work request (two 16-byte scatter entries, rounded up as mlx5's receive queue stride). */
    static final int RECV_WQE_BYTES = 64;
    /** Bytes of one completion queue entry (mlx5's CQE; rxe's is smaller). */
    static final int CQE_BYTES = 64;
    /** The page size the kernel pins queue buffers in. */
    static final int PAGE_BYTES = 4096;
    /** Connections of the engine the check sizes the limit for (the ping-pong and bench runs use one or two). */
    static final int CONNECTIONS = 2;

    /**
     * What one engine pins, part by part: the estimate the memlock check compares the limit with.
     *
     * @param eagerBytes       send ring, receive slots and control slots of every connection
     * @param ringBytes        the QP's send and receive queues and the two CQs of every connection (the kernel pins
     *                         the buffers libibverbs' provider allocates for them; each rounded to pages)
     * @param sendPoolBytes    every connection's rendezvous send pool at its cap (large messages fill it)
     * @param receiveBudget    the engine-wide rendezvous receive budget (at its default for this JVM's heap)
     * @param connections      the connections counted
     */
    record MemlockEstimate(long eagerBytes, long ringBytes, long sendPoolBytes, long receiveBudget, int connections)
    {
        /** @return the bytes the limit must allow. */
        long total()
        {
            return eagerBytes + ringBytes + sendPoolBytes + receiveBudget;
        }

        /** @return the parts, for the report and the NOT READY line. */
        String parts()
        {
            return connections + " connections' eager buffers " + mib(eagerBytes) + " + QP/CQ rings " + mib(ringBytes) +
                " + rendezvous send pools " + mib(sendPoolBytes) + " + rendezvous receive budget " + mib(receiveBudget);
        }
    }

    private RdmaHostReadiness()
    {
    }

    /**
     * @param config      a concluded engine configuration.
     * @param connections how many connections the engine holds.
     * @return what that engine pins at most: {@link RdmaEngine}'s queue sizes (send queue: peer receive slots + 4,
     *         receive queue: receive slots, CQs: slots + 8), with the peer configured alike.
     */
    static MemlockEstimate memlockEstimate(final EngineConfig config, final int connections)
    {
        final int slots = config.receiveSlots();
        final long rings = pages(pow2(slots + 4) * SEND_WQE_BYTES) + pages(pow2(slots) * RECV_WQE_BYTES) +
            2 * pages(pow2(slots + 8 + 1) * CQE_BYTES) + PAGE_BYTES; // + the QP's doorbell record page
        return new MemlockEstimate(connections * config.eagerRegisteredBytesPerConnection(), connections * rings,
            connections * config.rendezvousPoolBytes(), config.rendezvousMemoryBytes(), connections);
    }

    /** @return the estimate for an engine with default settings and {@value #CONNECTIONS} connections. */
    static MemlockEstimate defaultMemlockEstimate()
    {
        return memlockEstimate(new EngineConfig().conclude(), CONNECTIONS);
    }

    /** @return bytes of locked memory the check requires ({@link #defaultMemlockEstimate()}'s total). */
    static long requiredMemlockBytes()
    {
        return defaultMemlockEstimate().total();
    }

    private static long pow2(final int n)
    {
        return n <= 1 ? 1 : Long.highestOneBit(n - 1) << 1;
    }

    private static long pages(final long bytes)
    {
        return (bytes + PAGE_BYTES - 1) / PAGE_BYTES * PAGE_BYTES;
    }

    /**
     * @param procLimits {@code /proc/self/limits}.
     * @return the soft "Max locked memory" limit in bytes, {@link #UNLIMITED}, or {@link #UNKNOWN}.
     */
    static long memlockSoftBytes(final Path procLimits)
    {
        try
        {
            for (final String line : Files.readAllLines(procLimits, StandardCharsets.US_ASCII))
            {
                if (line.startsWith("Max locked memory"))
                {
                    final String soft = line.substring("Max locked memory".length()).trim().split("\\s+")[0];
                    return "unlimited".equals(soft) ? UNLIMITED : Long.parseLong(soft);
                }
            }
            return UNKNOWN;
        }
        catch (final IOException | RuntimeException ex)
        {
            return UNKNOWN;
        }
    }

    /**
     * @param procLimits {@code /proc/self/limits}.
     * @return why the memlock limit is too small for the engine (one line), or null if it is large enough.
     */
    static String memlockProblem(final Path procLimits)
    {
        final long soft = memlockSoftBytes(procLimits);
        final MemlockEstimate estimate = defaultMemlockEstimate();
        final long required = estimate.total();
        if (soft == UNKNOWN)
        {
            return "the locked-memory limit (ulimit -l) could not be read from " + procLimits +
                "; rdma:// registers (pins) at least " + mib(required) + " per engine";
        }
        if (soft < required)
        {
            return "the locked-memory limit (ulimit -l) is " + mib(soft) + ", but one engine registers (pins) up to " +
                mib(required) + " (" + estimate.parts() + "); raise it (ulimit -l unlimited, " +
                "or memlock in /etc/security/limits.conf, or LimitMEMLOCK= for a systemd service; see RDMA-HARDWARE.md)";
        }
        return null;
    }

    /**
     * @param devices scanned devices.
     * @return why no port can carry rdma:// (one line naming every port's state), or null if one can: ACTIVE, with
     *         carrier, on a device that is not iWARP.
     */
    static String portProblem(final List<RdmaDevices.Device> devices)
    {
        final List<String> seen = new ArrayList<>();
        for (final RdmaDevices.Device device : devices)
        {
            for (final RdmaDevices.Port port : device.ports())
            {
                if (!device.isIwarp() && port.isActive() && port.hasCarrier())
                {
                    return null;
                }
                seen.add(device.name() + " port " + port.number() + ": " + (device.isIwarp() ? "iWARP, " : "") +
                    "state " + orUnknown(port.state()) + ", phys_state " + orUnknown(port.physState()));
            }
        }
        if (seen.isEmpty())
        {
            return "no RDMA port found in sysfs";
        }
        return "no ACTIVE RDMA port with carrier (" + String.join("; ", seen) + "): connect the cable or bring the link " +
            "up (ip link set <netdev> up; on InfiniBand a subnet manager must run, e.g. opensm)";
    }

    /**
     * The GID rdma_cm uses for {@code ipv4} on a port: on RoCE the entry mapping that address, of type RoCE v2 when
     * there is one (rdma_cm's default type), else of any type; on InfiniBand the port GID, index 0.
     *
     * @param port a port.
     * @param ipv4 the local address, dotted, or null.
     * @return the entry, or null if none matches.
     */
    static RdmaDevices.Gid chosenGid(final RdmaDevices.Port port, final String ipv4)
    {
        if (!"Ethernet".equalsIgnoreCase(port.linkLayer()))
        {
            for (final RdmaDevices.Gid gid : port.gidTable())
            {
                if (gid.index() == 0)
                {
                    return gid;
                }
            }
            return null;
        }
        RdmaDevices.Gid any = null;
        for (final RdmaDevices.Gid gid : port.gidTable())
        {
            if (ipv4 != null && ipv4.equals(gid.ipv4()))
            {
                if (PREFERRED_ROCE_GID_TYPE.equalsIgnoreCase(gid.type()))
                {
                    return gid;
                }
                if (any == null)
                {
                    any = gid;
                }
            }
        }
        return any;
    }

    /**
     * @param port     a port.
     * @param sysfsNet {@code /sys/class/net}.
     * @return its active MTU: on RoCE derived from its network interface's MTU as the kernel does; on InfiniBand
     *         sysfs does not have it.
     */
    static String activeMtu(final RdmaDevices.Port port, final Path sysfsNet)
    {
        if (!"Ethernet".equalsIgnoreCase(port.linkLayer()))
        {
            return "not in sysfs on InfiniBand (ibv_devinfo shows active_mtu)";
        }
        for (final String netdev : port.netdevs())
        {
            try
            {
                final int mtu = Integer.parseInt(Files.readString(sysfsNet.resolve(netdev).resolve("mtu")).trim());
                return roceMtu(mtu) + " (" + netdev + " MTU " + mtu + ")";
            }
            catch (final IOException | RuntimeException ex)
            {
                // next netdev
            }
        }
        return "unknown (no readable MTU of " + port.netdevs() + ")";
    }

    /**
     * @param netdevMtu the Ethernet MTU.
     * @return the RoCE path MTU it allows (256..4096), or 0 if too small for any.
     */
    static int roceMtu(final int netdevMtu)
    {
        final int room = netdevMtu - ROCE_HEADER_BYTES;
        for (int mtu = 4096; mtu >= 256; mtu >>= 1)
        {
            if (room >= mtu)
            {
                return mtu;
            }
        }
        return 0;
    }

    static String mib(final long bytes)
    {
        return bytes == UNLIMITED ? "unlimited" : String.format(Locale.ROOT, "%.1f MiB", bytes / (double)(1 << 20));
    }

    private static String orUnknown(final String value)
    {
        return value == null || value.isEmpty() ? "?" : value;
    }
}
