package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.RdmaCm;
import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaEventChannel;
import io.reverb.rdma.provider.base.Tasks;
import io.reverb.common.LogLimiter;
import java.io.IOException;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one thread per context that reads its rdma_cm event channel and routes each event to the
 * rdma_cm id it concerns. DiSNi acknowledges events inside libdisni, so nothing here needs acking.
 *
 * <p>DiSNi's {@code getCmEvent} polls the channel's fd with a timeout and cannot be interrupted, so
 * the thread polls in slices of {@value #POLL_MS} ms and checks its stop flag between them; closing
 * therefore takes at most one slice.
 *
 * <p>It also creates and destroys the context's rdma_cm ids ({@link #createId()}, {@link #destroyId}), so
 * that DiSNi's id table is never written while {@code getCmEvent} reads it (see {@link CmIdTable}), and runs
 * tickers after every slice for deadlines that must pass even when no event arrives.
 *
 * <p>An event lost to a failure (DiSNi failing to read or wrap it, a handler or ticker throwing) is counted and
 * logged, one line each, at most {@value LogLimiter#BURST} lines per kind and then one per 10 s with the count
 * left out ({@link LogLimiter}); giving up is logged once.
 */
final class CmEventDispatcher implements Runnable
{
    static final int POLL_MS = 50;
    private static final Logger LOG = LoggerFactory.getLogger(CmEventDispatcher.class);
    static final int MAX_CONSECUTIVE_FAILURES = 20;

    static final int ADDR_RESOLVED = RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_RESOLVED.ordinal();
    static final int ADDR_ERROR = RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_ERROR.ordinal();
    static final int ROUTE_RESOLVED = RdmaCmEvent.EventType.RDMA_CM_EVENT_ROUTE_RESOLVED.ordinal();
    static final int ROUTE_ERROR = RdmaCmEvent.EventType.RDMA_CM_EVENT_ROUTE_ERROR.ordinal();
    static final int CONNECT_REQUEST = RdmaCmEvent.EventType.RDMA_CM_EVENT_CONNECT_REQUEST.ordinal();
    static final int ESTABLISHED = RdmaCmEvent.EventType.RDMA_CM_EVENT_ESTABLISHED.ordinal();
    static final int DISCONNECTED = RdmaCmEvent.EventType.RDMA_CM_EVENT_DISCONNECTED.ordinal();
    static final int DEVICE_REMOVAL = RdmaCmEvent.EventType.RDMA_CM_EVENT_DEVICE_REMOVAL.ordinal();

    /** Receives the events of one rdma_cm id. Called on the dispatcher thread: must not block. */
    interface Handler
    {
        /**
         * @param event  {@code RdmaCmEvent.EventType} ordinal.
         * @param connId the id the event is about (for CONNECT_REQUEST: the new id of the request).
         */
        void onCmEvent(int event, RdmaCmId connId);
    }

    /** A handler that queues events for a thread that waits for them (connection set-up). */
    static final class Waiter implements Handler
    {
        private final BlockingQueue<Integer> events = new LinkedBlockingQueue<>();
        private volatile Handler next;

        @Override
        public void onCmEvent(final int event, final RdmaCmId connId)
        {
            final Handler established = next;
            if (established != null)
            {
                established.onCmEvent(event, connId);
            }
            else
            {
                events.add(event);
            }
        }

        /**
         * @param expected     event wanted.
         * @param timeoutNanos maximum wait.
         * @param what         step, for the error message.
         * @throws IOException on timeout or another event.
         */
        void await(final int expected, final long timeoutNanos, final String what) throws IOException
        {
            final Integer event;
            try
            {
                event = events.poll(Math.max(0, timeoutNanos), TimeUnit.NANOSECONDS);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
                throw new IOException(what + ": interrupted", ex);
            }
            if (event == null)
            {
                throw new IOException(what + ": timed out after " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms");
            }
            if (event != expected)
            {
                throw new IOException(what + ": rdma_cm reported " + name(event) + " instead of " + name(expected));
            }
        }

        /** @param handler receives every later event (the established QP). */
        void handOver(final Handler handler)
        {
            next = handler;
            Integer pending;
            while ((pending = events.poll()) != null)
            {
                handler.onCmEvent(pending, null);
            }
        }
    }

    /** Where events come from: DiSNi's {@code getCmEvent}, or a test's script. */
    interface EventSource
    {
        /**
         * @param timeoutMs maximum wait.
         * @return the next event, or null on timeout.
         * @throws IOException as {@code RdmaEventChannel.getCmEvent}.
         */
        RdmaCmEvent next(int timeoutMs) throws IOException;

        /** @return false once the channel is closed. */
        boolean isOpen();
    }

    private final RdmaEventChannel channel;
    private final EventSource source;
    private final boolean serialiseWithCmEvents;
    private final Object cmLock = new Object();
    /**
     * Held by the thread while it is inside {@code getCmEvent} (rdma_get_cm_event), where librdmacm may modify the
     * QP of an id it reports on (CONNECT_RESPONSE: to RTR and RTS; REJECTED: to ERROR). Fair, so that a thread
     * waiting for it gets it at the end of the current slice. Taken before {@link #cmLock}.
     */
    private final ReentrantLock pollLock = new ReentrantLock(true);
    private final Map<RdmaCmId, Handler> handlers = new IdentityHashMap<>();
    private final Thread thread;
    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final List<Runnable> tickers = new CopyOnWriteArrayList<>();
    private volatile boolean running = true;
    private volatile Throwable failure;
    private volatile Throwable lastTransientFailure;
    private final AtomicLong transientFailures = new AtomicLong();
    private final Consumer<String> log;
    /** Lines about lost events, rate-limited per kind (the giving-up line goes to {@link #log} once, unlimited). */
    private final LogLimiter logLimiter;
    private final String name;

    /**
     * @param channel DiSNi event channel; its id table is made thread-safe here ({@link CmIdTable}).
     * @param name    thread name.
     */
    CmEventDispatcher(final RdmaEventChannel channel, final String name)
    {
        this(channel, new EventSource()
        {
            @Override
            public RdmaCmEvent next(final int timeoutMs) throws IOException
            {
                return channel.getCmEvent(timeoutMs);
            }

            @Override
            public boolean isOpen()
            {
                return channel.isOpen();
            }
        }, !CmIdTable.install(channel), name);
    }

    /**
     * @param channel               DiSNi event channel (for creating and destroying ids; null in tests).
     * @param source                where events come from.
     * @param serialiseWithCmEvents true when DiSNi's id table is not thread-safe: id creation and destruction
     *                              then wait for the dispatcher to be outside {@code getCmEvent}.
     * @param name                  thread name.
     */
    CmEventDispatcher(
        final RdmaEventChannel channel, final EventSource source, final boolean serialiseWithCmEvents, final String name)
    {
        this(channel, source, serialiseWithCmEvents, name, LOG::warn);
    }

    /**
     * @param channel               DiSNi event channel (null in tests).
     * @param source                where events come from.
     * @param serialiseWithCmEvents see above.
     * @param name                  thread name.
     * @param log                   receives each line logged (rate-limited here).
     */
    CmEventDispatcher(
        final RdmaEventChannel channel,
        final EventSource source,
        final boolean serialiseWithCmEvents,
        final String name,
        final Consumer<String> log)
    {
        this.name = name;
        this.log = log;
        this.logLimiter = new LogLimiter((line, stack) -> log.accept(line));
        this.channel = channel;
        this.source = source;
        this.serialiseWithCmEvents = serialiseWithCmEvents;
        this.thread = new Thread(this, name);
        this.thread.setDaemon(true);
    }

    void start()
    {
        thread.start();
    }

    /** @return true if DiSNi's id table could not be made thread-safe, so id creation waits for event polls. */
    boolean serialisesWithCmEvents()
    {
        return serialiseWithCmEvents;
    }

    /**
     * Creates an rdma_cm id on this dispatcher's channel, safely against a concurrent {@code getCmEvent}.
     *
     * @return the new id.
     * @throws IOException if DiSNi fails.
     */
    RdmaCmId createId() throws IOException
    {
        synchronized (cmLock)
        {
            final RdmaCmId id = channel.createId(RdmaCm.RDMA_PS_TCP);
            if (id == null)
            {
                throw new IOException("rdma_create_id failed");
            }
            return id;
        }
    }

    /**
     * Stops routing {@code id}'s events, removes it from DiSNi's id table and then destroys it (ignoring
     * failure: it may be gone). In that order: DiSNi keys its table by the native id's address, which
     * {@code rdma_destroy_id} frees; a CONNECT_REQUEST read meanwhile on this thread may get a new id at that
     * same address and enter it in the table, and forgetting the old id after that would drop the new one.
     *
     * @param id an id created by {@link #createId()} or delivered with a CONNECT_REQUEST.
     */
    void destroyId(final RdmaCmId id)
    {
        unregister(id);
        synchronized (cmLock)
        {
            CmIdTable.forget(channel, id);
            DisniVerbsContext.quietly(id::destroyId);
        }
    }

    /**
     * Runs {@code action} while this dispatcher's thread is outside {@code getCmEvent}, waiting at most one poll
     * slice ({@value #POLL_MS} ms). For destroying the QP of an id whose connection is not established: on the
     * active side librdmacm's rdma_get_cm_event moves that QP to RTR/RTS (or ERROR) while it reads the CM's
     * answer, so destroying the QP on another thread meanwhile (a connect timing out) would free it under
     * librdmacm's feet. Callers may hold their own locks: the thread holds this one only inside
     * {@code getCmEvent}, where it runs no handler.
     *
     * @param action what must not overlap {@code getCmEvent}.
     */
    void outsideGetCmEvent(final Runnable action)
    {
        pollLock.lock();
        try
        {
            action.run();
        }
        finally
        {
            pollLock.unlock();
        }
    }

    /**
     * @param id      an rdma_cm id created on this dispatcher's channel.
     * @param handler its events (for a listening id: CONNECT_REQUESTs).
     */
    void register(final RdmaCmId id, final Handler handler)
    {
        synchronized (handlers)
        {
            handlers.put(id, handler);
        }
    }

    /** @param id no longer routed. */
    void unregister(final RdmaCmId id)
    {
        synchronized (handlers)
        {
            handlers.remove(id);
        }
    }

    /**
     * @param ticker runs on this thread after every poll slice (at least every {@value #POLL_MS} ms while the
     *               dispatcher runs); must not block. Used for deadlines (parked requests, closing ids).
     */
    void addTicker(final Runnable ticker)
    {
        tickers.add(ticker);
    }

    /** @param ticker no longer run. */
    void removeTicker(final Runnable ticker)
    {
        tickers.remove(ticker);
    }

    /** @return what made the thread give up, or null while it runs (or after a clean stop). */
    Throwable failure()
    {
        return failure;
    }

    /** @return failures that the thread survived (for diagnostics). */
    long transientFailures()
    {
        return transientFailures.get();
    }

    /** @return the last failure the thread survived, or null. */
    Throwable lastTransientFailure()
    {
        return lastTransientFailure;
    }

    @Override
    public void run()
    {
        int consecutiveFailures = 0;
        while (running)
        {
            try
            {
                final RdmaCmEvent event;
                pollLock.lock();
                try
                {
                    if (serialiseWithCmEvents)
                    {
                        synchronized (cmLock)
                        {
                            event = source.next(POLL_MS);
                        }
                    }
                    else
                    {
                        event = source.next(POLL_MS);
                    }
                }
                finally
                {
                    pollLock.unlock();
                }
                consecutiveFailures = 0;
                if (event != null)
                {
                    dispatch(event);
                }
            }
            catch (final IOException | RuntimeException ex)
            {
                // One bad event (e.g. DiSNi failing to wrap an id) must not stop connection management: only a
                // closed channel, or one that keeps failing, makes the thread give up, and only then does the
                // context refuse new work.
                if (!running)
                {
                    break;
                }
                transientFailures.incrementAndGet();
                lastTransientFailure = ex;
                if (!source.isOpen() || ++consecutiveFailures >= MAX_CONSECUTIVE_FAILURES)
                {
                    failure = ex;
                    log.accept(name + ": rdma_cm event channel failed " + consecutiveFailures + " time(s) in a row" +
                        (source.isOpen() ? "" : " and is closed") + ", giving up (the context refuses new work): " + ex);
                    break;
                }
                logLost("event", "an rdma_cm event was lost: reading it failed: " + ex);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(POLL_MS));
            }
            runTasks();
            runTickers();
        }
        runTasks();
    }

    /**
     * Runs {@code task} on this thread (after the current poll slice, so within {@value #POLL_MS} ms), or at
     * once on the caller's thread if the dispatcher has stopped.
     *
     * @param task e.g. a disconnect handler.
     */
    void execute(final Runnable task)
    {
        tasks.add(task);
        if (!running || !thread.isAlive())
        {
            runTasks();
        }
    }

    /** @return true when called on the dispatcher thread. */
    boolean inDispatcherThread()
    {
        return Thread.currentThread() == thread;
    }

    private void runTickers()
    {
        for (final Runnable ticker : tickers)
        {
            try
            {
                ticker.run();
            }
            catch (final RuntimeException ex)
            {
                transientFailures.incrementAndGet();
                lastTransientFailure = ex;
                logLost("ticker", "a timer task (rdma_cm deadlines) failed: " + ex);
            }
        }
    }

    private void runTasks()
    {
        // A user's disconnect handler that throws is ignored: connection management goes on.
        Tasks.runAll(tasks, Tasks::rethrowError);
    }

    private void dispatch(final RdmaCmEvent event)
    {
        final int type = event.getEvent();
        final RdmaCmId key = type == CONNECT_REQUEST ? event.getListenIdPriv() : event.getConnIdPriv();
        final Handler handler;
        synchronized (handlers)
        {
            handler = key == null ? null : handlers.get(key);
        }
        if (handler != null)
        {
            try
            {
                handler.onCmEvent(type, event.getConnIdPriv());
            }
            catch (final RuntimeException ex)
            {
                // A handler (a user's disconnect handler) threw; connection management goes on.
                transientFailures.incrementAndGet();
                lastTransientFailure = ex;
                logLost("handler", "the handler of an rdma_cm " + name(type) + " event threw: " + ex);
            }
        }
        else if (type == CONNECT_REQUEST && event.getConnIdPriv() != null)
        {
            // Nobody listens any more: destroying the id makes the kernel reject the request.
            destroyId(event.getConnIdPriv());
        }
    }

    private void logLost(final String kind, final String line)
    {
        logLimiter.log(kind, name + ": " + line + " (" + transientFailures.get() + " so far)", null);
    }

    /** Stops the thread, waiting at most one poll slice (plus margin). */
    void stop()
    {
        running = false;
        if (Thread.currentThread() != thread)
        {
            try
            {
                thread.join(POLL_MS * 4L);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** @return whether the thread has ended. */
    boolean isStopped()
    {
        return !thread.isAlive();
    }

    static String name(final int event)
    {
        final RdmaCmEvent.EventType[] types = RdmaCmEvent.EventType.values();
        return event >= 0 && event < types.length ? types[event].name() : "event " + event;
    }
}
