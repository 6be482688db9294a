package io.reverb.rdma.provider.shm;

import io.reverb.common.LogLimiter;
import io.reverb.rdma.provider.base.RegionChecks;
import io.reverb.rdma.verbs.ScatterGatherList;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import org.agrona.UnsafeApi;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A QP's inbox as its receive CQ's poller reads it (inbox mode, {@link RecvRing}'s class comment): the published slots
 * in receive order, each checked field by field (the peer wrote them) and an inline message's bytes copied into the
 * posted receive it consumed; once the QP is down, the receives no sender consumed are flushed; once it is closed and
 * nothing is outstanding, the QP retires the inbox. The QP keeps its state (down, closed, the receive lock); this
 * object keeps what only the poller touches.
 */
final class InboxReader
{
    private static final Logger LOG = LoggerFactory.getLogger(InboxReader.class);
    /** Malformed slots: one line per QP at most, and through this limiter (a peer may reconnect to write more). */
    static final LogLimiter MALFORMED_LOG = new LogLimiter((line, t) -> LOG.warn(line, t));

    private final ShmQueuePair qp;
    private final RecvRing ring;
    private final ShmVerbsContext context;
    private final ShmProtectionDomain pd;
    private final int qpNum;
    /** The next receive whose slot is awaited. */
    private long next;
    private final ScatterGatherList receive = new ScatterGatherList();
    private final ShmMemoryRegion[] regions = new ShmMemoryRegion[ScatterGatherList.MAX_SGE];
    private final int[] offsets = new int[ScatterGatherList.MAX_SGE];
    private boolean malformedLogged;
    /** Polls of a down QP that found the next receive claimed by a sender and not yet published. */
    private int stuckPolls;
    private boolean peerGone;

    /**
     * @param qp      the QP whose inbox this is.
     * @param ring    its receive queue (the inbox follows its entries).
     * @param context its context (the regions a posted receive names).
     * @param pd      its protection domain.
     */
    InboxReader(final ShmQueuePair qp, final RecvRing ring, final ShmVerbsContext context, final ShmProtectionDomain pd)
    {
        this.qp = qp;
        this.ring = ring;
        this.context = context;
        this.pd = pd;
        this.qpNum = qp.qpNum();
    }

    /**
     * The receive CQ's poller (inside its poll): moves this QP's receive completions from the inbox into
     * {@code completions} from index {@code from}, in receive order; once the QP is down, flushes the receives no
     * sender claimed; once it is closed and nothing is outstanding, detaches and unmaps the inbox.
     *
     * @return completions added.
     */
    int poll(final WorkCompletions completions, final int from)
    {
        final RecvRing ring = this.ring;
        final int max = completions.capacity() - from;
        long next = this.next;
        int count = 0;
        while (count < max)
        {
            if (ring.slotPublished(next))
            {
                completeSlot(completions, from + count, next);
                next++;
                count++;
                continue;
            }
            if (!qp.isDown() || next >= ring.tail())
            {
                // Up: nothing more yet. Down: every posted receive is done.
                break;
            }
            final long senderFinal = ring.senderFinal();
            if (senderFinal < 0 && !peerGoneChecked())
            {
                // Down, and the sender may still publish this receive's slot: its QP writes how many it consumed
                // when it goes down too (it sees our EOF), unless its process died (checked now and then).
                break;
            }
            if (next < senderFinal && ring.slotPublished(next))
            {
                continue; // published before the final count was written
            }
            final long wrId = ring.readEntry(next, receive);
            completions.set(from + count, wrId, WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qpNum);
            next++;
            count++;
        }
        if (next != this.next)
        {
            this.next = next;
            ring.consumed(next - 1);
        }
        else if (qp.isClosed() && next >= ring.tail())
        {
            qp.retireInbox();
        }
        return count;
    }

    /** @return whether the peer's process is known to be gone (looked up on one call in 1,024; poller only). */
    private boolean peerGoneChecked()
    {
        if (!peerGone && (++stuckPolls & 1023) == 1 && !qp.peerAlive())
        {
            peerGone = true;
        }
        return peerGone;
    }

    /** Completes receive {@code index} from its published slot; every field the peer wrote is checked first. */
    private void completeSlot(final WorkCompletions completions, final int at, final long index)
    {
        final RecvRing ring = this.ring;
        final UnsafeBuffer buffer = ring.buffer();
        final int slot = ring.slotOffset(index);
        final int byteLen = ring.slotByteLen(index);
        final int imm = ring.slotImm(index);
        final int info = ring.slotInfo(index);
        final int status = info & RecvRing.INFO_STATUS_MASK;
        final int kind = info >>> RecvRing.INFO_KIND_SHIFT & 3;
        final boolean rdmaWithImm = (info & RecvRing.INFO_RDMA_WITH_IMM) != 0;
        final int flags = (info & RecvRing.INFO_WITH_IMM) != 0 ? WorkCompletions.WC_WITH_IMM : 0;
        final long wrId = ring.readEntry(index, receive);
        final boolean wellFormed = (info & RecvRing.INFO_UNUSED) == 0 && byteLen >= 0;
        if (wellFormed && kind == RecvRing.KIND_INLINE && status == WcStatus.SUCCESS.value() && !rdmaWithImm &&
            byteLen <= RecvRing.INLINE_MAX)
        {
            final WcStatus placed = placeInline(buffer, slot + RecvRing.SLOT_DATA, byteLen);
            if (placed == WcStatus.SUCCESS)
            {
                completions.set(at, wrId, WcStatus.SUCCESS, WcOpcode.RECV, byteLen, imm, flags, qpNum);
                return;
            }
            completions.set(at, wrId, placed, WcOpcode.RECV, 0, 0, 0, qpNum);
            qp.goDown();
            return;
        }
        if (wellFormed && kind == RecvRing.KIND_PLACED)
        {
            final WcStatus wcStatus = WcStatus.fromValue(status);
            completions.set(at, wrId, wcStatus, rdmaWithImm ? WcOpcode.RECV_RDMA_WITH_IMM : WcOpcode.RECV,
                wcStatus == WcStatus.SUCCESS ? byteLen : 0, imm, flags, qpNum);
            return;
        }
        if (!malformedLogged)
        {
            // Once per QP: the connection ends with it.
            malformedLogged = true;
            MALFORMED_LOG.log("malformed", "QP " + qpNum + " to " + qp.remoteAddress() + ": the peer wrote a " +
                "malformed inbox slot (info " + Integer.toHexString(info) + ", length " + byteLen + "); the QP goes " +
                "to ERROR", null);
        }
        completions.set(at, wrId, WcStatus.LOC_QP_OP_ERR, WcOpcode.RECV, 0, 0, 0, qpNum);
        qp.goDown();
    }

    /** Copies an inline message into the posted receive read into {@link #inboxReceive} (poller thread). */
    private WcStatus placeInline(final UnsafeBuffer from, final int offset, final int length)
    {
        final ScatterGatherList sges = receive;
        if (length > sges.totalLength())
        {
            return WcStatus.LOC_LEN_ERR;
        }
        // Every SGE is checked before a byte is written, as the sender does for a placed message.
        final int count = sges.sgeCount();
        final ShmMemoryRegion[] regions = this.regions;
        final int[] offsets = this.offsets;
        for (int i = 0; i < count; i++)
        {
            final long address = sges.sgeAddress(i);
            final ShmMemoryRegion region = context.region(RegionChecks.indexOfAddress(address));
            final long at = RegionChecks.localOffset(region, pd, sges.sgeLkey(i), address, sges.sgeLength(i), true);
            if (at == RegionChecks.DENIED)
            {
                return WcStatus.LOC_PROT_ERR;
            }
            regions[i] = region;
            offsets[i] = (int)at;
        }
        int done = 0;
        for (int i = 0; i < count && done < length; i++)
        {
            final int n = Math.min(length - done, sges.sgeLength(i));
            // The region's span was checked above and the slot's bytes are within it (length <= INLINE_MAX): no
            // bounds check per copy (asserted where assertions are on).
            final UnsafeBuffer to = regions[i].buffer();
            assert offsets[i] >= 0 && offsets[i] <= to.capacity() - n && offset + done <= from.capacity() - n;
            UnsafeApi.copyMemory(from.byteArray(), from.addressOffset() + offset + done, to.byteArray(),
                to.addressOffset() + offsets[i], n);
            done += n;
        }
        for (int i = 0; i < count; i++)
        {
            regions[i] = null;
        }
        return WcStatus.SUCCESS;
    }
}
