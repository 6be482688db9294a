package io.reverb.rdma.engine;

import java.io.IOException;
import java.util.concurrent.Executor;
import org.agrona.collections.Int2ObjectHashMap;
import org.agrona.collections.LongArrayQueue;

/**
 * The receiver's side of rendezvous: RTS frames are answered strictly in arrival order, with CTS (a buffer
 * granted from the receive pool) or REFUSE. While no buffer is free, RTS queue up here, and a queued one holds
 * later ones back; they are granted as buffers come back.
 *
 * <h2>Admission (issue 13, item 3)</h2>
 * The RTS at the head of the queue is, in this order:
 * <ol>
 *   <li>refused ({@link Wire#REFUSE_TOO_LARGE}) if longer than the inbound limit, before anything is reserved;</li>
 *   <li>refused ({@link Wire#REFUSE_OVER_BUDGET}) if its buffer could never fit this connection's cap
 *       ({@link EngineConfig#rendezvousPoolBytes()}) or the engine-wide budget
 *       ({@link EngineConfig#rendezvousMemoryBytes()});</li>
 *   <li>granted an idle pooled buffer at once;</li>
 *   <li>else its bytes are booked ({@link BufferPool#reserve(int)}) and the buffer is registered on the engine's
 *       allocator thread, never on the poller; the RTS waits and is granted when the allocation lands, or refused
 *       ({@link Wire#REFUSE_NO_MEMORY}) if it failed;</li>
 *   <li>else it waits: for this connection's own buffers to come back (its cap is taken), or for any connection
 *       to free bytes (the engine-wide budget is taken: {@link RendezvousBudget} wakes every waiter).</li>
 * </ol>
 * A granted buffer whose data does not arrive within {@link EngineConfig#rendezvousWriteTimeoutNanos()} is
 * {@link #overdue overdue}: the peer is dropped, so that no one holds memory by announcing and never writing.
 * A sender that gives a granted rendezvous up unwritten (a direct write whose claim was aborted or never taken) sends
 * ABORT: the buffer comes back and nothing is delivered ({@link #abort}); an ABORT for anything not granted is a
 * protocol error.
 * A sender never has more than {@link EngineConnection#MAX_PIPELINED_RENDEZVOUS} RTS unanswered or unwritten;
 * a peer that announces more breaks the protocol ({@link #onRequestToSend} says so), so the queue is bounded.
 *
 * <p>Poller thread only, except what the allocator thread sets ({@link #allocating}, {@link #allocationFailure}).
 */
final class InboundRendezvous
{
    /** Where the answers go: the connection queues them as control frames for its next batch. */
    interface Answers
    {
        void clearToSend(int id, long address, int rkey, int length);

        /**
         * @param code  {@link Wire#REFUSE_TOO_LARGE}, {@link Wire#REFUSE_OVER_BUDGET} or {@link Wire#REFUSE_NO_MEMORY}.
         * @param limit the limit that refused it, in bytes.
         */
        void refuse(int id, int code, int limit);
    }

    private final BufferPool pool;
    private final RendezvousBudget budget;
    private final Executor allocator;
    /** The connection's wake-up: its poller grants queued RTS at its next attention check. */
    private final Runnable wakeUp;
    /** The engine's limit, lowered per connection by {@link #limitTo(int)} (set by another thread before polling). */
    private volatile int maxInboundMessageSize;
    private final int maxOutstanding;
    private final long writeTimeoutNanos;
    private final ConnectionStats stats;
    private final Answers answers;
    private final Int2ObjectHashMap<BufferPool.Buffer> granted = new Int2ObjectHashMap<>();
    /** RTS waiting for a buffer, in arrival order: id in the high 32 bits, length in the low 32. */
    private final LongArrayQueue queued = new LongArrayQueue(8, Long.MIN_VALUE);
    /** An allocation for the head RTS is under way on the allocator thread. */
    private volatile boolean allocating;
    /** Why the last allocation failed; the head RTS is refused with it. */
    private volatile IOException allocationFailure;

    InboundRendezvous(
        final BufferPool pool,
        final RendezvousBudget budget,
        final Executor allocator,
        final Runnable wakeUp,
        final int maxInboundMessageSize,
        final int maxOutstanding,
        final long writeTimeoutNanos,
        final ConnectionStats stats,
        final Answers answers)
    {
        this.pool = pool;
        this.budget = budget;
        this.allocator = allocator;
        this.wakeUp = wakeUp;
        this.maxInboundMessageSize = maxInboundMessageSize;
        this.maxOutstanding = maxOutstanding;
        this.writeTimeoutNanos = writeTimeoutNanos;
        this.stats = stats;
        this.answers = answers;
    }

    /**
     * An RTS arrived: answer it now if nothing is queued before it and a buffer is free, else queue it.
     *
     * @return null, or what is wrong with it (a protocol error: a correct sender never does that).
     */
    String onRequestToSend(final int id, final int length)
    {
        if (length <= 0)
        {
            return "RTS announcing " + length + " bytes";
        }
        if (granted.size() + queued.size() >= maxOutstanding)
        {
            return "more than " + maxOutstanding + " rendezvous announced and not yet written";
        }
        if (isOutstanding(id))
        {
            // a second buffer under the same id would orphan the first (granted, never written or released)
            return "RTS " + id + " announced again before its write";
        }
        queued.offerLong(((long)id << 32) | (length & 0xFFFF_FFFFL));
        grantQueued();
        if (!queued.isEmpty())
        {
            stats.rendezvousQueued.incrementRelease(); // this one waits for a buffer (its own or an earlier one's)
        }
        return null;
    }

    /** @return true if an RTS with this id is granted or queued (at most {@code maxOutstanding} to look through). */
    private boolean isOutstanding(final int id)
    {
        if (granted.containsKey(id))
        {
            return true;
        }
        final LongArrayQueue.LongIterator waiting = queued.iterator();
        while (waiting.hasNext())
        {
            if ((int)(waiting.nextValue() >>> 32) == id)
            {
                return true;
            }
        }
        return false;
    }

    /** Answers queued RTS in order for as long as buffers are free. */
    void grantQueued()
    {
        while (!queued.isEmpty())
        {
            final long next = queued.peekLong();
            final int id = (int)(next >>> 32);
            final int length = (int)next;
            final int limit = maxInboundMessageSize;
            if (length > limit)
            {
                stats.rendezvousRefused.incrementRelease();
                answers.refuse(id, Wire.REFUSE_TOO_LARGE, limit);
            }
            else if (pool.sizeClassFor(length) > Math.min(pool.maxBytes(), budget.maxBytes()))
            {
                stats.rendezvousRefused.incrementRelease();
                answers.refuse(id, Wire.REFUSE_OVER_BUDGET, (int)Math.min(Integer.MAX_VALUE,
                    Math.min(pool.maxBytes(), budget.maxBytes())));
            }
            else if (!allocating && allocationFailure != null)
            {
                allocationFailure = null;
                stats.rendezvousRefused.incrementRelease();
                answers.refuse(id, Wire.REFUSE_NO_MEMORY, pool.sizeClassFor(length));
            }
            else if (!grant(id, length))
            {
                return;
            }
            queued.pollLong();
        }
    }

    private boolean grant(final int id, final int length)
    {
        final BufferPool.Buffer buffer = pool.acquireIdle(length);
        if (buffer == null)
        {
            if (!allocating)
            {
                book(length);
            }
            return false;
        }
        buffer.id = id;
        buffer.length = length;
        buffer.grantedAtNanos = System.nanoTime();
        granted.put(id, buffer);
        answers.clearToSend(id, buffer.region.address(), buffer.region.rkey(), buffer.sizeClass);
        return true;
    }

    /** Books the head RTS's buffer and has it allocated off the poller, or leaves the RTS waiting. */
    private void book(final int length)
    {
        int result = pool.reserve(length);
        if (result == BufferPool.BUDGET_FULL)
        {
            // Wait for a release anywhere; look once more, since a release may have come just before the wait.
            budget.await(wakeUp);
            stats.rendezvousBudgetWaits.incrementRelease();
            result = pool.reserve(length);
            if (result == BufferPool.RESERVED)
            {
                budget.cancel(wakeUp);
            }
        }
        if (result != BufferPool.RESERVED)
        {
            return; // POOL_FULL: this connection's releases wake it; POOL_CLOSED: tearing down
        }
        allocating = true;
        try
        {
            allocator.execute(() -> allocate(length));
        }
        catch (final RuntimeException rejected)
        {
            allocate(length); // the engine is closing: its allocator is gone, nothing may wait for it
        }
    }

    private void allocate(final int length)
    {
        try
        {
            pool.allocateReserved(length);
        }
        catch (final IOException ex)
        {
            allocationFailure = ex;
            stats.rendezvousAllocationFailures.incrementRelease();
        }
        finally
        {
            allocating = false;
            wakeUp.run();
        }
    }

    /**
     * A peer that is granted memory and never writes holds it: after the write timeout, that is a protocol error
     * (the connection goes, and its memory with it).
     *
     * @param nowNanos {@code System.nanoTime()}.
     * @return null, or what is overdue.
     */
    String overdue(final long nowNanos)
    {
        if (writeTimeoutNanos <= 0 || granted.isEmpty())
        {
            return null;
        }
        for (final BufferPool.Buffer buffer : granted.values())
        {
            if (nowNanos - buffer.grantedAtNanos > writeTimeoutNanos)
            {
                return "rendezvous " + buffer.id + " (" + buffer.length + " bytes) granted and not written within " +
                    writeTimeoutNanos / 1_000_000 + " ms (rendezvousWriteTimeout)";
            }
        }
        return null;
    }

    /** Lowers the inbound limit of this connection (never raises it). */
    void limitTo(final int bytes)
    {
        if (bytes < maxInboundMessageSize)
        {
            maxInboundMessageSize = bytes;
        }
    }

    /**
     * The sender gave rendezvous {@code id} up after its CTS (a direct write not written): its buffer comes back and
     * nothing is delivered for it.
     *
     * @return null, or what is wrong (a protocol error: only a granted rendezvous can be aborted)
     */
    String abort(final long id)
    {
        final BufferPool.Buffer buffer = id == (int)id ? granted.remove((int)id) : null;
        if (buffer == null)
        {
            return "ABORT for rendezvous " + id + ", which is not granted";
        }
        stats.rendezvousAbortsReceived.incrementRelease();
        pool.release(buffer);
        grantQueued();
        return null;
    }

    /** @return the buffer the data of rendezvous {@code id} was written into, or null if none was granted. */
    BufferPool.Buffer take(final int id)
    {
        return granted.remove(id);
    }

    /** Returns a delivered buffer that the handler did not retain. */
    void release(final BufferPool.Buffer buffer)
    {
        pool.release(buffer);
    }

    /** @return RTS waiting for a buffer. */
    int queued()
    {
        return queued.size();
    }

    /** @return buffers granted whose data has not arrived. */
    int granted()
    {
        return granted.size();
    }

    boolean isEmpty()
    {
        return granted.isEmpty();
    }

    /** Teardown: returns every granted buffer, forgets queued RTS and stops waiting for the budget. */
    void releaseAll()
    {
        budget.cancel(wakeUp);
        granted.values().forEach(pool::release);
        granted.clear();
        queued.clear();
    }
}
