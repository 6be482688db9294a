package io.reverb.rdma.provider.tcp;

import java.net.InetSocketAddress;

/**
 * Parses {@code host:port} (IPv6 literals in brackets: {@code [::1]:port}).
 */
final class TcpAddress
{
    private TcpAddress()
    {
    }

    /**
     * @param address {@code host:port}.
     * @return the resolved socket address.
     * @throws IllegalArgumentException if malformed.
     */
    static InetSocketAddress parse(final String address)
    {
        final int colon = address == null ? -1 : address.lastIndexOf(':');
        if (colon <= 0 || colon == address.length() - 1)
        {
            throw new IllegalArgumentException("tcp address must be host:port, got '" + address + "'");
        }
        String host = address.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]"))
        {
            host = host.substring(1, host.length() - 1);
        }
        final int port;
        try
        {
            port = Integer.parseInt(address.substring(colon + 1));
        }
        catch (final NumberFormatException ex)
        {
            throw new IllegalArgumentException("tcp address has a bad port: '" + address + "'", ex);
        }
        if (port < 0 || port > 65535)
        {
            throw new IllegalArgumentException("tcp port out of range: '" + address + "'");
        }
        return new InetSocketAddress(host, port);
    }

    /**
     * @param host the host as the user wrote it.
     * @param port the bound port.
     * @return {@code host:port}, bracketing IPv6 literals.
     */
    static String format(final String host, final int port)
    {
        return (host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + port;
    }
}
