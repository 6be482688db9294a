package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaEventChannel;
import java.io.IOException;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The one thread per context that reads its rdma_cm event channel and routes each event to the
 * rdma_cm id it concerns. DiSNi acknowledges events inside libdisni, so nothing here needs acking.
 *
 * <p>DiSNi's {@code getCmEvent} polls the channel's fd with a timeout and cannot be interrupted, so
 * the thread polls in slices of {@value #POLL_MS} ms and checks its stop flag between them; closing
 * therefore takes at most one slice.
 */
final class CmEventDispatcher implements Runnable
{
    static final int POLL_MS = 50;
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

    private final RdmaEventChannel channel;
    private final Map<RdmaCmId, Handler> handlers = new IdentityHashMap<>();
    private final Thread thread;
    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private volatile boolean running = true;
    private volatile Throwable failure;

    CmEventDispatcher(final RdmaEventChannel channel, final String name)
    {
        this.channel = channel;
        this.thread = new Thread(this, name);
        this.thread.setDaemon(true);
    }

    void start()
    {
        thread.start();
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

    /** @return what stopped the thread, or null. */
    Throwable failure()
    {
        return failure;
    }

    @Override
    public void run()
    {
        int consecutiveFailures = 0;
        while (running)
        {
            try
            {
                final RdmaCmEvent event = channel.getCmEvent(POLL_MS);
                consecutiveFailures = 0;
                if (event != null)
                {
                    dispatch(event);
                }
            }
            catch (final IOException | RuntimeException ex)
            {
                // One bad event (e.g. DiSNi failing to wrap an id) must not stop connection management;
                // a channel that keeps failing, or is closed, does.
                if (!running)
                {
                    return;
                }
                failure = ex;
                if (!channel.isOpen() || ++consecutiveFailures >= MAX_CONSECUTIVE_FAILURES)
                {
                    return;
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(POLL_MS));
            }
            runTasks();
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

    private void runTasks()
    {
        Runnable task;
        while ((task = tasks.poll()) != null)
        {
            try
            {
                task.run();
            }
            catch (final RuntimeException ex)
            {
                // A user's disconnect handler threw; connection management goes on.
            }
        }
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
            }
        }
        else if (type == CONNECT_REQUEST && event.getConnIdPriv() != null)
        {
            // Nobody listens any more: destroying the id makes the kernel reject the request.
            DisniVerbsContext.quietly(() -> event.getConnIdPriv().destroyId());
        }
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
