package io.reverb.rpc.transport.inproc;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The threads that deliver inproc messages ("reverb-inproc-N", daemons, made as needed and gone after a minute
 * idle), as an RDMA poller would.
 *
 * <p>A connection given messages from within a delivery (a server that answered on the thread that delivered the
 * request, a client that called again from its response's callback) is drained next by that same thread, once the
 * delivery it is in has returned and no caller's lock is held, instead of by another thread woken for it: a unary call
 * then costs one thread hand-over (its request's, from the caller's thread) instead of one per message, and a call
 * made from a response's callback none (grpc-java's in-process transport with {@code directExecutor()} runs both sides
 * on one thread too). A thread keeps at most one such connection, behind at most {@link #KEEP_BEHIND} more messages
 * of the drain it is in; any other goes to the pool as before.
 *
 * <p>A delivery that blocks (a handler waiting for its peer to read what it sent) must not hold up the connection
 * kept for after it, or it would wait for itself: a watchdog thread ("reverb-inproc-watchdog") looks every
 * {@link #RESCUE_TICK_NANOS} while connections are being kept, and a connection still kept at two looks in a row (no
 * other kept by its thread in between) goes to the pool. The watchdog parks while none are, and ends with the last
 * delivery thread.
 */
final class InprocDelivery
{
    /**
     * A kept connection waits behind at most this many messages of the drain under way, if more are queued; beyond, it
     * goes to the pool (a drain with many queued, a server under load, still answers its peers in batches of this).
     */
    static final int KEEP_BEHIND = 16;

    /** How often the watchdog looks while connections are kept (a kept connection waits at most about twice this). */
    static final long RESCUE_TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

    /** The watchdog's period ({@link #rescueTick}). */
    private static volatile long rescueTickNanos = RESCUE_TICK_NANOS;

    private static final AtomicInteger THREAD_COUNT = new AtomicInteger();
    private static final Set<DeliveryThread> THREADS = ConcurrentHashMap.newKeySet();
    private static final ThreadPoolExecutor POOL = (ThreadPoolExecutor)Executors.newCachedThreadPool(task ->
        new DeliveryThread(task, "reverb-inproc-" + THREAD_COUNT.incrementAndGet()));
    /** Guards the watchdog's start and end against delivery threads starting and ending. */
    private static final Object LIFECYCLE = new Object();
    /**
     * The watchdog: started with the first delivery thread, gone once the last one ended (the pool ends a thread idle for
     * a minute), so that an idle JVM, or a class loader let go of, keeps no thread of this transport. Written under
     * {@link #LIFECYCLE}.
     */
    private static volatile Thread watchdog;
    /** The watchdog parked until a connection is kept. */
    private static volatile boolean watchdogParked;

    private InprocDelivery()
    {
    }

    /**
     * Sets the watchdog's period (tests lengthen it to see where deliveries run when nothing is rescued).
     *
     * @param nanos the period, positive.
     */
    static void rescueTick(final long nanos)
    {
        rescueTickNanos = nanos;
        unparkWatchdog();
    }

    /**
     * Sets how long an idle delivery thread lives (a minute by default; tests shorten it to see the threads and the
     * watchdog end).
     *
     * @param nanos the time, positive.
     */
    static void idleThreadsLive(final long nanos)
    {
        POOL.setKeepAliveTime(nanos, TimeUnit.NANOSECONDS);
    }

    /** @return whether the watchdog runs (tests). */
    static boolean watchdogRuns()
    {
        final Thread current = watchdog;
        return current != null && current.isAlive();
    }

    private static void unparkWatchdog()
    {
        final Thread current = watchdog;
        if (current != null)
        {
            LockSupport.unpark(current);
        }
    }

    /**
     * Drains a connection on a delivery thread: this one, after its current delivery, if it is one and keeps no
     * other connection yet; else a thread of the pool.
     *
     * @param connection a connection whose drain is due (its drain count taken by the caller).
     */
    static void schedule(final InprocConnection connection)
    {
        final Thread current = Thread.currentThread();
        if (!(current instanceof DeliveryThread) || !((DeliveryThread)current).keep(connection))
        {
            POOL.execute(connection.drainTask());
        }
    }

    /**
     * A drain delivered a message: if the connection this thread keeps has waited for {@link #KEEP_BEHIND} messages
     * and more are queued, it goes to the pool now rather than after all of them.
     *
     * @param nothingQueued the drain has no message left to deliver now.
     */
    static void delivered(final boolean nothingQueued)
    {
        final Thread current = Thread.currentThread();
        if (current instanceof DeliveryThread)
        {
            final DeliveryThread thread = (DeliveryThread)current;
            if (thread.kept != null && ++thread.deliveredSinceKept >= KEEP_BEHIND && !nothingQueued)
            {
                thread.handKeptToPool();
            }
        }
    }

    /**
     * The pool's task for a connection: drains it, then each connection this thread kept meanwhile, one after the
     * other.
     *
     * @param connection the connection to drain first.
     */
    static void drain(final InprocConnection connection)
    {
        final DeliveryThread thread = (DeliveryThread)Thread.currentThread();
        thread.draining = true;
        try
        {
            InprocConnection next = connection;
            while (next != null)
            {
                next.drain();
                next = thread.takeKept();
            }
        }
        finally
        {
            thread.draining = false;
            thread.handKeptToPool(); // a drain threw: the connection it kept still runs
        }
    }

    private static void watch()
    {
        // When the last look found a connection kept, the next look is due a tick (the current one) after it.
        long lastLook = 0;
        boolean lookedActive = false;
        while (true)
        {
            if (lookedActive)
            {
                // Woken before the tick is out: by a stale permit (two keep()s that both saw it parked), by rescueTick
                // or by the last delivery thread's end. A look now would be the "second look in a row" at once and
                // hand to the pool a connection whose thread is merely still delivering (a CI run caught a ping-pong
                // moved to a second thread so): wait out the tick, unless there is nothing left to watch.
                final long wait = lastLook + rescueTickNanos - System.nanoTime();
                if (wait > 0 && !THREADS.isEmpty())
                {
                    LockSupport.parkNanos(wait);
                    continue;
                }
            }
            boolean active = false;
            for (final DeliveryThread thread : THREADS)
            {
                active |= thread.look();
            }
            lastLook = System.nanoTime();
            lookedActive = active;
            if (active)
            {
                continue; // the next look is a tick away (the wait above)
            }
            synchronized (LIFECYCLE)
            {
                if (THREADS.isEmpty())
                {
                    watchdog = null; // no delivery thread, nothing to keep: the next delivery thread starts another
                    return;
                }
            }
            watchdogParked = true;
            boolean kept = false;
            for (final DeliveryThread thread : THREADS)
            {
                kept |= thread.kept != null;
            }
            if (!kept)
            {
                // until the next connection kept or the last delivery thread's end (or a spurious wake-up: looks again)
                LockSupport.park();
            }
            watchdogParked = false;
        }
    }

    /** A thread of the pool. */
    static final class DeliveryThread extends Thread
    {
        private static final VarHandle KEPT;

        static
        {
            try
            {
                KEPT = MethodHandles.lookup().findVarHandle(DeliveryThread.class, "kept", InprocConnection.class);
            }
            catch (final ReflectiveOperationException e)
            {
                throw new ExceptionInInitializerError(e);
            }
        }

        /** A drain runs on this thread now (this thread only). */
        boolean draining;
        /** The connection this thread drains next, or null: set by this thread, taken by it or by the watchdog. */
        volatile InprocConnection kept;
        /** Connections kept so far (this thread writes it, before {@link #kept}; the watchdog reads it). */
        long keptCount;
        /** Messages this thread delivered since it kept {@link #kept} (this thread only). */
        int deliveredSinceKept;
        /** The watchdog's last look: {@link #keptCount} then, and whether a connection was kept then (watchdog only). */
        private long lookedCount;
        private boolean lookedKept;

        DeliveryThread(final Runnable task, final String name)
        {
            super(task, name);
            setDaemon(true);
        }

        @Override
        public void run()
        {
            synchronized (LIFECYCLE)
            {
                THREADS.add(this);
                if (watchdog == null)
                {
                    final Thread started = new Thread(InprocDelivery::watch, "reverb-inproc-watchdog");
                    started.setDaemon(true);
                    watchdog = started;
                    started.start();
                }
            }
            try
            {
                super.run();
            }
            finally
            {
                synchronized (LIFECYCLE)
                {
                    THREADS.remove(this);
                    if (THREADS.isEmpty())
                    {
                        unparkWatchdog(); // it ends
                    }
                }
            }
        }

        boolean keep(final InprocConnection connection)
        {
            if (!draining || kept != null)
            {
                return false;
            }
            keptCount++;
            deliveredSinceKept = 0;
            kept = connection;
            if (watchdogParked)
            {
                unparkWatchdog();
            }
            return true;
        }

        InprocConnection takeKept()
        {
            final InprocConnection connection = kept;
            return connection != null && KEPT.compareAndSet(this, connection, null) ? connection : null;
        }

        /** The connection this thread keeps, if any, is drained by a thread of the pool instead. */
        void handKeptToPool()
        {
            final InprocConnection connection = takeKept();
            if (connection != null)
            {
                POOL.execute(connection.drainTask());
            }
        }

        /**
         * The watchdog's look: a connection kept since the last look, with no other kept in between, goes to the
         * pool.
         *
         * @return whether this thread kept a connection since the last look or keeps one now.
         */
        boolean look()
        {
            final InprocConnection connection = kept;
            final long count = keptCount;
            final boolean active = count != lookedCount || connection != null;
            final boolean rescued = connection != null && lookedKept && count == lookedCount
                && KEPT.compareAndSet(this, connection, null);
            if (rescued)
            {
                POOL.execute(connection.drainTask());
            }
            lookedCount = count;
            lookedKept = connection != null && !rescued;
            return active;
        }
    }
}
