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
 * <p>A work request executes when it is posted, in the poster's thread, so delivery is in order per QP. A
 * message that needs a receive at a peer with none posted is RNR-NAKed: with RNR retry 0 it fails at once
 * ({@code IBV_WC_RNR_RETRY_EXC_ERR}, QP to ERROR); otherwise it waits, with everything posted after it, until
 * the peer posts a receive or the retry budget ({@code count} x 655 ms; 7 = forever) runs out. Errors follow
 * the verbs specification: an error completion is generated even for an unsignaled request, the QP enters ERROR
 * and every other outstanding request (send and receive) completes with {@code IBV_WC_WR_FLUSH_ERR}.
 */
final class QpEngine
{
    private static final int EXECUTED = 0;
    private static final int STALLED = 1;

    private final EmulatedFabric fabric;

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
            long wr = firstWr;
            while (wr != 0)
            {
                final int numSge = UnsafeApi.getInt(wr + VerbsLayout.SEND_WR_NUM_SGE);
                final int opcode = UnsafeApi.getInt(wr + VerbsLayout.SEND_WR_OPCODE);
                final int flags = UnsafeApi.getInt(wr + VerbsLayout.SEND_WR_SEND_FLAGS);
                if (qp.state == QpState.RESET || qp.state == QpState.INIT || qp.state == QpState.RTR ||
                    numSge < 0 || numSge > VerbsLayout.MAX_SGE || opcode < VerbsLayout.WR_RDMA_WRITE ||
                    opcode > VerbsLayout.WR_RDMA_READ)
                {
                    return VerbsLayout.EINVAL;
                }
                if (qp.sqUsed >= qp.maxSendWr)
                {
                    return VerbsLayout.ENOMEM;
                }
                final long sgList = UnsafeApi.getLong(wr + VerbsLayout.SEND_WR_SG_LIST);
                final long[] addrs = new long[numSge];
                final int[] lengths = new int[numSge];
                final int[] lkeys = new int[numSge];
                readSges(sgList, addrs, lengths, lkeys);
                final SendWr send = new SendWr(UnsafeApi.getLong(wr + VerbsLayout.SEND_WR_ID), opcode, flags,
                    UnsafeApi.getInt(wr + VerbsLayout.SEND_WR_IMM_DATA), UnsafeApi.getLong(wr + VerbsLayout.SEND_WR_REMOTE_ADDR),
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
                if (qp.state == QpState.ERROR)
                {
                    complete(qp.sendCq, flush(qp, send));
                }
                else if (!qp.stalled.isEmpty() || execute(qp, send) == STALLED)
                {
                    stall(qp, send);
                }
                wr = UnsafeApi.getLong(wr + VerbsLayout.SEND_WR_NEXT);
            }
            return 0;
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
                final RecvWr recv = new RecvWr(UnsafeApi.getLong(wr + VerbsLayout.RECV_WR_ID), addrs, lengths, lkeys);
                qp.rqUsed++;
                if (qp.state == QpState.ERROR)
                {
                    complete(qp.recvCq, new Wc(recv.wrId, VerbsLayout.WC_WR_FLUSH_ERR, VerbsLayout.WC_OP_RECV, 0, 0, 0,
                        qp, 0, false, 0, true));
                }
                else
                {
                    qp.recvQueue.add(recv);
                }
                wr = UnsafeApi.getLong(wr + VerbsLayout.RECV_WR_NEXT);
            }
            // A sender waiting on RNR retries now.
            for (final Qp sender : sendersTo(qp))
            {
                resume(sender);
            }
            return 0;
        }
    }

    private static List<Qp> sendersTo(final Qp qp)
    {
        final List<Qp> senders = new ArrayList<>(1);
        final Qp remote = qp.remote;
        if (remote != null && remote.remote == qp && !remote.stalled.isEmpty())
        {
            senders.add(remote);
        }
        return senders;
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
    // Execution
    // ---------------------------------------------------------------------------------------------------------

    private void stall(final Qp qp, final SendWr send)
    {
        final boolean first = qp.stalled.isEmpty();
        qp.stalled.add(send);
        if (first && qp.stalled.peek() == send)
        {
            if (qp.rnrRetry == 0)
            {
                qp.stalled.poll();
                fail(qp, send, VerbsLayout.WC_RNR_RETRY_EXC_ERR);
            }
            else if (qp.rnrRetry < EmulatedFabric.INFINITE_RNR_RETRY)
            {
                fabric.timer.schedule(() -> rnrExpired(qp, send), (long)qp.rnrRetry * EmulatedFabric.RNR_TIMER_MS,
                    TimeUnit.MILLISECONDS);
            }
        }
    }

    private void rnrExpired(final Qp qp, final SendWr send)
    {
        synchronized (fabric.lock)
        {
            if (qp.stalled.peek() == send && !qp.destroyed)
            {
                qp.stalled.poll();
                fail(qp, send, VerbsLayout.WC_RNR_RETRY_EXC_ERR);
            }
        }
    }

    private void resume(final Qp qp)
    {
        while (!qp.stalled.isEmpty() && qp.state == QpState.RTS)
        {
            final SendWr send = qp.stalled.peek();
            if (execute(qp, send) == STALLED)
            {
                return;
            }
            qp.stalled.poll();
            if (qp.stalled.peek() != null && qp.rnrRetry > 0 && qp.rnrRetry < EmulatedFabric.INFINITE_RNR_RETRY)
            {
                final SendWr next = qp.stalled.peek();
                fabric.timer.schedule(() -> rnrExpired(qp, next), (long)qp.rnrRetry * EmulatedFabric.RNR_TIMER_MS,
                    TimeUnit.MILLISECONDS);
            }
        }
    }

    private int execute(final Qp qp, final SendWr send)
    {
        final long length = send.length();
        final boolean read = send.opcode == VerbsLayout.WR_RDMA_READ;
        if (send.inlineCopy == 0 && !localOk(qp.pd, send.addrs, send.lengths, send.lkeys, read))
        {
            fail(qp, send, VerbsLayout.WC_LOC_PROT_ERR);
            return EXECUTED;
        }
        final Qp remote = qp.remote;
        if (remote == null || remote.destroyed || (remote.state != QpState.RTR && remote.state != QpState.RTS))
        {
            // Nobody answers: the transport retries run out.
            fail(qp, send, VerbsLayout.WC_RETRY_EXC_ERR);
            return EXECUTED;
        }
        final boolean consumesReceive = send.opcode != VerbsLayout.WR_RDMA_WRITE && !read;
        if (consumesReceive && remote.recvQueue.isEmpty())
        {
            return STALLED;
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
                return EXECUTED;
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
                    return EXECUTED;
                }
                if (recv.capacity() < length)
                {
                    remote.recvQueue.poll();
                    complete(remote.recvCq, recvError(remote, recv, VerbsLayout.WC_LOC_LEN_ERR));
                    toError(remote);
                    fail(qp, send, VerbsLayout.WC_REM_INV_REQ_ERR);
                    return EXECUTED;
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
        qp.unretired++;
        if (send.signaled())
        {
            final int opcode = read ? VerbsLayout.WC_OP_RDMA_READ : send.opcode == VerbsLayout.WR_RDMA_WRITE ||
                send.opcode == VerbsLayout.WR_RDMA_WRITE_WITH_IMM ? VerbsLayout.WC_OP_RDMA_WRITE : VerbsLayout.WC_OP_SEND;
            final Wc wc = new Wc(send.wrId, VerbsLayout.WC_SUCCESS, opcode, read ? (int)length : 0, 0, 0, qp, 0, false,
                qp.unretired, false);
            qp.unretired = 0;
            complete(qp.sendCq, wc);
        }
        return EXECUTED;
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

    /** A request fails: its error completion (signaled or not), then the QP enters ERROR and flushes the rest. */
    private void fail(final Qp qp, final SendWr send, final int status)
    {
        freeInline(send);
        qp.unretired++;
        final Wc wc = new Wc(send.wrId, status, 0, 0, 0, 0, qp, 0, false, qp.unretired, false);
        qp.unretired = 0;
        complete(qp.sendCq, wc);
        toError(qp);
    }

    /** Moves a QP to ERROR: every outstanding send and receive completes with a flush error. */
    void toError(final Qp qp)
    {
        if (qp.state == QpState.ERROR || qp.destroyed)
        {
            return;
        }
        qp.state = QpState.ERROR;
        SendWr send;
        while ((send = qp.stalled.poll()) != null)
        {
            complete(qp.sendCq, flush(qp, send));
        }
        RecvWr recv;
        while ((recv = qp.recvQueue.poll()) != null)
        {
            complete(qp.recvCq, recvError(qp, recv, VerbsLayout.WC_WR_FLUSH_ERR));
        }
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
            UnsafeApi.setMemory(at, VerbsLayout.WC_SIZE, (byte)0);
            UnsafeApi.putLong(at + VerbsLayout.WC_WR_ID, wc.wrId);
            UnsafeApi.putInt(at + VerbsLayout.WC_STATUS, wc.status);
            UnsafeApi.putInt(at + VerbsLayout.WC_OPCODE, wc.opcode);
            UnsafeApi.putInt(at + VerbsLayout.WC_BYTE_LEN, wc.byteLen);
            UnsafeApi.putInt(at + VerbsLayout.WC_IMM_DATA, wc.imm);
            UnsafeApi.putInt(at + VerbsLayout.WC_QP_NUM, wc.qpNum);
            UnsafeApi.putInt(at + VerbsLayout.WC_SRC_QP, wc.srcQp);
            UnsafeApi.putInt(at + VerbsLayout.WC_FLAGS, wc.flags);
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
