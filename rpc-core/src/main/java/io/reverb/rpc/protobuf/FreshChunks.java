package io.reverb.rpc.protobuf;

import java.util.ArrayDeque;

/**
 * Per thread, a few {@link LargeFieldSplitter#CHUNK}-byte arrays allocated ahead of time, while the thread had nothing
 * else to do, for the next large message this thread reads with the default marshaller.
 *
 * <p>Why: a fresh array costs its reader about three times a reused one (the memory is new to the caches and the
 * TLB, and the JVM zeroes it on allocation), and that cost sits between the message's arrival and its delivery.
 * Allocated while the thread was idle (a poller waiting for the peer's answer), the zeroing is done, the lines are
 * in this core's caches, and the copy out of registered memory costs about what a copy into a reused array does.
 *
 * <p>Nothing is reused: every array here is new (allocated by {@link #prepare()}, seen by nobody), is taken at most
 * once ({@link #take()} removes it) and becomes part of exactly one message; an array is never given back. So no
 * message, and no view of one, can ever observe another message's bytes. A thread that never read a large message has
 * no stash; one that did keeps at most as many arrays as its largest large message took (at most
 * {@link #MAX_CHUNKS}). Thread-confined: no locks.
 */
final class FreshChunks
{
    /** At most this many arrays (4 MiB) wait per thread. */
    static final int MAX_CHUNKS = 16;
    private static final ThreadLocal<FreshChunks> STASH = new ThreadLocal<>();

    private final ArrayDeque<byte[]> arrays = new ArrayDeque<>();
    private int target;

    private FreshChunks()
    {
    }

    /**
     * Called by the splitter before it cuts a field of {@code chunks} arrays on this thread: from now on this thread
     * prepares that many (capped) ahead of its next large message.
     *
     * @param chunks arrays of {@link LargeFieldSplitter#CHUNK} bytes the field takes.
     * @return this thread's stash.
     */
    static FreshChunks expect(final int chunks)
    {
        FreshChunks stash = STASH.get();
        if (stash == null)
        {
            stash = new FreshChunks();
            STASH.set(stash);
        }
        stash.target = Math.max(stash.target, Math.min(MAX_CHUNKS, chunks));
        return stash;
    }

    /**
     * @return a fresh array of {@link LargeFieldSplitter#CHUNK} bytes prepared ahead and never handed out, removed from
     *     the stash; or null if none is ready (allocate one then).
     */
    byte[] take()
    {
        return arrays.pollFirst();
    }

    /**
     * Allocates one array into this thread's stash if it has fewer than its target: bounded work (one allocation of
     * {@link LargeFieldSplitter#CHUNK} bytes) for a thread that has nothing else to do.
     *
     * @return true if an array was allocated (call again to prepare more), false if there was nothing to do.
     */
    static boolean prepare()
    {
        final FreshChunks stash = STASH.get();
        if (stash == null || stash.arrays.size() >= stash.target)
        {
            return false;
        }
        stash.arrays.addLast(new byte[LargeFieldSplitter.CHUNK]);
        return true;
    }

    /**
     * @return arrays waiting in this thread's stash (tests).
     */
    static int ready()
    {
        final FreshChunks stash = STASH.get();
        return stash == null ? 0 : stash.arrays.size();
    }

    /** Drops this thread's stash and its target (tests). */
    static void clear()
    {
        STASH.remove();
    }
}
