package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.base.RegionChecks;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.ScatterGatherList;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WrOpcode;
import org.agrona.BitUtil;

/**
 * The send queue of a tcp QP: a ring of work requests in parallel arrays (no object per request), with
 * their local SGEs resolved at post time.
 * <pre>
 *        head                 tx                        tail
 *   ------|====================|==========================|------
 *          written, waiting      posted, not yet written     free
 *          for their answer      to the socket
 * </pre>
 * Posting threads fill at {@link #tail} (under the QP's send lock), the NIC thread writes at {@link #tx}
 * and completes at {@link #head} when the answer arrives. Positions only grow; index = position &amp; mask.
 */
final class TcpSendQueue
{
    static final int MAX_SGE = ScatterGatherList.MAX_SGE;

    final int mask;
    final long[] wrId;
    final WrOpcode[] opcode;
    final int[] flags;
    final int[] imm;
    final long[] remoteAddress;
    final int[] rkey;
    final int[] length;
    /** A request whose local SGEs failed the checks: it fails with LOC_PROT_ERR when its turn comes. */
    final boolean[] localError;
    final int[] sgeCount;
    /** SGE k of request i is at i * MAX_SGE + k. */
    final TcpMemoryRegion[] sgeRegion;
    final int[] sgeOffset;
    final int[] sgeLength;
    volatile long tail;
    volatile long head;
    /** NIC thread only. */
    long tx;

    TcpSendQueue(final int maxSendWr)
    {
        final int capacity = BitUtil.findNextPositivePowerOfTwo(maxSendWr);
        mask = capacity - 1;
        wrId = new long[capacity];
        opcode = new WrOpcode[capacity];
        flags = new int[capacity];
        imm = new int[capacity];
        remoteAddress = new long[capacity];
        rkey = new int[capacity];
        length = new int[capacity];
        localError = new boolean[capacity];
        sgeCount = new int[capacity];
        sgeRegion = new TcpMemoryRegion[capacity * MAX_SGE];
        sgeOffset = new int[capacity * MAX_SGE];
        sgeLength = new int[capacity * MAX_SGE];
    }

    /**
     * Queues a request at {@link #tail} (send lock held), resolving its SGEs against {@code pd}: a READ writes
     * into its SGEs, so they need LOCAL_WRITE; a bad SGE marks the request {@link #localError}, so that it
     * fails with LOC_PROT_ERR when its turn comes, after everything posted before it.
     *
     * @return false if the queue is full
     */
    boolean add(final SendRequest request, final int totalLength, final TcpVerbsContext context, final ProtectionDomain pd)
    {
        final long t = tail;
        if (t - head > mask)
        {
            return false;
        }
        final int i = (int)t & mask;
        wrId[i] = request.wrId();
        opcode[i] = request.opcode();
        flags[i] = request.flags();
        imm[i] = request.immData();
        remoteAddress[i] = request.remoteAddress();
        rkey[i] = request.rkey();
        length[i] = totalLength;
        sgeCount[i] = request.sgeCount();
        localError[i] = !resolve(request, i * MAX_SGE, request.opcode() == WrOpcode.RDMA_READ, context, pd);
        tail = t + 1;
        return true;
    }

    private boolean resolve(
        final SendRequest request,
        final int base,
        final boolean needLocalWrite,
        final TcpVerbsContext context,
        final ProtectionDomain pd)
    {
        final int count = request.sgeCount();
        boolean valid = true;
        for (int k = 0; k < count; k++)
        {
            final long address = request.sgeAddress(k);
            final int sgeBytes = request.sgeLength(k);
            final TcpMemoryRegion region = context.region(RegionChecks.indexOfAddress(address));
            final long offset = RegionChecks.localOffset(region, pd, request.sgeLkey(k), address, sgeBytes, needLocalWrite);
            if (offset == RegionChecks.DENIED)
            {
                valid = false;
                sgeRegion[base + k] = null;
                sgeLength[base + k] = 0;
                continue;
            }
            sgeRegion[base + k] = region;
            sgeOffset[base + k] = (int)offset;
            sgeLength[base + k] = sgeBytes;
        }
        return valid;
    }

    /** Forgets request {@code i}'s regions, so that a deregistered region can be collected. */
    void releaseSges(final int i)
    {
        final int base = i * MAX_SGE;
        for (int k = 0; k < MAX_SGE; k++)
        {
            sgeRegion[base + k] = null;
        }
    }
}
