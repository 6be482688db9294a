package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvCQ;
import com.ibm.disni.verbs.IbvCompChannel;
import com.ibm.disni.verbs.IbvWC;
import com.ibm.disni.verbs.SVCPollCq;
import com.ibm.disni.verbs.SVCReqNotify;
import com.ibm.disni.verbs.impl.NatPollCqCall;
import com.ibm.disni.util.MemBuf;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.agrona.collections.Int2ObjectHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One native CQ shared by the {@link DisniSharedCompletionQueue}s of one {@link DisniCompletionChannel} (one poller)
 * in one direction (send or receive), with its own {@code IbvCompChannel} and one event-pump thread (issue 24, part 2
 * item 2).
 *
 * <p>Why one native channel per native CQ, and the CQ shared instead: DiSNi 2.1's {@code getCqEvent} drops the CQ
 * that {@code ibv_get_cq_event} returns, so on a channel serving several CQs nobody can tell which CQ to
 * {@code ibv_ack_cq_events}, and {@code ibv_destroy_cq} waits until its own events are acknowledged exactly. With one
 * CQ per native channel the pump acknowledges each event on the right CQ; the connections share the CQ instead, and
 * {@link #drain()} demultiplexes its completions by QP number into each connection's software queue (where a paused
 * receiver's completions wait, as they would in a CQ of its own). The QP number of a failed completion is read from
 * the native {@code ibv_wc} itself (valid for every status in ibverbs), as DiSNi 2.1 copies it only for successful
 * ones ({@link #RAW_WC}); without that access sharing is off ({@link #available()}).
 *
 * <p>Capacity: every shared CQ reserves its whole capacity here when a QP starts using it, so the native CQ cannot
 * overflow while no software queue does; a share that is full is left for a new, larger one ({@link
 * DisniCompletionChannel}). The share lives until its channel closes.
 *
 * <p>Polling, arming and tear-down are serialised on one lock, uncontended in the engine (a channel has one poller).
 */
final class DisniCqShare
{
    private static final Logger LOG = LoggerFactory.getLogger(DisniCqShare.class);
    private static final int PUMP_POLL_MS = 50;
    private static final int BATCH = 32;
    /** Offset of {@code qp_num} in rdma-core's {@code struct ibv_wc} (x86-64 and every LP64 ABI). */
    static final int WC_QP_NUM_OFFSET = 28;
    /** {@code NatPollCqCall.cmd}: the native {@code ibv_wc} array DiSNi polls into; null if not accessible. */
    private static final Field RAW_WC = rawWcField();

    private final DisniVerbsContext context;
    private final DisniCompletionChannel channel;
    private final boolean send;
    private final int capacity;
    private final IbvCompChannel compChannel;
    private final IbvCQ cq;
    private final Object lock = new Object();
    private final SVCReqNotify notifyAny;
    private final SVCReqNotify notifySolicited;
    /** Guarded by {@link #lock}: armed for any completion since the last event (a solicited-only arming adds none). */
    private boolean armedAny;
    private final SVCPollCq pollCall;
    private final IbvWC[] wcs;
    private final ByteBuffer rawWcs;
    private final WorkCompletions batch = new WorkCompletions(BATCH);
    /** Guarded by {@link #lock}: QP number to the shared CQ its completions of this direction go to. */
    private final Int2ObjectHashMap<DisniSharedCompletionQueue> routes = new Int2ObjectHashMap<>();
    /** Guarded by {@link #lock}: QP number to the QP, for errors. */
    private final Int2ObjectHashMap<DisniCompletionQueue.Member> members = new Int2ObjectHashMap<>();
    /** Guarded by {@link #lock}: the shared CQs with capacity reserved here. */
    private final Map<DisniSharedCompletionQueue, Integer> reservations = new IdentityHashMap<>();
    private final CountDownLatch destroyed = new CountDownLatch(1);
    private int reserved;
    private long dropped;
    private Thread pump;
    private boolean pumpRunning;
    private boolean open = true;
    private volatile IOException failure;

    private DisniCqShare(
        final DisniVerbsContext context,
        final DisniCompletionChannel channel,
        final boolean send,
        final int capacity,
        final IbvCompChannel compChannel,
        final IbvCQ cq) throws IOException
    {
        this.context = context;
        this.channel = channel;
        this.send = send;
        this.capacity = capacity;
        this.compChannel = compChannel;
        this.cq = cq;
        this.notifyAny = cq.reqNotification(false);
        this.notifySolicited = cq.reqNotification(true);
        this.wcs = new IbvWC[BATCH];
        for (int i = 0; i < BATCH; i++)
        {
            wcs[i] = new IbvWC();
        }
        this.pollCall = cq.poll(wcs, BATCH);
        this.rawWcs = rawBuffer(pollCall);
        if (rawWcs == null)
        {
            throw new IOException("DiSNi's poll call does not expose its ibv_wc array: cannot share a CQ");
        }
    }

    /** @return whether CQs can be shared: DiSNi's native completion array is readable (it is with DiSNi 2.1). */
    static boolean available()
    {
        return RAW_WC != null;
    }

    /**
     * Creates a native CQ and its own native completion channel.
     *
     * @param context  owner.
     * @param channel  the SPI channel (the poller's) its pump signals.
     * @param send     the direction it serves.
     * @param capacity entries.
     * @return the share.
     * @throws IOException if the device refuses.
     */
    static DisniCqShare create(
        final DisniVerbsContext context, final DisniCompletionChannel channel, final boolean send, final int capacity)
        throws IOException
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
            return new DisniCqShare(context, channel, send, capacity, compChannel, cq);
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

    IbvCQ ibvCq()
    {
        return cq;
    }

    boolean isSend()
    {
        return send;
    }

    int capacity()
    {
        return capacity;
    }

    /**
     * Reserves {@code entries} for a shared CQ, once per shared CQ.
     *
     * @param shared  the shared CQ.
     * @param entries its capacity.
     * @return true if reserved (or already), false if this share has no room left.
     */
    boolean reserve(final DisniSharedCompletionQueue shared, final int entries)
    {
        synchronized (lock)
        {
            if (!open || failure != null)
            {
                return false;
            }
            if (reservations.containsKey(shared))
            {
                return true;
            }
            if (reserved + entries > capacity)
            {
                return false;
            }
            reserved += entries;
            reservations.put(shared, entries);
            return true;
        }
    }

    /** Routes a QP's completions of this direction to {@code shared}. */
    void route(final DisniCompletionQueue.Member qp, final DisniSharedCompletionQueue shared)
    {
        synchronized (lock)
        {
            routes.put(qp.qpNum(), shared);
            members.put(qp.qpNum(), qp);
        }
    }

    /** The QP is gone; completions still queued for it keep going to its shared CQ until that closes. */
    void unroute(final DisniCompletionQueue.Member qp)
    {
        synchronized (lock)
        {
            if (members.get(qp.qpNum()) == qp)
            {
                members.remove(qp.qpNum());
            }
        }
    }

    /** A shared CQ closed: its reservation and routes go. */
    void release(final DisniSharedCompletionQueue shared)
    {
        synchronized (lock)
        {
            final Integer entries = reservations.remove(shared);
            if (entries != null)
            {
                reserved -= entries;
            }
            routes.values().removeIf(s -> s == shared);
        }
    }

    /** @return entries reserved (for tests and diagnostics). */
    int reserved()
    {
        synchronized (lock)
        {
            return reserved;
        }
    }

    /** @return whether the event pump was started (for tests and diagnostics). */
    boolean pumpStarted()
    {
        synchronized (lock)
        {
            return pump != null;
        }
    }

    IOException failure()
    {
        return failure;
    }

    /**
     * Moves every completion of the native CQ into the software queue of the shared CQ its QP number routes to.
     * Allocation-free on the success path. Completions of a QP with no route (destroyed, its CQ closed) are dropped.
     */
    void drain()
    {
        IOException broken = null;
        List<DisniSharedCompletionQueue> overflowed = null;
        synchronized (lock)
        {
            if (!open || failure != null)
            {
                return;
            }
            // Bounded: at most what the CQ can hold, then the caller's next poll continues.
            for (int rounds = capacity / BATCH + 1; rounds > 0; rounds--)
            {
                final int polled;
                try
                {
                    polled = pollCall.execute().getPolls();
                }
                catch (final IOException ex)
                {
                    broken = ex;
                    break;
                }
                if (polled < 0)
                {
                    broken = new IOException("ibv_poll_cq returned " + polled);
                    break;
                }
                WorkRequestTranslator.toCompletions(wcs, polled, batch, 0);
                for (int i = 0; i < polled; i++)
                {
                    final boolean ok = batch.status(i) == WcStatus.SUCCESS;
                    final int qpNum = ok ? batch.qpNum(i) : rawWcs.getInt(i * IbvWC.CSIZE + WC_QP_NUM_OFFSET);
                    if (!ok)
                    {
                        final DisniCompletionQueue.Member member = members.get(qpNum);
                        if (member != null)
                        {
                            member.markError();
                        }
                    }
                    final DisniSharedCompletionQueue target = routes.get(qpNum);
                    if (target == null)
                    {
                        dropped++;
                    }
                    else if (!target.offer(batch, i, qpNum))
                    {
                        if (overflowed == null)
                        {
                            overflowed = new ArrayList<>();
                        }
                        overflowed.add(target);
                    }
                }
                if (polled < BATCH)
                {
                    break;
                }
            }
        }
        if (overflowed != null)
        {
            for (final DisniSharedCompletionQueue target : overflowed)
            {
                target.overflow();
            }
        }
        if (broken != null)
        {
            fail("ibv_poll_cq", broken);
        }
    }

    /**
     * Arms the native CQ and starts the pump. For solicited completions only when no CQ on it asked for any since the
     * last event (ibverbs: arming for any completion after a solicited-only arming widens it), so a shared CQ's
     * solicited-only arming may see extra events, never fewer: an event only means "poll".
     *
     * @param solicitedOnly what the caller asked for.
     */
    void arm(final boolean solicitedOnly)
    {
        final IOException broken;
        synchronized (lock)
        {
            if (!open || failure != null)
            {
                return;
            }
            if (pump == null)
            {
                pumpRunning = true;
                pump = new Thread(this::pumpEvents, context.name() + "-cq-events");
                pump.setDaemon(true);
                pump.start();
            }
            try
            {
                if (!solicitedOnly)
                {
                    armedAny = true;
                    notifyAny.execute();
                }
                else if (!armedAny)
                {
                    notifySolicited.execute();
                }
                return;
            }
            catch (final IOException ex)
            {
                broken = ex;
            }
        }
        fail("ibv_req_notify_cq", broken);
    }

    private void disarmed()
    {
        synchronized (lock)
        {
            armedAny = false;
        }
    }

    private void pumpEvents()
    {
        try
        {
            while (isOpen())
            {
                try
                {
                    // Native wait with a timeout: it cannot be interrupted, so the stop flag is checked per slice.
                    if (compChannel.getCqEvent(cq, PUMP_POLL_MS))
                    {
                        // This channel serves this CQ only: the event is this CQ's, acknowledged on it at once.
                        cq.ackEvents(1);
                        disarmed();
                        channel.signal(1);
                    }
                }
                catch (final IOException | RuntimeException ex)
                {
                    if (isOpen())
                    {
                        fail("ibv_get_cq_event", ex);
                        channel.signal(0);
                        channel.wakeup();
                    }
                    return;
                }
            }
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
                destroyNative();
            }
        }
    }

    private boolean isOpen()
    {
        synchronized (lock)
        {
            return open;
        }
    }

    /**
     * The native CQ broke: once, log it with its cause and take down every QP on it, and every shared CQ routed here.
     *
     * @param call  the verb that failed.
     * @param cause its error.
     */
    void fail(final String call, final Exception cause)
    {
        final IOException failed = new IOException(call + " failed on " + context.name() + "'s shared " +
            (send ? "send" : "receive") + " CQ of " + capacity + " entries: " + cause.getMessage() +
            "; the CQ is broken and its connections are closed", cause);
        final List<DisniCompletionQueue.Member> qps;
        synchronized (lock)
        {
            if (failure != null || !open)
            {
                return;
            }
            failure = failed;
            qps = new ArrayList<>(members.values());
        }
        LOG.warn("{} ({} queue pair(s))", failed.getMessage(), qps.size());
        for (final DisniCompletionQueue.Member qp : qps)
        {
            qp.fail(failed);
        }
    }

    /** Destroys the native CQ and channel, now or (while the pump is in its native wait) when the pump leaves it. */
    void close()
    {
        final boolean destroyHere;
        synchronized (lock)
        {
            if (!open)
            {
                return;
            }
            open = false;
            if (dropped > 0)
            {
                LOG.debug("{}: {} completion(s) of QPs already gone were dropped", context.name(), dropped);
            }
            pollCall.free();
            notifyAny.free();
            notifySolicited.free();
            destroyHere = !pumpRunning;
        }
        if (destroyHere)
        {
            destroyNative();
        }
    }

    private void destroyNative()
    {
        DisniVerbsContext.quietly(cq::destroyCQ);
        DisniVerbsContext.quietly(compChannel::destroyCompChannel);
        destroyed.countDown();
    }

    /**
     * @param timeoutMillis maximum wait.
     * @return true once the native CQ is destroyed.
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

    private static Field rawWcField()
    {
        try
        {
            final Field field = NatPollCqCall.class.getDeclaredField("cmd");
            field.setAccessible(true);
            return field.getType() == MemBuf.class ? field : null;
        }
        catch (final ReflectiveOperationException | RuntimeException | LinkageError ex)
        {
            return null;
        }
    }

    private static ByteBuffer rawBuffer(final SVCPollCq call)
    {
        if (RAW_WC == null || !(call instanceof NatPollCqCall))
        {
            return null;
        }
        try
        {
            final MemBuf memBuf = (MemBuf)RAW_WC.get(call);
            return memBuf == null ? null : memBuf.getBuffer();
        }
        catch (final ReflectiveOperationException | RuntimeException ex)
        {
            return null;
        }
    }

    @Override
    public String toString()
    {
        return "DisniCqShare{" + (send ? "send" : "recv") + ", capacity=" + capacity + ", open=" + open + '}';
    }
}
