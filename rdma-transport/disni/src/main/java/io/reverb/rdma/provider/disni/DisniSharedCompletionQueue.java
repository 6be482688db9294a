package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvCQ;
import io.reverb.rdma.provider.base.AbstractCompletionQueue;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The SPI's CQ for DiSNi when it has a completion channel (a poller's): not a native CQ of its own but a software
 * queue fed by the native CQs its channel shares between all its CQs, one per direction ({@link DisniCqShare}), so
 * that a poller with thousands of connections has a handful of native CQs, completion channels and event-pump
 * threads instead of two of each per connection (issue 24, part 2 item 2).
 *
 * <p>{@link #poll} first drains the native CQs it is bound to (demultiplexing every QP's completions into its own
 * CQ's queue), then returns what its queue holds. Completions a caller does not poll (a paused receiver) wait in the
 * queue, as they would in a native CQ of their own; the queue holds {@link #capacity()} entries, which the share
 * reserved, and overflowing it fails its QPs, as an overflowing native CQ would.
 *
 * <p>Arming: {@link #requestNotify} arms the native CQs it is bound to (see {@link DisniCqShare#arm}). A completion queued here before arming
 * raises no event, as in ibverbs; the caller's poll after arming finds it. An event on the channel therefore only
 * means "poll your CQs", which is what the engine's poller does (one SPI channel per poller). Polled by one thread at
 * a time; {@link #offer} is called by whichever thread drains the share, under the share's lock.
 */
final class DisniSharedCompletionQueue extends AbstractCompletionQueue<DisniVerbsContext, DisniCompletionChannel>
    implements DisniCq
{
    private final long[] wrIds;
    private final WcStatus[] statuses;
    private final WcOpcode[] opcodes;
    private final int[] byteLens;
    private final int[] immDatas;
    private final int[] flags;
    private final int[] qpNums;
    private final List<DisniCompletionQueue.Member> queuePairs = new ArrayList<>();
    /** Guarded by this: ring positions. */
    private long head;
    private long tail;
    private volatile DisniCqShare sendShare;
    private volatile DisniCqShare recvShare;
    private volatile IOException failure;
    private volatile boolean open = true;

    DisniSharedCompletionQueue(final DisniVerbsContext context, final int capacity, final DisniCompletionChannel channel)
    {
        super(context, capacity, channel);
        this.wrIds = new long[capacity];
        this.statuses = new WcStatus[capacity];
        this.opcodes = new WcOpcode[capacity];
        this.byteLens = new int[capacity];
        this.immDatas = new int[capacity];
        this.flags = new int[capacity];
        this.qpNums = new int[capacity];
    }

    @Override
    public IbvCQ nativeCq(final boolean send) throws IOException
    {
        if (!open)
        {
            throw new IOException("CQ is closed");
        }
        final DisniCqShare bound = send ? sendShare : recvShare;
        if (bound != null)
        {
            return bound.ibvCq();
        }
        final DisniCqShare share = channel.shareFor(context, this, send);
        if (send)
        {
            sendShare = share;
        }
        else
        {
            recvShare = share;
        }
        return share.ibvCq();
    }

    @Override
    public void attach(final DisniCompletionQueue.Member qp, final boolean send)
    {
        final DisniCqShare share = send ? sendShare : recvShare;
        if (share != null)
        {
            share.route(qp, this);
        }
        synchronized (queuePairs)
        {
            if (!queuePairs.contains(qp))
            {
                queuePairs.add(qp);
            }
        }
    }

    @Override
    public void detach(final DisniCompletionQueue.Member qp, final boolean send)
    {
        final DisniCqShare share = send ? sendShare : recvShare;
        if (share != null)
        {
            share.unroute(qp);
        }
        synchronized (queuePairs)
        {
            queuePairs.remove(qp);
        }
    }

    /**
     * Queues entry {@code i} of {@code batch}; the share's drain, under its lock.
     *
     * @return false if the queue is full (the CQ overflowed)
     */
    boolean offer(final WorkCompletions batch, final int i, final int qpNum)
    {
        synchronized (this)
        {
            if (!open)
            {
                return true;
            }
            if (tail - head >= capacity)
            {
                return false;
            }
            final int index = (int)(tail % capacity);
            wrIds[index] = batch.wrId(i);
            statuses[index] = batch.status(i);
            opcodes[index] = batch.opcode(i);
            byteLens[index] = batch.byteLen(i);
            immDatas[index] = batch.immData(i);
            flags[index] = batch.wcFlags(i);
            qpNums[index] = qpNum;
            tail++;
            return true;
        }
    }

    /** More completions came than this CQ holds: as with a native CQ, its QPs go down. */
    void overflow()
    {
        fail(new IOException("CQ overflow: more than " + capacity + " completions unpolled on " + context.name() +
            "; its connections are closed"));
    }

    private void fail(final IOException cause)
    {
        final List<DisniCompletionQueue.Member> qps;
        synchronized (queuePairs)
        {
            if (failure != null)
            {
                return;
            }
            failure = cause;
            qps = new ArrayList<>(queuePairs);
        }
        for (final DisniCompletionQueue.Member qp : qps)
        {
            qp.fail(cause);
        }
    }

    @Override
    public int poll(final WorkCompletions completions)
    {
        if (!open)
        {
            completions.count(0);
            return 0;
        }
        final DisniCqShare send = sendShare;
        final DisniCqShare recv = recvShare;
        if (send != null)
        {
            send.drain();
        }
        if (recv != null && recv != send)
        {
            recv.drain();
        }
        synchronized (this)
        {
            final int n = (int)Math.min(completions.capacity(), tail - head);
            for (int k = 0; k < n; k++)
            {
                final int index = (int)(head % capacity);
                completions.set(k, wrIds[index], statuses[index], opcodes[index], byteLens[index], immDatas[index],
                    flags[index], qpNums[index]);
                head++;
            }
            completions.count(n);
            return n;
        }
    }

    @Override
    public void requestNotify(final boolean solicitedOnly)
    {
        if (!open)
        {
            return;
        }
        final DisniCqShare send = sendShare;
        final DisniCqShare recv = recvShare;
        if (send != null)
        {
            send.arm(solicitedOnly);
        }
        if (recv != null && recv != send)
        {
            recv.arm(solicitedOnly);
        }
    }

    /** @return why this CQ or a native CQ under it broke, or null. */
    IOException failure()
    {
        final IOException own = failure;
        if (own != null)
        {
            return own;
        }
        final DisniCqShare send = sendShare;
        final DisniCqShare recv = recvShare;
        final IOException sendFailure = send == null ? null : send.failure();
        return sendFailure != null ? sendFailure : recv == null ? null : recv.failure();
    }

    @Override
    public void close()
    {
        synchronized (this)
        {
            if (!open)
            {
                return;
            }
            open = false;
            head = tail;
        }
        final DisniCqShare send = sendShare;
        final DisniCqShare recv = recvShare;
        if (send != null)
        {
            send.release(this);
        }
        if (recv != null)
        {
            recv.release(this);
        }
        context.untrack(this);
    }

    @Override
    public String toString()
    {
        return "DisniSharedCompletionQueue{capacity=" + capacity + ", open=" + open + '}';
    }
}
