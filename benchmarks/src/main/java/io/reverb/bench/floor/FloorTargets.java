package io.reverb.bench.floor;

import java.net.URI;

/**
 * What {@code reverb-bench} needs to know of the floor targets, the raw ping-pongs a Reverb run is measured against:
 * for {@code shm://}, {@code floor://} ({@link EngineFloorTarget}, the engine's rings without RPC) and
 * {@code floor+aeron://} ({@link AeronFloorTarget}, Aeron IPC); for {@code tcp://}, {@code floor+tcp://}
 * ({@link TcpFloorTarget}, a plain NIO socket echo).
 */
public final class FloorTargets
{
    /** The framework name of every floor run in reports. */
    public static final String FRAMEWORK = "floor";
    /** Most lanes ({@code -c}) a floor client serves. */
    static final int MAX_LANES = 4096;
    /** gRPC's UNAVAILABLE, the status of a call lost with its connection. */
    static final int UNAVAILABLE = 14;

    private FloorTargets()
    {
    }

    /**
     * The query parameter of a floor target whose client copies each reply's payload out of the transport's memory
     * into an array of its own, as any receiver of a message must before the transport reuses that memory (an RPC's
     * client parses every response). By default a floor client reads only the lane number of a reply, so the reply's
     * payload never leaves the core that wrote it: at 1 MiB that is most of the difference between the floor and an
     * RPC (benchmarks/results/20261207-0835-mib-reply-read).
     */
    public static final String READ_REPLIES = "readReplies=true";

    /**
     * Turns a bare {@code floor} or {@code floor+aeron} of a target list into an address with a name of this process
     * (so that two tools on one machine never share a server's files), a bare {@code floor+tcp} into an ephemeral
     * loopback port; anything else is returned as is. A bare scheme may carry a query ({@code floor?readReplies=true}).
     *
     * @param target one target of {@code --compare} or {@code --uri}.
     * @return the address.
     */
    public static String expand(final String target)
    {
        final int query = target.indexOf('?');
        final String scheme = query < 0 ? target : target.substring(0, query);
        final String rest = query < 0 ? "" : target.substring(query);
        if (EngineFloorTarget.SCHEME.equals(scheme) || AeronFloorTarget.SCHEME.equals(scheme))
        {
            return scheme + "://reverb-floor-" + ProcessHandle.current().pid() + rest;
        }
        if (TcpFloorTarget.SCHEME.equals(scheme))
        {
            return TcpFloorTarget.LOOPBACK + rest;
        }
        return target;
    }

    /**
     * @param uri a floor address.
     * @return true if its client copies each reply's payload out ({@link #READ_REPLIES}).
     * @throws IllegalArgumentException if its query names anything else: a floor takes no other parameter.
     */
    public static boolean readsReplies(final URI uri)
    {
        final String query = uri.getRawQuery();
        if (query == null || query.isEmpty())
        {
            return false;
        }
        if (!READ_REPLIES.equals(query) && !"readReplies=false".equals(query))
        {
            throw new IllegalArgumentException("a floor target takes one parameter, readReplies=true|false: " + uri);
        }
        return READ_REPLIES.equals(query);
    }

    /**
     * @param address a floor server's own address.
     * @param uri     the address it was started with.
     * @return the server's address with the query of the one it was started with, for its clients.
     */
    static String withQuery(final String address, final URI uri)
    {
        return uri.getRawQuery() == null ? address : address + "?" + uri.getRawQuery();
    }

    /**
     * @param uri a target address.
     * @return true if it is a floor target named in shared memory ({@code floor+tcp} is not: it has a host and port).
     */
    public static boolean isFloor(final URI uri)
    {
        return EngineFloorTarget.SCHEME.equals(uri.getScheme()) || AeronFloorTarget.SCHEME.equals(uri.getScheme());
    }

    /**
     * @param uri a floor address.
     * @return its shared-memory name.
     * @throws IllegalArgumentException if it has none.
     */
    static String name(final URI uri)
    {
        final String name = uri.getHost() != null ? uri.getHost() : uri.getAuthority();
        if (name == null || name.isBlank())
        {
            throw new IllegalArgumentException("a floor address needs a name, e.g. " + uri.getScheme() + "://bench: " + uri);
        }
        return name;
    }

    static UnsupportedOperationException unaryOnly()
    {
        return new UnsupportedOperationException("the floor targets echo unary messages only (no --kind server-streaming)");
    }
}
