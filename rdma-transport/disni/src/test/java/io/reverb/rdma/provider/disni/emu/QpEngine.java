package io.reverb.rdma.provider.disni.emu;

import io.reverb.rdma.provider.disni.emu.EmuObjects.Cq;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Mr;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Pd;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Qp;
import io.reverb.rdma.provider.disni.emu.EmuObjects.QpState;
import io.reverb.rdma.provider.disni.emu.EmuObjects.RecvWr;
import io.reverb.rdma.provider.disni.emu.EmuObjects.SendWr;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Wc;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.agrona.UnsafeApi;

/**
 * The data path of the emulated RC queue pairs: posting (reading DiSNi's {@code ibv_send_wr}/{@code ibv_recv_wr}
 * chains from native memory), execution, completions, CQ notification and the error state.
 *
 * <p>Time is modelled as a NIC has it ({@link NicClock}): posting only queues a request (its gather list is read
 * then, its data is not) and rings a doorbell; the NIC executes the queue in order after
 * {@value #EXEC_DELAY_PROP} µs, reading the source buffers and placing the data at that moment, and the receiver's
 * completion is generated then. The requester's completion comes later, when the ACK comes back
 * ({@value #EXEC_DELAY_PROP} µs again): the two sides complete independently, and a buffer reused before its
 * completion is caught. A message that needs a receive at a peer with none posted is RNR-NAKed and retried after
 * the RNR timer ({@value EmulatedFabric#RNR_TIMER_MS} ms, the encoding rdma_cm leaves in min_rnr_timer), even if a
 * receive is posted meanwhile; after {@code rnr_retry} retries (7: forever) it fails with
 * {@code IBV_WC_RNR_RETRY_EXC_ERR}. A request nobody answers (peer QP gone, in ERROR or not yet RTR) is retried
 * every local ACK timeout ({@value #ACK_TIMEOUT_PROP}, default {@value #DEFAULT_ACK_TIMEOUT_MS} ms: RoCE's
 * packet lifetime 16 + 1, 4.096 µs x 2^17) and fails with {@code IBV_WC_RETRY_EXC_ERR} after {@code retry_count}
 * retries. Errors follow the verbs specification: an error completion is generated even for an unsignaled
 * request, the QP enters ERROR and every other outstanding request (send, unsignaled included, and receive)
 * completes with {@code IBV_WC_WR_FLUSH_ERR}.
 */
final class QpEngine
{
    /**
     * System property: µs from a doorbell to execution, and from execution to the ACK. Default 0: as soon as the NIC
     * thread gets to it, which is still after the post returned (a timed wait costs a 2-core machine ~60 µs a hop).
     */
    static final String EXEC_DELAY_PROP = "reverb.disni.emulated.execDelayUs";
    static final long DEFAULT_EXEC_DELAY_US = 0;
    /** System property: the local ACK timeout in ms (before {@link NicClock}'s time scale). */
    static final String ACK_TIMEOUT_PROP = "reverb.disni.emulated.ackTimeoutMs";
    static final int DEFAULT_ACK_TIMEOUT_MS = 537;

    private enum Outcome
    {
        /** Executed: the data is placed, the receiver's completion generated; the ACK is on its way. */
        EXECUTED,
        /** Failed: the QP is in ERROR. */
        FAILED,
        /** RNR NAK: no receive posted at the peer. */
        RNR,
        /** No answer: the peer's QP is gone or cannot receive. */
        NO_ANSWER
    }

    private final EmulatedFabric fabric;
    /** Fault injection: extra delay of the ACKs that come back to the QPs of accepted (passive) ids. */
    volatile long acceptedSideAckDelayNanos;
    /** Fault injection: extra delay of the ACKs that come back to the QPs of connecting (active) ids. */
    volatile long connectingSideAckDelayNanos;
    final long execDelayNanos = TimeUnit.MICROSECONDS.toNanos(Long.getLong(EXEC_DELAY_PROP, DEFAULT_EXEC_DELAY_US));
    final long ackTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(Long.getLong(ACK_TIMEOUT_PROP, DEFAULT_ACK_TIMEOUT_MS));

    QpEngine(final EmulatedFabric fabric)
    {
        this.fabric = fabric;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Posting
    // ---------------------------------------------------------------------------------------------------------

    /** {@code ibv_post_send}: returns 0, or the errno of the first bad request (those before it are posted). */
    int postSend(final long qpHandle, final long firstWr) throws IOException
    {
        synchronized (fabric.lock)
        {
            final Qp qp = fabric.get(qpHandle, Qp.class, "ibv_post_send");
            try
            {
                long wr = firstWr;
                while (wr != 0)
                {
                    final int numSge = UnsafeApi.getInt(wr + VerbsLayout.SEND_WR_NUM_SGE);
                    final int opcode = UnsafeApi.getInt(wr + VerbsLayout.SEND_WR_OPCODE);
                    final int flags = UnsafeApi.getInt(wr + VerbsLayout.SEND_WR_SEND_FLAGS);
                    if (numSge < 0 || numSge > VerbsLayout.MAX_SGE || opcode < VerbsLayout.WR_RDMA_WRITE ||
                        opcode > VerbsLayout.WR_RDMA_READ)
                    {
                        return VerbsLayout.EINVAL;
                    }
                    if (qp.state == QpState.RESET || qp.state == QpState.INIT || qp.state == QpState.RTR ||
                        qp.sqUsed >= qp.maxSendWr)
                    {
                        // mlx5 sizes the send queue only when the QP reaches RTS: before that it is "full".
                        return VerbsLayout.ENOMEM;
                    }
                    final long sgList = UnsafeApi.getLong(wr + VerbsLayout.SEND_WR_SG_LIST);
                    final long[] addrs = new long[numSge];
                    final int[] lengths = new int[numSge];
                    final int[] lkeys = new int[numSge];
                    readSges(sgList, addrs, lengths, lkeys);
                    final SendWr send = new SendWr(UnsafeApi.getLong(wr + VerbsLayout.SEND_WR_ID), opcode, flags,
                        UnsafeApi.getInt(wr + VerbsLayout.SEND_WR_IMM_DATA),
                        UnsafeApi.getLong(wr + VerbsLayout.SEND_WR_REMOTE_ADDR),
                        UnsafeApi.getInt(wr + VerbsLayout.SEND_WR_RKEY), addrs, lengths, lkeys);
                    if ((flags & VerbsLayout.SEND_INLINE) != 0)
                    {
                        final long length = send.length();
                        if (length > qp.maxInline || opcode == VerbsLayout.WR_RDMA_READ)
                        {
                            return VerbsLayout.EINVAL;
                        }
                        // Inline data is copied into the WQE at post time: the buffer (and its key) no longer matter.
                        send.inlineCopy = UnsafeApi.allocateMemory(Math.max(1, length));
                        long offset = 0;
                        for (int i = 0; i < numSge; i++)
                        {
                            UnsafeApi.copyMemory(addrs[i], send.inlineCopy + offset, Integer.toUnsignedLong(lengths[i]));
                            offset += Integer.toUnsignedLong(lengths[i]);
                        }
                    }
                    qp.sqUsed++;
                    qp.sendQueue.add(send);
                    wr = UnsafeApi.getLong(wr + VerbsLayout.SEND_WR_NEXT);
                }
                return 0;
            }
            finally
            {
                ringDoorbell(qp);
            }
        }
    }

    /** {@code ibv_post_recv}. */
    int postRecv(final long qpHandle, final long firstWr) throws IOException
    {
        synchronized (fabric.lock)
        {
            final Qp qp = fabric.get(qpHandle, Qp.class, "ibv_post_recv");
            long wr = firstWr;
            while (wr != 0)
            {
                final int numSge = UnsafeApi.getInt(wr + VerbsLayout.RECV_WR_NUM_SGE);
                if (qp.state == QpState.RESET || numSge < 0 || numSge > VerbsLayout.MAX_SGE)
                {
                    return VerbsLayout.EINVAL;
                }
                if (qp.rqUsed >= qp.maxRecvWr)
                {
                    return VerbsLayout.ENOMEM;
                }
                final long[] addrs = new long[numSge];
                final int[] lengths = new int[numSge];
                final int[] lkeys = new int[numSge];
                readSges(UnsafeApi.getLong(wr + VerbsLayout.RECV_WR_SG_LIST), addrs, lengths, lkeys);
                qp.rqUsed++;
                qp.recvQueue.add(new RecvWr(UnsafeApi.getLong(wr + VerbsLayout.RECV_WR_ID), addrs, lengths, lkeys));
                wr = UnsafeApi.getLong(wr + VerbsLayout.RECV_WR_NEXT);
            }
            if (qp.state == QpState.ERROR)
            {
                // The NIC flushes what is posted to a QP in ERROR, in its own time.
                scheduleFlush(qp);
            }
            return 0;
        }
    }

    private static void readSges(final long sgList, final long[] addrs, final int[] lengths, final int[] lkeys)
    {
        for (int i = 0; i < addrs.length; i++)
        {
            final long sge = sgList + (long)i * VerbsLayout.SGE_SIZE;
            addrs[i] = UnsafeApi.getLong(sge + VerbsLayout.SGE_ADDR);
            lengths[i] = UnsafeApi.getInt(sge + VerbsLayout.SGE_LENGTH);
            lkeys[i] = UnsafeApi.getInt(sge + VerbsLayout.SGE_LKEY);
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // Execution (on the NIC's time, under the fabric lock)
    // ---------------------------------------------------------------------------------------------------------

    /** Caller holds the fabric lock. */
    private void ringDoorbell(final Qp qp)
    {
        if (qp.state == QpState.ERROR)
        {
            scheduleFlush(qp);
            return;
        }
        if (!qp.doorbell && !qp.sendQueue.isEmpty())
        {
            qp.doorbell = true;
            fabric.nic.schedule(execDelayNanos, () -> doorbell(qp));
        }
    }

    private void doorbell(final Qp qp)
    {
        synchronized (fabric.lock)
        {
            qp.doorbell = false;
            progress(qp);
        }
    }

    /** Executes the send queue in order until it is empty or its head must wait (RNR, no answer). */
    private void progress(final Qp qp)
    {
        // A vanished host's NIC executes nothing: its requests stay queued.
        while (!qp.destroyed && !qp.id.vanished && qp.state == QpState.RTS && qp.waiting == null &&
            !qp.sendQueue.isEmpty())
        {
            final SendWr send = qp.sendQueue.peek();
            final Outcome outcome = execute(qp, send);
            if (outcome == Outcome.FAILED)
            {
                return;
            }
            if (outcome == Outcome.EXECUTED)
            {
                qp.sendQueue.poll();
                qp.rnrSpent = 0;
                qp.retrySpent = 0;
                qp.unacked.add(send);
                fabric.nic.schedule(execDelayNanos + (qp.id.listener != null ? acceptedSideAckDelayNanos :
                    connectingSideAckDelayNanos), () -> ack(qp, send));
                continue;
            }
            final Object token = new Object();
            if (outcome == Outcome.RNR)
            {
                if (qp.rnrRetry < EmulatedFabric.INFINITE_RNR_RETRY && qp.rnrSpent >= qp.rnrRetry)
                {
                    fail(qp, send, VerbsLayout.WC_RNR_RETRY_EXC_ERR);
                    return;
                }
                qp.waiting = token;
                fabric.nic.schedule(TimeUnit.MILLISECONDS.toNanos(EmulatedFabric.RNR_TIMER_MS), () ->
                {
                    synchronized (fabric.lock)
                    {
                        if (qp.waiting == token)
                        {
                            qp.waiting = null;
                            if (qp.rnrRetry < EmulatedFabric.INFINITE_RNR_RETRY)
                            {
                                qp.rnrSpent++;
                            }
                            progress(qp);
                        }
                    }
                });
                return;
            }
            // No answer: the request is sent again when the local ACK timer expires, at most retry_count times.
            qp.waiting = token;
            fabric.nic.schedule(ackTimeoutNanos, () ->
            {
                synchronized (fabric.lock)
                {
                    if (qp.waiting == token)
                    {
                        qp.waiting = null;
                        if (++qp.retrySpent > qp.retry)
                        {
                            fail(qp, qp.sendQueue.peek(), VerbsLayout.WC_RETRY_EXC_ERR);
                            return;
                        }
                        progress(qp);
                    }
                }
            });
            return;
        }
    }

    /** The ACK of an executed request comes back: it covers every request before it too (their completions). */
    private void ack(final Qp qp, final SendWr send)
    {
        synchronized (fabric.lock)
        {
            if (qp.destroyed || qp.state == QpState.ERROR || !qp.unacked.contains(send))
            {
                // Flushed (or destroyed, or covered by a later ACK) meanwhile.
                return;
            }
            SendWr acked;
            do
            {
                acked = qp.unacked.poll();
                retire(qp, acked);
            }
            while (acked != send);
        }
    }

    private void retire(final Qp qp, final SendWr send)
    {
        qp.unretired++;
        if (send.signaled())
        {
            final boolean read = send.opcode == VerbsLayout.WR_RDMA_READ;
            final int opcode = read ? VerbsLayout.WC_OP_RDMA_READ : send.opcode == VerbsLayout.WR_RDMA_WRITE ||
                send.opcode == VerbsLayout.WR_RDMA_WRITE_WITH_IMM ? VerbsLayout.WC_OP_RDMA_WRITE : VerbsLayout.WC_OP_SEND;
            // mlx5 flags the requester's completion of *_WITH_IMM with IBV_WC_WITH_IMM too.
            final boolean withImm = send.opcode == VerbsLayout.WR_RDMA_WRITE_WITH_IMM ||
                send.opcode == VerbsLayout.WR_SEND_WITH_IMM;
            final Wc wc = new Wc(send.wrId, VerbsLayout.WC_SUCCESS, opcode, read ? (int)send.length() : 0, 0,
                withImm ? VerbsLayout.WC_WITH_IMM : 0, qp, 0, false, qp.unretired, false);
            qp.unretired = 0;
            complete(qp.sendCq, wc);
        }
    }

    private Outcome execute(final Qp qp, final SendWr send)
    {
        final long length = send.length();
        final boolean read = send.opcode == VerbsLayout.WR_RDMA_READ;
        if (send.inlineCopy == 0 && !localOk(qp.pd, send.addrs, send.lengths, send.lkeys, read))
        {
            fail(qp, send, VerbsLayout.WC_LOC_PROT_ERR);
            return Outcome.FAILED;
        }
        final Qp remote = qp.remote;
        if (remote == null || remote.destroyed || remote.remote != qp || remote.id.vanished ||
            (remote.state != QpState.RTR && remote.state != QpState.RTS))
        {
            // Nobody answers (a QP in INIT or ERROR drops the packet).
            return Outcome.NO_ANSWER;
        }
        final boolean consumesReceive = send.opcode != VerbsLayout.WR_RDMA_WRITE && !read;
        if (consumesReceive && remote.recvQueue.isEmpty())
        {
            return Outcome.RNR;
        }
        // A zero-length RDMA operation touches no memory: the responder does not validate its R_Key (IBA 9.7.4.1).
        if ((send.opcode == VerbsLayout.WR_RDMA_WRITE || send.opcode == VerbsLayout.WR_RDMA_WRITE_WITH_IMM || read) &&
            length > 0)
        {
            final Mr target = remote.pd.device.mrs.get(send.rkey);
            final int needed = read ? VerbsLayout.ACCESS_REMOTE_READ : VerbsLayout.ACCESS_REMOTE_WRITE;
            if (target == null || target.pd != remote.pd || (target.access & needed) == 0 ||
                !target.contains(send.remoteAddr, length))
            {
                fail(qp, send, VerbsLayout.WC_REM_ACCESS_ERR);
                toError(remote);
                return Outcome.FAILED;
            }
            if (read)
            {
                scatter(send.remoteAddr, length, send.addrs, send.lengths);
            }
            else
            {
                gather(send, send.remoteAddr);
            }
        }
        if (consumesReceive)
        {
            final RecvWr recv = remote.recvQueue.peek();
            final boolean write = send.opcode == VerbsLayout.WR_RDMA_WRITE_WITH_IMM;
            if (!write)
            {
                if (!localOk(remote.pd, recv.addrs, recv.lengths, recv.lkeys, true))
                {
                    remote.recvQueue.poll();
                    complete(remote.recvCq, recvError(remote, recv, VerbsLayout.WC_LOC_PROT_ERR));
                    toError(remote);
                    fail(qp, send, VerbsLayout.WC_REM_OP_ERR);
                    return Outcome.FAILED;
                }
                if (recv.capacity() < length)
                {
                    remote.recvQueue.poll();
                    complete(remote.recvCq, recvError(remote, recv, VerbsLayout.WC_LOC_LEN_ERR));
                    toError(remote);
                    fail(qp, send, VerbsLayout.WC_REM_INV_REQ_ERR);
                    return Outcome.FAILED;
                }
                copySendToReceive(send, recv);
            }
            remote.recvQueue.poll();
            final boolean withImm = send.opcode != VerbsLayout.WR_SEND;
            complete(remote.recvCq, new Wc(recv.wrId, VerbsLayout.WC_SUCCESS,
                write ? VerbsLayout.WC_OP_RECV_RDMA_WITH_IMM : VerbsLayout.WC_OP_RECV, (int)length,
                withImm ? send.imm : 0, withImm ? VerbsLayout.WC_WITH_IMM : 0, remote, qp.qpn,
                (send.flags & VerbsLayout.SEND_SOLICITED) != 0, 0, true));
        }
        freeInline(send);
        return Outcome.EXECUTED;
    }

    private static boolean localOk(final Pd pd, final long[] addrs, final int[] lengths, final int[] lkeys,
        final boolean written)
    {
        for (int i = 0; i < addrs.length; i++)
        {
            final Mr mr = pd.device.mrs.get(lkeys[i]);
            if (mr == null || mr.pd != pd || !mr.contains(addrs[i], Integer.toUnsignedLong(lengths[i])) ||
                (written && (mr.access & VerbsLayout.ACCESS_LOCAL_WRITE) == 0))
            {
                return false;
            }
        }
        return true;
    }

    /** Copies the request's data (its inline copy or its gather list) to {@code destination}. */
    private static void gather(final SendWr send, final long destination)
    {
        if (send.inlineCopy != 0)
        {
            UnsafeApi.copyMemory(send.inlineCopy, destination, send.length());
            return;
        }
        long offset = 0;
        for (int i = 0; i < send.addrs.length; i++)
        {
            final long length = Integer.toUnsignedLong(send.lengths[i]);
            UnsafeApi.copyMemory(send.addrs[i], destination + offset, length);
            offset += length;
        }
    }

    /** Copies {@code length} bytes at {@code source} over a scatter list. */
    private static void scatter(final long source, final long length, final long[] addrs, final int[] lengths)
    {
        long done = 0;
        for (int i = 0; i < addrs.length && done < length; i++)
        {
            final long chunk = Math.min(Integer.toUnsignedLong(lengths[i]), length - done);
            UnsafeApi.copyMemory(source + done, addrs[i], chunk);
            done += chunk;
        }
    }

    private static void copySendToReceive(final SendWr send, final RecvWr recv)
    {
        if (send.inlineCopy != 0)
        {
            scatter(send.inlineCopy, send.length(), recv.addrs, recv.lengths);
            return;
        }
        int target = 0;
        long targetOffset = 0;
        for (int i = 0; i < send.addrs.length; i++)
        {
            long remaining = Integer.toUnsignedLong(send.lengths[i]);
            long source = send.addrs[i];
            while (remaining > 0)
            {
                final long room = Integer.toUnsignedLong(recv.lengths[target]) - targetOffset;
                if (room == 0)
                {
                    target++;
                    targetOffset = 0;
                    continue;
                }
                final long chunk = Math.min(room, remaining);
                UnsafeApi.copyMemory(source, recv.addrs[target] + targetOffset, chunk);
                source += chunk;
                remaining -= chunk;
                targetOffset += chunk;
            }
        }
    }

    private static void freeInline(final SendWr send)
    {
        if (send.inlineCopy != 0)
        {
            UnsafeApi.freeMemory(send.inlineCopy);
            send.inlineCopy = 0;
        }
    }

    private static Wc recvError(final Qp qp, final RecvWr recv, final int status)
    {
        return new Wc(recv.wrId, status, VerbsLayout.WC_OP_RECV, 0, 0, 0, qp, 0, false, 0, true);
    }

    private Wc flush(final Qp qp, final SendWr send)
    {
        freeInline(send);
        qp.unretired++;
        final Wc wc = new Wc(send.wrId, VerbsLayout.WC_WR_FLUSH_ERR, 0, 0, 0, 0, qp, 0, false, qp.unretired, false);
        qp.unretired = 0;
        return wc;
    }

    /**
     * A request fails: the requests before it were ACKed (an ACK or NAK covers every earlier PSN), then its error
     * completion (signaled or not); the QP enters ERROR and flushes the rest at once.
     */
    private void fail(final Qp qp, final SendWr send, final int status)
    {
        SendWr acked;
        while ((acked = qp.unacked.poll()) != null)
        {
            retire(qp, acked);
        }
        qp.sendQueue.remove(send);
        freeInline(send);
        qp.unretired++;
        final Wc wc = new Wc(send.wrId, status, 0, 0, 0, 0, qp, 0, false, qp.unretired, false);
        qp.unretired = 0;
        complete(qp.sendCq, wc);
        if (qp.state != QpState.ERROR)
        {
            qp.state = QpState.ERROR;
            qp.waiting = null;
        }
        flushNow(qp);
    }

    /** Moves a QP to ERROR; the NIC then flushes every outstanding send and receive (in its own time). */
    void toError(final Qp qp)
    {
        if (qp.state == QpState.ERROR || qp.destroyed)
        {
            return;
        }
        qp.state = QpState.ERROR;
        qp.waiting = null;
        scheduleFlush(qp);
    }

    private void scheduleFlush(final Qp qp)
    {
        fabric.nic.schedule(execDelayNanos, () ->
        {
            synchronized (fabric.lock)
            {
                flushNow(qp);
            }
        });
    }

    /**
     * Completes every request of a QP in ERROR with a flush error: those executed but not ACKed, then those not
     * executed (unsignaled ones included: an error completion is always generated), then the receives.
     */
    private void flushNow(final Qp qp)
    {
        if (qp.destroyed || qp.state != QpState.ERROR)
        {
            return;
        }
        SendWr send;
        while ((send = qp.unacked.poll()) != null)
        {
            complete(qp.sendCq, flush(qp, send));
        }
        while ((send = qp.sendQueue.poll()) != null)
        {
            complete(qp.sendCq, flush(qp, send));
        }
        RecvWr recv;
        while ((recv = qp.recvQueue.poll()) != null)
        {
            complete(qp.recvCq, recvError(qp, recv, VerbsLayout.WC_WR_FLUSH_ERR));
        }
    }

    /** Frees what a destroyed QP still held (inline copies of requests never executed). */
    void discard(final Qp qp)
    {
        for (final SendWr send : qp.sendQueue)
        {
            freeInline(send);
        }
        qp.sendQueue.clear();
        qp.unacked.clear();
        qp.recvQueue.clear();
        qp.waiting = null;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Completion queues
    // ---------------------------------------------------------------------------------------------------------

    private void complete(final Cq cq, final Wc wc)
    {
        final List<Qp> victims;
        synchronized (cq)
        {
            if (cq.destroyed || cq.overflowed)
            {
                return;
            }
            if (cq.entries.size() >= cq.capacity)
            {
                // CQ overflow: an asynchronous IBV_EVENT_CQ_ERR; every QP on the CQ enters ERROR.
                cq.overflowed = true;
                victims = new ArrayList<>(cq.qps);
            }
            else
            {
                cq.entries.add(wc);
                if (cq.armed && (!cq.solicitedOnly || wc.solicited || wc.status != VerbsLayout.WC_SUCCESS))
                {
                    cq.armed = false;
                    cq.channel.events.add(cq);
                }
                return;
            }
        }
        for (final Qp victim : victims)
        {
            toError(victim);
        }
    }

    /** {@code ibv_poll_cq}: at most {@code max} completions written at {@code wcArray}; -1 after an overflow. */
    int poll(final long cqHandle, final int max, final long wcArray) throws IOException
    {
        final Cq cq = fabric.get(cqHandle, Cq.class, "ibv_poll_cq");
        fabric.nic.runDue();
        final List<Wc> polled = new ArrayList<>();
        synchronized (cq)
        {
            if (cq.overflowed)
            {
                return -1;
            }
            while (polled.size() < max && !cq.entries.isEmpty())
            {
                polled.add(cq.entries.poll());
            }
        }
        for (int i = 0; i < polled.size(); i++)
        {
            final Wc wc = polled.get(i);
            final long at = wcArray + (long)i * VerbsLayout.WC_SIZE;
            // Only what mlx5 writes for this kind of completion: the rest keeps what the previous poll left.
            UnsafeApi.putLong(at + VerbsLayout.WC_WR_ID, wc.wrId);
            UnsafeApi.putInt(at + VerbsLayout.WC_STATUS, wc.status);
            UnsafeApi.putInt(at + VerbsLayout.WC_QP_NUM, wc.qpNum);
            UnsafeApi.putInt(at + VerbsLayout.WC_FLAGS, wc.flags);
            if (wc.status != VerbsLayout.WC_SUCCESS)
            {
                UnsafeApi.putInt(at + VerbsLayout.WC_VENDOR_ERR, wc.status == VerbsLayout.WC_WR_FLUSH_ERR ? 0xf9 : 0x81);
            }
            else if (wc.rqRetire)
            {
                UnsafeApi.putInt(at + VerbsLayout.WC_OPCODE, wc.opcode);
                UnsafeApi.putInt(at + VerbsLayout.WC_BYTE_LEN, wc.byteLen);
                if ((wc.flags & VerbsLayout.WC_WITH_IMM) != 0)
                {
                    UnsafeApi.putInt(at + VerbsLayout.WC_IMM_DATA, wc.imm);
                }
                UnsafeApi.putInt(at + VerbsLayout.WC_SRC_QP, wc.srcQp);
                UnsafeApi.putShort(at + VerbsLayout.WC_SLID, (short)0);
                UnsafeApi.putByte(at + VerbsLayout.WC_SL, (byte)0);
                UnsafeApi.putByte(at + VerbsLayout.WC_DLID_PATH_BITS, (byte)0);
            }
            else
            {
                UnsafeApi.putInt(at + VerbsLayout.WC_OPCODE, wc.opcode);
                if (wc.opcode == VerbsLayout.WC_OP_RDMA_READ)
                {
                    UnsafeApi.putInt(at + VerbsLayout.WC_BYTE_LEN, wc.byteLen);
                }
            }
        }
        if (!polled.isEmpty())
        {
            synchronized (fabric.lock)
            {
                for (final Wc wc : polled)
                {
                    // Polling a completion frees its send-queue slots (mlx5 advances the queue's tail here).
                    wc.qp.sqUsed -= wc.sqRetire;
                    if (wc.rqRetire)
                    {
                        wc.qp.rqUsed--;
                    }
                }
            }
        }
        return polled.size();
    }

    /** {@code ibv_req_notify_cq}: the next completion added (only; not those already queued) fires an event. */
    int reqNotify(final long cqHandle, final boolean solicitedOnly) throws IOException
    {
        final Cq cq = fabric.get(cqHandle, Cq.class, "ibv_req_notify_cq");
        synchronized (cq)
        {
            cq.armed = true;
            cq.solicitedOnly = solicitedOnly;
        }
        return 0;
    }

    /** {@code ibv_get_cq_event} after a poll of the channel's fd: 0, or -1 when nothing came in time. */
    int getCqEvent(final long channelHandle, final int timeoutMs) throws IOException
    {
        final EmuObjects.CompChannel channel = fabric.get(channelHandle, EmuObjects.CompChannel.class, "ibv_get_cq_event");
        final Cq cq;
        try
        {
            cq = timeoutMs < 0 ? channel.events.take() : channel.events.poll(timeoutMs, TimeUnit.MILLISECONDS);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            return -1;
        }
        if (cq == null)
        {
            return -1;
        }
        synchronized (cq)
        {
            cq.unackedEvents++;
        }
        return 0;
    }

    int ackCqEvents(final long cqHandle, final int events)
    {
        final Cq cq = fabric.find(cqHandle, Cq.class);
        if (cq == null)
        {
            return -1;
        }
        synchronized (cq)
        {
            cq.unackedEvents = Math.max(0, cq.unackedEvents - events);
        }
        return 0;
    }
}
