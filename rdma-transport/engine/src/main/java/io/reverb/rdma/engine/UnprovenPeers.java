package io.reverb.rdma.engine;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

/**
 * Accepted connections that still have to prove the engine's token, counted per peer host
 * ({@link EngineConfig#maxUnprovenPerPeer(int)}): until its proof or its handshake deadline such a connection holds
 * one of the engine's {@link EngineConfig#maxConnections(int)} slots, so a peer without the token that opens them
 * faster than they expire could otherwise hold every slot. A host is an IPv4 address, an IPv6 /64 (one subscriber's
 * prefix: its addresses are the attacker's to choose), or one shm process. Thread-safe.
 */
final class UnprovenPeers
{
    private final int maxPerPeer;
    private final Map<String, Integer> unproven = new HashMap<>();

    /**
     * @param maxPerPeer connections of one host that may be unproven at once.
     */
    UnprovenPeers(final int maxPerPeer)
    {
        this.maxPerPeer = maxPerPeer;
    }

    /**
     * @param host {@link #hostOf} the connection's peer.
     * @return true if the connection is counted (release it once when it is proven, refused or gone), false if its
     *     host has {@code maxPerPeer} unproven connections already.
     */
    synchronized boolean reserve(final String host)
    {
        final int held = unproven.getOrDefault(host, 0);
        if (held >= maxPerPeer)
        {
            return false;
        }
        unproven.put(host, held + 1);
        return true;
    }

    /**
     * @param host a host one connection of which was {@link #reserve reserved}.
     */
    synchronized void release(final String host)
    {
        final Integer held = unproven.get(host);
        if (held == null)
        {
            return;
        }
        if (held <= 1)
        {
            unproven.remove(host);
        }
        else
        {
            unproven.put(host, held - 1);
        }
    }

    /** @return unproven connections now, all hosts together (tests). */
    synchronized int size()
    {
        return unproven.values().stream().mapToInt(Integer::intValue).sum();
    }

    /**
     * @param remote a connection request's remote address: {@code host:port}, {@code [v6]:port}, or an shm peer.
     * @return the host it counts under.
     */
    static String hostOf(final String remote)
    {
        if (remote.startsWith("shm://"))
        {
            return remote; // one process
        }
        String host = remote;
        final int colon = remote.lastIndexOf(':');
        if (colon > 0 && colon < remote.length() - 1 && remote.substring(colon + 1).chars().allMatch(Character::isDigit))
        {
            host = remote.substring(0, colon);
        }
        if (host.startsWith("[") && host.endsWith("]"))
        {
            host = host.substring(1, host.length() - 1);
        }
        if (host.indexOf(':') < 0)
        {
            return host;
        }
        try
        {
            // an IPv6 literal (never a name: it has colons), so no lookup is made
            final byte[] bytes = InetAddress.getByName(host).getAddress();
            return bytes.length == 16 ? HexFormat.of().formatHex(bytes, 0, 8) + "::/64" : host;
        }
        catch (final UnknownHostException ex)
        {
            return host;
        }
    }
}
