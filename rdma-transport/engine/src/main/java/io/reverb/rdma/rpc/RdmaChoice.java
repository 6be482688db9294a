package io.reverb.rdma.rpc;

import java.net.InetAddress;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Whether a {@code reverb://} client can reach a server's rdma address: both sides have the rdma fabric (the server
 * listens on it only when its own is available; the client asks its provider), and the server's address is on a
 * subnet of one of this host's interface addresses (its prefix, as the server's interface has it, must match).
 * Routed RDMA (RoCEv2 across subnets) is possible but not assumed: across subnets the client stays on tcp.
 */
final class RdmaChoice
{
    /** An address of this host with its prefix length. */
    record Local(InetAddress address, int prefix)
    {
    }

    private RdmaChoice()
    {
    }

    /**
     * @param address an address of this host.
     * @return the prefix length of the interface address that holds it, or 0 if none does.
     */
    static int prefixLength(final InetAddress address)
    {
        for (final Local local : locals())
        {
            if (local.address().equals(address))
            {
                return local.prefix();
            }
        }
        return 0;
    }

    /** @return this host's interface addresses that are up, with their prefixes. */
    static List<Local> locals()
    {
        final List<Local> locals = new ArrayList<>();
        try
        {
            for (final NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces()))
            {
                if (!nif.isUp())
                {
                    continue;
                }
                for (final InterfaceAddress a : nif.getInterfaceAddresses())
                {
                    locals.add(new Local(a.getAddress(), a.getNetworkPrefixLength()));
                }
            }
        }
        catch (final SocketException ex)
        {
            return List.of();
        }
        return locals;
    }

    /**
     * @param rdmaCause   why the rdma fabric is unavailable here, or null if it is available.
     * @param server      the server's rdma address.
     * @param serverPrefix its prefix length, as the server's interface has it (0: unknown).
     * @param locals      this host's addresses.
     * @return null if the client can use it, else why not.
     */
    static String problem(final String rdmaCause, final InetAddress server, final int serverPrefix,
        final List<Local> locals)
    {
        if (rdmaCause != null)
        {
            return "rdma is not available on this side: " + rdmaCause;
        }
        if (serverPrefix <= 0)
        {
            return "the server did not say the subnet of its rdma address " + server.getHostAddress();
        }
        for (final Local local : locals)
        {
            if (local.prefix() == serverPrefix && sameSubnet(local.address(), server, serverPrefix))
            {
                return null;
            }
        }
        return "no address of this host is on the subnet of the server's rdma address " + server.getHostAddress() + "/" +
            serverPrefix;
    }

    /** @return true if both addresses are of one family and agree in their first {@code prefix} bits. */
    static boolean sameSubnet(final InetAddress a, final InetAddress b, final int prefix)
    {
        final byte[] x = a.getAddress();
        final byte[] y = b.getAddress();
        if (x.length != y.length || prefix > x.length * 8)
        {
            return false;
        }
        for (int bit = 0; bit < prefix; bit++)
        {
            final int mask = 0x80 >>> (bit & 7);
            if ((x[bit >>> 3] & mask) != (y[bit >>> 3] & mask))
            {
                return false;
            }
        }
        return true;
    }
}
