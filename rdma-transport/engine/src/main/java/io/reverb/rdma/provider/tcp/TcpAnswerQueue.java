package io.reverb.rdma.provider.tcp;

import org.agrona.BitUtil;

/**
 * Answers this side owes the peer, in the order of the peer's requests: ACK (value: how many requests, merged
 * while consecutive), NAK (value: the WcStatus) or READ_RESPONSE (value: length; region and offset: where its
 * data is copied from when the answer is staged). NIC thread only.
 */
final class TcpAnswerQueue
{
    final int mask;
    final int[] type;
    final int[] value;
    final TcpMemoryRegion[] region;
    final int[] offset;
    long head;
    long tail;

    /** @param peerMaxSendWr the peer never has more requests unanswered, so it can never be owed more answers */
    TcpAnswerQueue(final int peerMaxSendWr)
    {
        final int capacity = BitUtil.findNextPositivePowerOfTwo(peerMaxSendWr + 2);
        mask = capacity - 1;
        type = new int[capacity];
        value = new int[capacity];
        region = new TcpMemoryRegion[capacity];
        offset = new int[capacity];
    }

    boolean isEmpty()
    {
        return head == tail;
    }

    /** @return false if full (the peer has more requests unanswered than its send queue holds). */
    boolean add(final int answerType, final int answerValue, final TcpMemoryRegion answerRegion, final int answerOffset)
    {
        if (tail - head > mask)
        {
            return false;
        }
        final int j = (int)tail & mask;
        type[j] = answerType;
        value[j] = answerValue;
        region[j] = answerRegion;
        offset[j] = answerOffset;
        tail++;
        return true;
    }

    /** @return the number of requests a lone queued ACK answers, or 0 if the queue holds anything else. */
    int loneAcks()
    {
        return tail - head == 1 && type[(int)head & mask] == TcpFrame.ACK ? value[(int)head & mask] : 0;
    }

    /** @return true if the last queued answer is an ACK, which then counts one more request. */
    boolean mergeAck()
    {
        if (tail != head && type[(int)(tail - 1) & mask] == TcpFrame.ACK)
        {
            value[(int)(tail - 1) & mask]++;
            return true;
        }
        return false;
    }
}
