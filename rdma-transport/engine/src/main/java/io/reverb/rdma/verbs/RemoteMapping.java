package io.reverb.rdma.verbs;

import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A range of a peer's registered memory mapped into this process, so that this side's CPU writes the bytes
 * straight into it (what a NIC's RDMA WRITE would copy, written in place instead). Obtained from
 * {@link QueuePair#mapRemote(long, int, int)}, which checks the peer's key, bounds, protection domain and
 * {@link Access#REMOTE_WRITE} first, on providers that {@link QueuePair#canMapRemote() can}.
 *
 * <p>Writes become visible to the peer no later than the next work request this side posts on the same QP
 * completes at the peer (the engine posts a zero-length RDMA_WRITE_WITH_IMM to say "written"). The memory
 * stays mapped until {@link #close()}, even if the peer deregisters the region or the QP closes meanwhile
 * (writes then land in memory the peer no longer reads): the holder decides when the mapping goes, never a
 * concurrent close. Not thread-safe: one writer at a time.
 */
public interface RemoteMapping extends AutoCloseable
{
    /**
     * @return a buffer over exactly the mapped range (position 0, limit and capacity {@link #length()}), dedicated
     * to this mapping; valid until {@link #close()}.
     */
    ByteBuffer byteBuffer();

    /** @return the same memory as an {@link UnsafeBuffer} (index 0 is the first mapped byte); valid until close. */
    UnsafeBuffer buffer();

    /** @return mapped bytes. */
    int length();

    /** Gives the mapping back: neither buffer may be touched afterwards. Idempotent. */
    @Override
    void close();
}
