package io.reverb.grpc;

import io.grpc.SecurityLevel;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Reverb transport address as a grpc-java {@link SocketAddress}: {@code shm://name}, {@code tcp://host:port},
 * {@code rdma://host:port} or {@code inproc://name}. grpc-java sees it as a direct address (no name resolution).
 */
public final class ReverbAddress extends SocketAddress
{
    private static final long serialVersionUID = 1L;
    private static final Pattern IPV4 = Pattern.compile("(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})");
    private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(%[A-Za-z0-9_.-]+)?");

    private final String uri;

    /**
     * @param uri a Reverb address.
     */
    public ReverbAddress(final String uri)
    {
        this.uri = Objects.requireNonNull(uri, "uri");
    }

    /**
     * @return the Reverb address.
     */
    public String uri()
    {
        return uri;
    }

    /**
     * The address grpc-java code gets for a peer, as over Netty: an {@link InetSocketAddress} for a peer of an IP
     * transport (tcp, rdma) described by an IP literal and a port, so that code that casts
     * {@code Grpc.TRANSPORT_ATTR_REMOTE_ADDR} to log or check the client's IP works as it does over Netty; a
     * ReverbAddress for anything else (shm, inproc, a host name). Never a name lookup.
     *
     * @param described the peer as its transport describes it: {@code tcp://10.0.0.7:52100}, {@code 10.0.0.7:52100},
     *                  {@code [::1]:52100}, {@code shm://pid:42}.
     * @return the address.
     */
    static SocketAddress ofPeer(final String described)
    {
        String hostPort = described;
        final int scheme = described.indexOf("://");
        if (scheme >= 0)
        {
            final String s = described.substring(0, scheme).toLowerCase(Locale.ROOT);
            if (!s.equals("tcp") && !s.equals("rdma"))
            {
                return new ReverbAddress(described);
            }
            hostPort = described.substring(scheme + 3);
        }
        final InetSocketAddress inet = ipLiteralAndPort(hostPort);
        return inet != null ? inet : new ReverbAddress(described);
    }

    /** @return the IP literal and port of {@code host:port} or {@code [v6]:port}, or null if it is not that. */
    private static InetSocketAddress ipLiteralAndPort(final String hostPort)
    {
        final int colon = hostPort.lastIndexOf(':');
        if (colon <= 0 || colon == hostPort.length() - 1 || hostPort.length() - colon - 1 > 5)
        {
            return null;
        }
        for (int i = colon + 1; i < hostPort.length(); i++)
        {
            if (hostPort.charAt(i) < '0' || hostPort.charAt(i) > '9')
            {
                return null;
            }
        }
        final int port = Integer.parseInt(hostPort.substring(colon + 1));
        String host = hostPort.substring(0, colon);
        if (port > 65_535)
        {
            return null;
        }
        if (host.length() > 2 && host.charAt(0) == '[' && host.charAt(host.length() - 1) == ']')
        {
            host = host.substring(1, host.length() - 1);
            if (!IPV6.matcher(host).matches())
            {
                return null;
            }
        }
        else
        {
            final Matcher v4 = IPV4.matcher(host);
            if (!v4.matches())
            {
                return null;
            }
            for (int g = 1; g <= 4; g++)
            {
                if (Integer.parseInt(v4.group(g)) > 255)
                {
                    return null; // not a literal: InetAddress would look it up as a name
                }
            }
        }
        try
        {
            return new InetSocketAddress(InetAddress.getByName(host), port); // a literal: parsed, not looked up
        }
        catch (final UnknownHostException notALiteral)
        {
            return null;
        }
    }

    /**
     * @return what grpc-java's call credentials may rely on before a connection says more: same-host transports
     * (shm, inproc) never leave the machine's memory and are treated as private, as grpc-java treats its in-process
     * transport; tcp and rdma are NONE, unless a tcp connection runs inside TLS (the transports then report
     * PRIVACY_AND_INTEGRITY and the session).
     */
    SecurityLevel securityLevel()
    {
        final int colon = uri.indexOf(':');
        final String s = colon < 0 ? "" : uri.substring(0, colon).toLowerCase(Locale.ROOT);
        return s.equals("shm") || s.equals("inproc") ? SecurityLevel.PRIVACY_AND_INTEGRITY : SecurityLevel.NONE;
    }

    @Override
    public boolean equals(final Object o)
    {
        return o instanceof ReverbAddress && ((ReverbAddress)o).uri.equals(uri);
    }

    @Override
    public int hashCode()
    {
        return uri.hashCode();
    }

    @Override
    public String toString()
    {
        return uri;
    }
}
