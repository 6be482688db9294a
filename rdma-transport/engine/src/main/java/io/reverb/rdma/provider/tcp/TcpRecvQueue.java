package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.ScatterGatherList;
import org.agrona.BitUtil;

/**
 * The receive queue of a tcp QP: a ring of posted receives in parallel arrays, their SGEs kept as posted
 * (checked when a SEND lands in them). Posting threads fill at {@link #tail} (under the QP's receive lock),
 * the NIC thread consumes at {@link #head}.
 */
final class TcpRecvQueue
{
    static final int MAX_SGE = ScatterGatherList.MAX_SGE;

    final int mask;
    final long[] wrId;
    final int[] sgeCount;
    /** SGE k of receive i is at i * MAX_SGE + k. */
    final long[] sgeAddress;
    final int[] sgeLength;
    final int[] sgeLkey;
    volatile long tail;
    volatile long head;

    TcpRecvQueue(final int maxRecvWr)
    {
        final int capacity = BitUtil.findNextPositivePowerOfTwo(maxRecvWr);
        mask = capacity - 1;
        wrId = new long[capacity];
        sgeCount = new int[capacity];
        sgeAddress = new long[capacity * MAX_SGE];
        sgeLength = new int[capacity * MAX_SGE];
        sgeLkey = new int[capacity * MAX_SGE];
    }

    /**
     * Queues a receive at {@link #tail} (receive lock held).
     *
     * @return false if the queue is full
     */
    boolean add(final RecvRequest request)
    {
        final long t = tail;
        if (t - head > mask)
        {
            return false;
        }
        final int i = (int)t & mask;
        final int base = i * MAX_SGE;
        final int sges = request.sgeCount();
        wrId[i] = request.wrId();
        sgeCount[i] = sges;
        for (int k = 0; k < sges; k++)
        {
            sgeAddress[base + k] = request.sgeAddress(k);
            sgeLength[base + k] = request.sgeLength(k);
            sgeLkey[base + k] = request.sgeLkey(k);
        }
        tail = t + 1;
        return true;
    }

    /** @return true if a posted receive is waiting. */
    boolean hasReceive()
    {
        return head != tail;
    }
}
