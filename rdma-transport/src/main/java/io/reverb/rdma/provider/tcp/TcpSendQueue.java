package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.ScatterGatherList;
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
