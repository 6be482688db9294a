package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvCQ;
import com.ibm.disni.verbs.IbvCompChannel;
import com.ibm.disni.verbs.IbvWC;
import com.ibm.disni.verbs.SVCPollCq;
import com.ibm.disni.verbs.SVCReqNotify;
import io.reverb.rdma.provider.base.AbstractCompletionQueue;
import io.reverb.rdma.verbs.WorkCompletions;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * ibv_cq through DiSNi, polled with a reused {@code SVCPollCq} (one per completion-batch size, rebuilt
 * only when a caller passes a {@link WorkCompletions} of another capacity) and armed with two reused
 * {@code SVCReqNotify} calls (all / solicited only).
 *
 * <p>Each CQ has its own {@code IbvCompChannel} (DiSNi cannot create a CQ without one, and cannot share one
 * between CQs: see {@link DisniCompletionChannel}), so each CQ costs one file descriptor. When the CQ is bound to
 * an SPI channel, an event pump thread waits on it, acknowledges every event on this CQ at once and signals the
 * SPI channel. The pump starts on the first {@link #requestNotify(boolean)}: a busy-polling engine never arms
 * its CQs, so it runs no pump threads at all. A running pump wakes every {@value #PUMP_POLL_MS} ms to check
 * whether the CQ is closing (DiSNi's native wait cannot be interrupted). {@link #close()} never waits for it: a CQ
 * closed while its pump runs is destroyed by the pump when its native wait returns.
 *
 * <p>Polling and tear-down are serialised on one lock so that a poll never touches a destroyed CQ
 * (that would be a native use-after-free); uncontended, as the SPI has one poller per CQ.
 *
 * <p>A failing {@code ibv_poll_cq}, {@code ibv_req_notify_cq} or {@code ibv_get_cq_event} breaks the CQ: it is logged
 * once, with its cause, every queue pair on the CQ is taken down with that cause ({@link Member#fail}: the engine
 * closes the connection with it), and the CQ polls nothing more. Before, such an error was swallowed and the CQ
 * returned 0 for ever, leaving its connections hanging.
 */
final class DisniCompletionQueue extends AbstractCompletionQueue<DisniVerbsContext, DisniCompletionChannel>
{
    private static final int PUMP_POLL_MS = 50;
    private static final Logger LOG = LoggerFactory.getLogger(DisniCompletionQueue.class);

    /** A queue pair on this CQ, as the CQ sees it. */
    interface Member
    {
        /** @return its QP number. */
        int qpNum();

        /** An error completion was polled for it: the HCA moved it to ERROR. */
        void markError();

        /**
         * Its CQ broke: take the queue pair down with this cause.
         *
         * @param cause what failed.
         */
        void fail(IOException cause);
    }

    private final IbvCompChannel compChannel;
    private final IbvCQ cq;
    private final Object lock = new Object();
    private final List<Member> queuePairs = new ArrayList<>();
    private final Consumer<String> log;
    private final SVCReqNotify notifyAny;
    private final SVCReqNotify notifySolicited;
    private volatile Thread pump;
    /** Guarded by {@link #lock}: the pump thread has started and not yet left; it then destroys a closed CQ. */
    private boolean pumpRunning;
    private final CountDownLatch destroyed = new CountDownLatch(1);
    private IbvWC[] wcs;
    private SVCPollCq pollCall;
    private volatile Member soleQueuePair;
    private volatile IOException failure;
    private volatile boolean open = true;

    /**
     * @param context     owner.
     * @param capacity    entries.
     * @param channel     SPI channel, or null.
     * @param compChannel DiSNi's channel of this CQ.
     * @param cq          DiSNi's CQ.
     * @param log         where the one line about a broken CQ goes.
     * @throws IOException if DiSNi cannot prepare the notify calls.
     */
    DisniCompletionQueue(
        final DisniVerbsContext context,
        final int capacity,
        final DisniCompletionChannel channel,
        final IbvCompChannel compChannel,
        final IbvCQ cq,
        final Consumer<String> log) throws IOException
    {
        super(context, capacity, channel);
        this.log = log;
        this.compChannel = compChannel;
        this.cq = cq;
        this.notifyAny = cq.reqNotification(false);
        this.notifySolicited = cq.reqNotification(true);
    }

    static DisniCompletionQueue create(
        final DisniVerbsContext context, final int capacity, final DisniCompletionChannel channel) throws IOException
    {
        final IbvCompChannel compChannel = context.ibvContext().createCompChannel();
        if (compChannel == null)
        {
            throw new IOException("ibv_create_comp_channel failed");
        }
        IbvCQ cq = null;
        try
        {
            cq = context.ibvContext().createCQ(compChannel, capacity, context.nextCompVector());
            if (cq == null)
            {
                throw new IOException("ibv_create_cq(" + capacity + ") failed");
            }
            return new DisniCompletionQueue(context, capacity, channel, compChannel, cq, LOG::warn);
        }
        catch (final IOException | RuntimeException ex)
        {
            final IbvCQ toDestroy = cq;
            if (toDestroy != null)
            {
                DisniVerbsContext.quietly(toDestroy::destroyCQ);
            }
            DisniVerbsContext.quietly(compChannel::destroyCompChannel);
            throw ex;
        }
    }

    private void startPump()
    {
        pumpRunning = true;
        pump = new Thread(this::pumpEvents, context.name() + "-cq-events");
        pump.setDaemon(true);
        pump.start();
    }

    private void pumpEvents()
    {
        try
        {
            pumpUntilClosed();
        }
        finally
        {
            final boolean destroyHere;
            synchronized (lock)
            {
                pumpRunning = false;
                destroyHere = !open;
            }
            if (destroyHere)
            {
                // Closed while this thread was in its native wait: the CQ was left for it to destroy.
                destroyNative();
            }
        }
    }

    private void pumpUntilClosed()
    {
        while (open)
        {
            try
            {
                // Native poll with a timeout: cannot be interrupted, so the stop flag is checked per slice.
                if (compChannel.getCqEvent(cq, PUMP_POLL_MS))
                {
                    // Acknowledge at once and on this CQ: ibv_destroy_cq waits until every event is acked.
                    cq.ackEvents(1);
                    channel.signal(1);
                }
            }
            catch (final IOException | RuntimeException ex)
            {
                if (open)
                {
                    // The channel is broken: so is the CQ for anyone sleeping on it. Take its QPs down and wake
                    // the poller.
                    fail("ibv_get_cq_event", ex);
                    channel.signal(0);
                    channel.wakeup();
                }
                return;
            }
        }
    }

    IbvCQ ibvCq()
    {
        return cq;
    }

    /** @return whether the event pump thread has been started (for tests and diagnostics). */
    boolean pumpStarted()
    {
        return pump != null;
    }

    /** @return why the CQ broke, or null. */
    IOException failure()
    {
        return failure;
    }

    @Override
    public int poll(final WorkCompletions completions)
    {
        IOException broken = null;
        synchronized (lock)
        {
            if (!open || failure != null)
            {
                completions.count(0);
                return 0;
            }
            if (pollCall == null || wcs.length != completions.capacity())
            {
                preparePollCall(completions.capacity());
            }
            int polled = 0;
            try
            {
                polled = pollCall.execute().getPolls();
            }
            catch (final IOException ex)
            {
                broken = ex;
            }
            if (polled < 0 && broken == null)
            {
                broken = new IOException("ibv_poll_cq returned " + polled);
            }
            if (broken == null)
            {
                return translate(completions, polled);
            }
            completions.count(0);
        }
        // Outside the lock: taking the QPs down runs their disconnect handlers.
        fail("ibv_poll_cq", broken);
        return 0;
    }

    private int translate(final WorkCompletions completions, final int polled)
    {
        final Member sole = soleQueuePair;
        final int failed = WorkRequestTranslator.toCompletions(wcs, polled, completions, sole == null ? 0 : sole.qpNum());
        if (failed > 0 && sole != null)
        {
            // An error completion moves the QP to ERROR in the HCA; mirror it (only knowable for a sole QP,
            // since DiSNi does not read qp_num of failed completions).
            sole.markError();
        }
        return polled;
    }

    private void preparePollCall(final int entries)
    {
        if (pollCall != null)
        {
            pollCall.free();
            pollCall = null;
        }
        final IbvWC[] array = new IbvWC[entries];
        for (int i = 0; i < entries; i++)
        {
            array[i] = new IbvWC();
        }
        try
        {
            pollCall = cq.poll(array, entries);
            wcs = array;
        }
        catch (final IOException ex)
        {
            throw new IllegalStateException("cannot prepare ibv_poll_cq: " + ex.getMessage(), ex);
        }
    }

    @Override
    public void requestNotify(final boolean solicitedOnly)
    {
        final IOException broken;
        synchronized (lock)
        {
            if (!open || channel == null)
            {
                // Without an SPI channel nobody could ever take the event: arming would be pointless.
                return;
            }
            if (pump == null)
            {
                // Lazily: only pollers that sleep on the channel need a thread waiting on its events.
                startPump();
            }
            if (failure != null)
            {
                return;
            }
            try
            {
                (solicitedOnly ? notifySolicited : notifyAny).execute();
                return;
            }
            catch (final IOException ex)
            {
                broken = ex;
            }
        }
        // ibv_req_notify_cq fails only on a broken CQ: nobody would ever be woken for its completions.
        fail("ibv_req_notify_cq", broken);
    }

    /**
     * The CQ is broken: once, log it with its cause and take down every queue pair on it.
     *
     * @param call  the verb that failed.
     * @param cause its error.
     */
    void fail(final String call, final Exception cause)
    {
        final IOException failed = new IOException(call + " failed on " + context.name() + "'s CQ of " + capacity +
            " entries: " + cause.getMessage() + "; the CQ is broken and its connections are closed", cause);
        final List<Member> members;
        synchronized (queuePairs)
        {
            if (failure != null || !open)
            {
                return;
            }
            failure = failed;
            members = new ArrayList<>(queuePairs);
        }
        log.accept(failed.getMessage() + " (" + members.size() + " queue pair(s))");
        for (final Member member : members)
        {
            member.fail(failed);
        }
    }

    void attach(final Member qp)
    {
        synchronized (queuePairs)
        {
            queuePairs.add(qp);
            soleQueuePair = queuePairs.size() == 1 ? qp : null;
        }
    }

    void detach(final Member qp)
    {
        synchronized (queuePairs)
        {
            queuePairs.remove(qp);
            soleQueuePair = queuePairs.size() == 1 ? queuePairs.get(0) : null;
        }
    }

    @Override
    public void close()
    {
        final boolean destroyHere;
        synchronized (lock)
        {
            if (!open)
            {
                return;
            }
            open = false;
            if (pollCall != null)
            {
                pollCall.free();
                pollCall = null;
            }
            notifyAny.free();
            notifySolicited.free();
            // A running pump is inside (or about to enter) DiSNi's uninterruptible getCqEvent: destroying under it
            // could crash, and waiting for it would stall the closing thread (the poller) up to a poll slice per
            // CQ. So the pump destroys the CQ itself when that wait returns; without one, it is done here.
            destroyHere = !pumpRunning;
        }
        if (destroyHere)
        {
            destroyNative();
        }
        // else: it stays tracked by the context until the pump destroyed it, so that closing the context waits.
    }

    private void destroyNative()
    {
        DisniVerbsContext.quietly(cq::destroyCQ);
        DisniVerbsContext.quietly(compChannel::destroyCompChannel);
        destroyed.countDown();
        context.untrack(this);
    }

    /**
     * Waits until the native CQ is destroyed (by {@link #close()} itself, or by the pump when its native wait
     * returns, within a poll slice). For closing a whole context, not for the poller.
     *
     * @param timeoutMillis maximum wait.
     * @return true if destroyed.
     */
    boolean awaitDestroyed(final long timeoutMillis)
    {
        try
        {
            return destroyed.await(timeoutMillis, TimeUnit.MILLISECONDS);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** @return the longest a pump takes to leave its native wait. */
    static long pumpExitMillis()
    {
        return PUMP_POLL_MS * 4L;
    }

    @Override
    public String toString()
    {
        return "DisniCompletionQueue{capacity=" + capacity + ", open=" + open + '}';
    }
}
