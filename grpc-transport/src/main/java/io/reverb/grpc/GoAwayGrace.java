package io.reverb.grpc;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The addresses whose server went away gracefully (GOAWAY) a moment ago, shared by the transports of one channel.
 *
 * <p>A server that goes away gracefully closes its listener first, and a process taking its address binds a few
 * milliseconds later (the fault suite measured 17 ms over tcp://). grpc-java's subchannel answers a failed connect
 * with TRANSIENT_FAILURE and its backoff (a second or more), failing every fail-fast call meanwhile. So for
 * {@link #graceNanos} after a GOAWAY from an address, a {@link ReverbClientTransport} whose connect to that address
 * fails UNAVAILABLE tries again every {@link #RETRY_NANOS} instead, and grpc-java sees CONNECTING (its calls wait,
 * their deadlines running). Past the grace a failed connect fails the transport as before. rpc-core's own channels do
 * the same in their subchannels.
 */
final class GoAwayGrace
{
    /** How long after a GOAWAY failed connects fail no call; tests shorten or lengthen it. */
    static volatile long graceNanos = TimeUnit.SECONDS.toNanos(1);
    /** How soon a connect follows one that failed within the grace. */
    static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    /** Past this many addresses, recording one first forgets those whose grace is over. */
    private static final int PRUNE_ABOVE = 16;

    /** Address URI -> end of its grace ({@code System.nanoTime()}). */
    private final ConcurrentHashMap<String, Long> until = new ConcurrentHashMap<>();

    /**
     * A connection to {@code uri} received GOAWAY.
     *
     * @param uri the address's URI.
     */
    void goAway(final String uri)
    {
        final long now = System.nanoTime();
        if (until.size() >= PRUNE_ABOVE)
        {
            until.values().removeIf(end -> end - now <= 0);
        }
        until.put(uri, now + graceNanos);
    }

    /**
     * @param uri the address's URI.
     * @return true if a connect to {@code uri} that failed now falls within the grace after a GOAWAY from it.
     */
    boolean within(final String uri)
    {
        final Long end = until.get(uri);
        return end != null && end - System.nanoTime() > 0;
    }
}
