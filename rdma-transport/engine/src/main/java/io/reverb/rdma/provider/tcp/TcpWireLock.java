package io.reverb.rdma.provider.tcp;

import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.concurrent.locks.LockSupport;

/**
 * The lock over one QP's socket and NIC-side state. Posting threads and the poller that reads the socket only ever
 * {@link #tryLock()} (a poster hands its request to the NIC thread when it is taken, the poller reads at its next
 * poll); the NIC thread waits for it in {@link #lock()} by parking, so that a
 * poster preempted while writing gets the core back instead of losing it to a NIC thread spinning on the lock (two
 * cores, loaded). Reentrant. Nothing is allocated, contended or not (a {@code ReentrantLock} allocates a queue node
 * per contended acquire).
 */
final class TcpWireLock
{
    private static final AtomicReferenceFieldUpdater<TcpWireLock, Thread> WAITER =
        AtomicReferenceFieldUpdater.newUpdater(TcpWireLock.class, Thread.class, "waiter");

    private final AtomicReference<Thread> owner = new AtomicReference<>();
    private volatile Thread waiter;
    private int holds;

    /** @return true if the calling thread now holds the lock (or already did) */
    boolean tryLock()
    {
        final Thread me = Thread.currentThread();
        if (owner.get() == me)
        {
            holds++;
            return true;
        }
        if (owner.compareAndSet(null, me))
        {
            holds = 1;
            return true;
        }
        return false;
    }

    /** Waits for the lock. One thread at a time parks (the NIC thread); any other waiting thread yields. */
    void lock()
    {
        if (tryLock())
        {
            return;
        }
        final Thread me = Thread.currentThread();
        if (!WAITER.compareAndSet(this, null, me))
        {
            // Another thread parks already (only one can: unlock() unparks one): this one yields.
            lockYielding();
            return;
        }
        // Dekker with unlock(): the waiter is published before the lock is tried again, and unlock() frees the lock
        // before it reads the waiter; so either this try succeeds or unlock() unparks.
        while (!tryLock())
        {
            LockSupport.park(this);
        }
        waiter = null;
    }

    /**
     * Waits for the lock by yielding, never parking: for a thread other than the NIC's that must not go on without
     * the lock (the poller about to sleep, which must leave its socket watched). {@link #lock()} parks one thread
     * at a time only.
     */
    void lockYielding()
    {
        while (!tryLock())
        {
            Thread.yield();
        }
    }

    /**
     * @param wait whether to wait ({@link #lockYielding()}) if the lock is taken
     * @return true if the calling thread now holds the lock (always, with {@code wait})
     */
    boolean tryLockOrYield(final boolean wait)
    {
        if (tryLock())
        {
            return true;
        }
        if (wait)
        {
            lockYielding();
        }
        return wait;
    }

    /** @return true if the calling thread holds the lock (for assertions) */
    boolean isHeldByCurrentThread()
    {
        return owner.get() == Thread.currentThread();
    }

    void unlock()
    {
        if (--holds > 0)
        {
            return;
        }
        owner.set(null);
        final Thread parked = waiter;
        if (parked != null)
        {
            LockSupport.unpark(parked);
        }
    }
}
