package io.reverb.rdma.rpc;

import java.net.InetAddress;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.Map;
import javax.net.ssl.SSLSession;

/**
 * The upgrade tickets a {@code reverb://} listener has given out: each bound to the tcp connection it was issued on
 * (its binding, {@link FabricMessages#binding}), live {@link #LIFETIME_NANOS} at most, and counted per peer: at most
 * {@link #MAX_PER_PEER} outstanding for one peer (one IPv4 address, or one IPv6 /64) and {@link #MAX_TICKETS} in all,
 * so that a peer that floods HELLOs exhausts its own share only and the clients of other addresses keep upgrading.
 * The listener returns a ticket when its tcp connection closes or carries an RPC frame (its client stayed on tcp), so
 * a flood has to hold its connections open. Thread-safe; the clock is the caller's.
 */
final class FabricTickets
{
    /** How long a ticket can be claimed. */
    static final long LIFETIME_NANOS = 30_000_000_000L;
    /** Tickets outstanding at most, all peers together. */
    static final int MAX_TICKETS = 4096;
    /** Tickets outstanding at most for one peer address (an IPv4 address, an IPv6 /64). */
    static final int MAX_PER_PEER = 64;

    /**
     * A ticket given out: when, to whom, over which tcp connection, and that connection's TLS session (or null): what
     * TLS proved of the client there, which a connection that claims the ticket inherits.
     */
    record Issued(long nanos, String peer, byte[] binding, SSLSession tls)
    {
    }

    private final Map<String, Issued> byTicket = new HashMap<>();
    private final Map<String, Integer> perPeer = new HashMap<>();
    private final int maxTickets;
    private final int maxPerPeer;

    FabricTickets()
    {
        this(MAX_TICKETS, MAX_PER_PEER);
    }

    FabricTickets(final int maxTickets, final int maxPerPeer)
    {
        this.maxTickets = maxTickets;
        this.maxPerPeer = maxPerPeer;
    }

    /** @return the key a peer's tickets are counted under: its IPv4 address, or its IPv6 address's /64. */
    static String peerKey(final InetAddress address)
    {
        final byte[] bytes = address.getAddress();
        return bytes.length == 4 ? address.getHostAddress() : HexFormat.of().formatHex(bytes, 0, 8) + "::/64";
    }

    /**
     * Records a ticket.
     *
     * @param ticket  its bytes.
     * @param peer    {@link #peerKey} of the peer it is given to.
     * @param binding the tcp connection it is given over, as the server's socket has it.
     * @param now     the clock.
     * @return null if it was recorded, else why not (no ticket is then given).
     */
    String issue(final byte[] ticket, final String peer, final byte[] binding, final long now)
    {
        return issue(ticket, peer, binding, null, now);
    }

    /**
     * Records a ticket.
     *
     * @param ticket  its bytes.
     * @param peer    {@link #peerKey} of the peer it is given to.
     * @param binding the tcp connection it is given over, as the server's socket has it.
     * @param tls     that connection's TLS session, or null.
     * @param now     the clock.
     * @return null if it was recorded, else why not (no ticket is then given).
     */
    synchronized String issue(final byte[] ticket, final String peer, final byte[] binding, final SSLSession tls,
        final long now)
    {
        if (byTicket.size() >= maxTickets || perPeer.getOrDefault(peer, 0) >= maxPerPeer)
        {
            expire(now);
        }
        final int held = perPeer.getOrDefault(peer, 0);
        if (held >= maxPerPeer)
        {
            return held + " upgrade tickets are outstanding for the client's address " + peer +
                " (its connections that are still negotiating)";
        }
        if (byTicket.size() >= maxTickets)
        {
            return maxTickets + " upgrade tickets are outstanding on this server";
        }
        // one entry per ticket, counted once: a ticket already outstanding is not given twice
        if (byTicket.putIfAbsent(HexFormat.of().formatHex(ticket), new Issued(now, peer, binding.clone(), tls)) != null)
        {
            return "the server drew a ticket that is already outstanding";
        }
        perPeer.merge(peer, 1, Integer::sum);
        return null;
    }

    /**
     * Takes a ticket: it is gone afterwards, whatever the claim's fate.
     *
     * @return what was issued, or null if the ticket is unknown, used, returned or expired.
     */
    synchronized Issued take(final byte[] ticket, final long now)
    {
        final Issued issued = remove(HexFormat.of().formatHex(ticket));
        return issued == null || now - issued.nanos() > LIFETIME_NANOS ? null : issued;
    }

    /** Returns a ticket unused (its connection closed, or its client stayed on tcp); an unknown one is ignored. */
    synchronized void release(final byte[] ticket)
    {
        remove(HexFormat.of().formatHex(ticket));
    }

    /** @return tickets outstanding. */
    synchronized int size()
    {
        return byTicket.size();
    }

    /** @return tickets outstanding for one peer key. */
    synchronized int held(final String peer)
    {
        return perPeer.getOrDefault(peer, 0);
    }

    synchronized void clear()
    {
        byTicket.clear();
        perPeer.clear();
    }

    private Issued remove(final String key)
    {
        final Issued issued = byTicket.remove(key);
        if (issued != null)
        {
            perPeer.computeIfPresent(issued.peer(), (peer, count) -> count <= 1 ? null : count - 1);
        }
        return issued;
    }

    private void expire(final long now)
    {
        for (final Iterator<Map.Entry<String, Issued>> it = byTicket.entrySet().iterator(); it.hasNext();)
        {
            final Issued issued = it.next().getValue();
            if (now - issued.nanos() > LIFETIME_NANOS)
            {
                it.remove();
                perPeer.computeIfPresent(issued.peer(), (peer, count) -> count <= 1 ? null : count - 1);
            }
        }
    }
}
