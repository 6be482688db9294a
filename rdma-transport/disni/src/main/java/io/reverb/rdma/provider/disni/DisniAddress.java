package io.reverb.rdma.provider.disni;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;

/**
 * The {@code host:port} form of {@code rdma://} addresses.
 *
 * <p>DiSNi 2.1 builds every rdma_cm address as a {@code sockaddr_in} (AF_INET), so only IPv4 hosts
 * can be used; a host name must resolve to an IPv4 address. The port is the port of Reverb's
 * connection handshake (see {@link Handshake}); the rdma_cm port is negotiated through it.
 */
final class DisniAddress
{
    private DisniAddress()
    {
    }

    /**
     * @param address {@code host:port}, port 0..65535 (0 = any, for listening).
     * @return the resolved IPv4 socket address.
     * @throws IllegalArgumentException if malformed, IPv6, or not resolvable to IPv4.
     */
    static InetSocketAddress parse(final String address)
    {
        if (address == null || address.isEmpty())
        {
            throw new IllegalArgumentException("rdma address must be host:port, got an empty address");
        }
        if (address.startsWith("["))
        {
            throw new IllegalArgumentException(
                "rdma address " + address + ": IPv6 is not supported by DiSNi 2.1 (AF_INET only); use an IPv4 address");
        }
        final int colon = address.lastIndexOf(':');
        if (colon <= 0 || colon == address.length() - 1 || address.indexOf(':') != colon)
        {
            throw new IllegalArgumentException("rdma address must be host:port (IPv4), got '" + address + "'");
        }
        final String host = address.substring(0, colon);
        final int port;
        try
        {
            port = Integer.parseInt(address.substring(colon + 1));
        }
        catch (final NumberFormatException ex)
        {
            throw new IllegalArgumentException("rdma address " + address + ": port is not a number", ex);
        }
        if (port < 0 || port > 65535)
        {
            throw new IllegalArgumentException("rdma address " + address + ": port must be in 0..65535");
        }
        return new InetSocketAddress(resolveIpv4(host, address), port);
    }

    /**
     * @param address a socket address.
     * @return {@code ip:port}.
     */
    static String format(final InetSocketAddress address)
    {
        return address.getAddress().getHostAddress() + ':' + address.getPort();
    }

    private static InetAddress resolveIpv4(final String host, final String address)
    {
        try
        {
            for (final InetAddress candidate : InetAddress.getAllByName(host))
            {
                if (candidate instanceof Inet4Address)
                {
                    return candidate;
                }
            }
        }
        catch (final UnknownHostException ex)
        {
            throw new IllegalArgumentException("rdma address " + address + ": unknown host " + host, ex);
        }
        throw new IllegalArgumentException(
            "rdma address " + address + ": " + host + " has no IPv4 address (DiSNi 2.1 supports AF_INET only)");
    }
}
