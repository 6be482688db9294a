package io.reverb.rdma.provider.tcp;

import io.reverb.common.LogLimiter;
import io.reverb.rdma.provider.base.Tasks;
import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.Arrays;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.agrona.collections.ArrayUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The context's "NIC": one thread with an NIO selector over the sockets of all the context's QPs.
 * Each duty cycle it runs set-up tasks, lets every QP move staged work to its socket (and expire RNR
 * waits), then selects, sleeping only when no QP has work: posting threads publish their request
 * (writing it themselves when the QP's wire is free), then wake the selector if (and only if) the NIC said
 * it was about to sleep, so a busy NIC costs posters no system call.
 *
 * <p>While the poller of a QP's receive CQ keeps polling, that poller reads the QP's socket itself
 * ({@link TcpCompletionQueue}) and the selector does not watch it for input: the NIC reads only for pollers that
 * sleep (or stopped polling: it takes the reading back after a lease), and still writes what a socket refused, times
 * RNR waits and held ACKs, and runs set-up and tear-down.
 *
 * <p>Busy polling (off by default): with {@link io.reverb.rdma.verbs.VerbsConfig#tcpBusyPollNanos()} (default
 * {@code -Dreverb.tcp.busyPollMicros=N}) the NIC keeps polling its sockets
 * without sleeping for N µs after the last event, so that a reply arriving within that time is read without a
 * wake-up. It costs a core while it spins: on a machine with fewer free cores than busy threads it makes latency
 * worse, not better.
 */
final class TcpNic implements Runnable
{
    private static final Logger LOG = LoggerFactory.getLogger(TcpNic.class);
    /** A QP that failed on this thread: logged at most so often (a bug that hits every QP must not flood the log). */
    private static final LogLimiter QP_FAILURE_LOG = new LogLimiter((line, t) -> LOG.error(line, t));
    private static final long IDLE_SELECT_MS = 100;
    private static final TcpQueuePair[] NONE = new TcpQueuePair[0];

    private final Selector selector;
    private final Thread thread;
    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final Consumer<SelectionKey> onKey = this::onKey;
    private volatile boolean running = true;
    private volatile boolean asleep;
    private TcpQueuePair[] queuePairs = NONE;
    /** How long the NIC busy-polls after the last event before it sleeps; 0 never. */
    private final long busyPollNanos;
    private long lastEventNanos;

    TcpNic(final String name, final long busyPollNanos) throws IOException
    {
        this.busyPollNanos = busyPollNanos;
        selector = Selector.open();
        thread = new Thread(this, name);
        thread.setDaemon(true);
        thread.start();
    }

    /** Nudges the NIC after work was published, if it may be sleeping. Any thread; no allocation. */
    void wake()
    {
        if (asleep)
        {
            selector.wakeup();
        }
    }

    /** Wakes the NIC now, asleep or not (cold path: a posting thread hands it a blocked socket). */
    void wakeNow()
    {
        selector.wakeup();
    }

    /** Runs a task on the NIC thread (cold path). */
    void execute(final Runnable task)
    {
        if (Thread.currentThread() == thread || !running)
        {
            task.run();
            return;
        }
        tasks.add(task);
        selector.wakeup();
    }

    /**
     * Queues a task behind the NIC's current work, even when called on the NIC thread (so that a
     * disconnect handler never runs inside the NIC's own bookkeeping); runs it here if the NIC stopped.
     */
    void schedule(final Runnable task)
    {
        if (!running)
        {
            task.run();
            return;
        }
        tasks.add(task);
        if (Thread.currentThread() != thread)
        {
            selector.wakeup();
        }
    }

    /** Adds a connected QP (any thread). */
    void register(final TcpQueuePair qp)
    {
        execute(() ->
        {
            try
            {
                qp.register(selector);
                final TcpQueuePair[] grown = Arrays.copyOf(queuePairs, queuePairs.length + 1);
                grown[grown.length - 1] = qp;
                queuePairs = grown;
            }
            catch (final IOException | RuntimeException ex)
            {
                QP_FAILURE_LOG.log("register", "cannot register " + qp + " with the NIC selector", ex);
                qp.peerGone();
            }
        });
    }

    /** A QP closed its socket (any thread: the poller of its CQ may be the one that met the peer's EOF). */
    void removed(final TcpQueuePair qp)
    {
        execute(() -> queuePairs = ArrayUtil.remove(queuePairs, qp));
    }

    @Override
    public void run()
    {
        try
        {
            while (running)
            {
                runTasks();
                final long now = System.nanoTime();
                long nextDeadline = Long.MAX_VALUE;
                final TcpQueuePair[] qps = queuePairs;
                for (final TcpQueuePair qp : qps)
                {
                    try
                    {
                        nextDeadline = Math.min(nextDeadline, qp.doWork(now));
                    }
                    catch (final RuntimeException e)
                    {
                        queuePairFailed(qp, e);
                    }
                }
                if (busyPollNanos > 0 && now - lastEventNanos < busyPollNanos)
                {
                    // Busy polling: no sleep, so posters need not wake the NIC (asleep stays false).
                    if (selector.selectNow(onKey) > 0)
                    {
                        lastEventNanos = System.nanoTime();
                    }
                    continue;
                }
                asleep = true;
                if (!tasks.isEmpty() || anyPendingWork())
                {
                    selector.selectNow(onKey);
                }
                else
                {
                    final long millis = nextDeadline == Long.MAX_VALUE ? IDLE_SELECT_MS :
                        Math.max(1, Math.min(IDLE_SELECT_MS, TimeUnit.NANOSECONDS.toMillis(nextDeadline) + 1));
                    if (selector.select(onKey, millis) > 0)
                    {
                        lastEventNanos = System.nanoTime();
                    }
                }
                asleep = false;
            }
        }
        catch (final Throwable t)
        {
            if (running)
            {
                LOG.error("tcp:// NIC thread failed; its connections go down", t);
            }
        }
        finally
        {
            running = false;
            asleep = false;
            for (final TcpQueuePair qp : queuePairs)
            {
                qp.peerGone();
            }
            runTasks();
            try
            {
                selector.close();
            }
            catch (final IOException ignore)
            {
                // Closing anyway.
            }
        }
    }

    /**
     * A QP's work threw (a bug, not its peer's doing: what a peer sends is checked before use): that QP goes down
     * (its requests complete in error, its socket closes) and leaves this thread; the NIC's other connections go on.
     * If taking it down throws too, the NIC thread fails as a whole, as before.
     */
    private void queuePairFailed(final TcpQueuePair qp, final RuntimeException e)
    {
        QP_FAILURE_LOG.log("qp", "tcp:// " + qp + " failed on the NIC thread; it goes down, the NIC's other " +
            "connections go on", e);
        queuePairs = ArrayUtil.remove(queuePairs, qp);
        qp.peerGone();
    }

    private boolean anyPendingWork()
    {
        for (final TcpQueuePair qp : queuePairs)
        {
            if (qp.hasPendingWork())
            {
                return true;
            }
        }
        return false;
    }

    private void onKey(final SelectionKey key)
    {
        final TcpQueuePair qp = (TcpQueuePair)key.attachment();
        try
        {
            qp.onReady(key);
        }
        catch (final RuntimeException ex)
        {
            QP_FAILURE_LOG.log("qp failed", qp + " failed on the NIC thread; disconnecting it", ex);
            qp.peerGone();
        }
    }

    private void runTasks()
    {
        Tasks.runAll(tasks, ex -> LOG.error("tcp:// NIC task failed", Tasks.rethrowError(ex)));
    }

    /** Stops the thread after taking every remaining QP down. Idempotent. */
    void close()
    {
        running = false;
        selector.wakeup();
        if (Thread.currentThread() != thread)
        {
            try
            {
                thread.join(TimeUnit.SECONDS.toMillis(10));
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }
    }
}
