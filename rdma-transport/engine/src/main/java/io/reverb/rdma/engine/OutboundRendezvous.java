package io.reverb.rdma.engine;

import java.util.ArrayDeque;
import java.util.List;
import org.agrona.collections.Int2ObjectHashMap;

/**
 * The sender's side of rendezvous: messages too large for an eager frame, announced by an RTS frame and
 * written with RDMA_WRITE_WITH_IMM into the buffer the receiver grants with CTS.
 * <pre>
 *   commit ──► registered ──(RTS posted)──► awaiting CTS ──(CTS)──► pending write ──(posted)──► writing
 *                                                  └──(REFUSE)──► failed to the sender     (completion)──► released
 * </pre>
 * The receiver answers RTS strictly in order, so CTS and REFUSE must name the oldest RTS awaiting an answer;
 * anything else is a protocol error. Writes are posted in CTS order.
 *
 * <p>A <em>direct write</em> ({@link BufferPool.Buffer#direct}) is announced before it is written: its RTS goes at
 * the first claim, its CTS maps the granted buffer, the claimant writes straight into it, and its "write" is a
 * zero-length RDMA_WRITE_WITH_IMM that may be posted only once committed; until then it holds back the writes
 * granted after it. One given up after its CTS is removed ({@link #removeGranted}) and the receiver told with an ABORT.
 * An <em>early announcement</em> ({@link BufferPool.Buffer#early}, {@link EngineConfig#announceAtClaim(boolean)}) is
 * a pool buffer whose RTS goes at its claim: it is committed here at once and, granted, holds back the writes granted
 * after it until its claimant commits, as a direct write does.
 *
 * <p>Not thread-safe: the connection guards it with its send lock.
 */
final class OutboundRendezvous
{
    /** Rendezvous whose RTS is posted, in RTS order, waiting for CTS or REFUSE. */
    private final ArrayDeque<BufferPool.Buffer> awaitingCts = new ArrayDeque<>();
    /** Rendezvous granted, in order, waiting for a credit to post their write. */
    private final ArrayDeque<BufferPool.Buffer> pendingWrites = new ArrayDeque<>();
    /** Every rendezvous committed and not yet written (or refused), by id. */
    private final Int2ObjectHashMap<BufferPool.Buffer> byId = new Int2ObjectHashMap<>();

    /** A rendezvous message was committed: its RTS frame is in the ring. */
    void committed(final BufferPool.Buffer buffer)
    {
        byId.put(buffer.id, buffer);
    }

    /** The RTS of rendezvous {@code id} was posted: it now waits for the receiver's answer. */
    void rtsPosted(final int id)
    {
        awaitingCts.addLast(byId.get(id));
    }

    /** @return rendezvous announced and not yet written: an eager frame must not overtake them. */
    int outstanding()
    {
        return awaitingCts.size() + pendingWrites.size();
    }

    /**
     * @return the next granted rendezvous to write, or null (also while the next is a direct write or an early
     * announcement its claimant has not committed)
     */
    BufferPool.Buffer nextWrite()
    {
        final BufferPool.Buffer next = pendingWrites.peekFirst();
        return next == null || !(next.direct || next.early) || next.committed ? next : null;
    }

    /** @return rendezvous granted whose write is not yet posted (tests: an early announcement's CTS is in). */
    int grantedUnwritten()
    {
        return pendingWrites.size();
    }

    /** @return true if {@code buffer} is granted and its write not yet posted. */
    boolean isGranted(final BufferPool.Buffer buffer)
    {
        return pendingWrites.contains(buffer);
    }

    /** @return the rendezvous granted last (by the CTS just accepted). */
    BufferPool.Buffer lastGranted()
    {
        return pendingWrites.peekLast();
    }

    /**
     * A granted direct write given up (aborted by its claimant, or abandoned): forgotten. One not yet granted stays
     * (marked {@link BufferPool.Buffer#abandoned}) until the receiver answers its RTS, which it does in order.
     */
    void removeGranted(final BufferPool.Buffer buffer)
    {
        byId.remove(buffer.id);
        pendingWrites.remove(buffer);
    }

    /** The write of {@link #nextWrite()} was posted. */
    void writePosted()
    {
        pendingWrites.pollFirst();
    }

    /**
     * The receiver granted a buffer for rendezvous {@code id}.
     *
     * @return null if accepted, else what is wrong with it (a protocol error)
     */
    String onClearToSend(final long id, final int grantedLength, final long remoteAddress, final int remoteRkey)
    {
        final BufferPool.Buffer buffer = awaitingCts.peekFirst();
        if (buffer == null || buffer.id != (int)id)
        {
            return "CTS for rendezvous " + id + " out of order";
        }
        if (grantedLength < buffer.length)
        {
            return "CTS granted fewer bytes than rendezvous " + id + " needs";
        }
        awaitingCts.pollFirst();
        buffer.remoteAddress = remoteAddress;
        buffer.remoteRkey = remoteRkey;
        pendingWrites.addLast(buffer);
        return null;
    }

    /**
     * The receiver refused rendezvous {@code id}.
     *
     * @return its buffer, for the caller to release and report, or null if the REFUSE is out of order
     */
    BufferPool.Buffer onRefuse(final long id)
    {
        final BufferPool.Buffer buffer = awaitingCts.peekFirst();
        if (buffer == null || buffer.id != (int)id)
        {
            return null;
        }
        awaitingCts.pollFirst();
        byId.remove((int)id);
        return buffer;
    }

    /** @return the buffer whose write completed, or null if it is no longer known. */
    BufferPool.Buffer onWriteCompleted(final int id)
    {
        return byId.remove(id);
    }

    /** @return rendezvous committed and not yet done. */
    int size()
    {
        return byId.size();
    }

    boolean isEmpty()
    {
        return byId.isEmpty();
    }

    /** Teardown: hands every rendezvous not yet done to {@code failed} and forgets them all. */
    void drainTo(final List<BufferPool.Buffer> failed)
    {
        failed.addAll(byId.values());
        byId.clear();
        awaitingCts.clear();
        pendingWrites.clear();
    }
}
