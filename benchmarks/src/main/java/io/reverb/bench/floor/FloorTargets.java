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
     * Turns a bare {@code floor} or {@code floor+aeron} of a target list into an address with a name of this process
     * (so that two tools on one machine never share a server's files), a bare {@code floor+tcp} into an ephemeral
     * loopback port; anything else is returned as is.
     *
     * @param target one target of {@code --compare} or {@code --uri}.
     * @return the address.
     */
    public static String expand(final String target)
    {
        if (EngineFloorTarget.SCHEME.equals(target) || AeronFloorTarget.SCHEME.equals(target))
        {
            return target + "://reverb-floor-" + ProcessHandle.current().pid();
        }
        if (TcpFloorTarget.SCHEME.equals(target))
        {
            return TcpFloorTarget.LOOPBACK;
        }
        return target;
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
