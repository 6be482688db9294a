package io.reverb.grpc;

import io.grpc.SecurityLevel;

import java.net.SocketAddress;
import java.util.Locale;
import java.util.Objects;

/**
 * A Reverb transport address as a grpc-java {@link SocketAddress}: {@code shm://name}, {@code tcp://host:port},
 * {@code rdma://host:port} or {@code inproc://name}. grpc-java sees it as a direct address (no name resolution).
 */
public final class ReverbAddress extends SocketAddress
{
    private static final long serialVersionUID = 1L;

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
