package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.AbstractCompletionQueue;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.agrona.BitUtil;

/**
 * A bounded multi-producer, single-consumer ring of completions in parallel primitive arrays.
 *
 * <p>Producers are the context's NIC thread and threads that post to a QP in ERROR (which complete
 * their flushed requests themselves). A producer claims a position with a CAS on {@code tail}, fills
 * the slot, then publishes it by storing {@code position + 1} into the slot's sequence; the poller
 * reads slots whose sequence shows they are published, so a slow producer holds back only the
 * entries after its own. The publish and the arming flag are both volatile, so a poller that arms
 * and then re-polls cannot miss a completion that raised no event (the ibverbs contract).
 */
final class TcpCompletionQueue extends AbstractCompletionQueue<TcpVerbsContext, TcpCompletionChannel>
{
    private static final int DISARMED = 0;
    private static final int ARMED_ANY = 1;
    private static final int ARMED_SOLICITED = 2;
    private static final WcStatus[] STATUSES = WcStatus.values();
    private static final WcOpcode[] OPCODES = WcOpcode.values();

    private final int mask;
    private final long[] wrIds;
    private final byte[] statuses;
    private final byte[] opcodes;
    private final int[] byteLens;
    private final int[] immDatas;
    private final int[] flags;
    private final int[] qpNums;
    private final AtomicLongArray sequences;
    private final AtomicLong tail = new AtomicLong();
    private final AtomicLong head = new AtomicLong();
    private final AtomicInteger armed = new AtomicInteger(DISARMED);
    private volatile boolean closed;

    TcpCompletionQueue(final TcpVerbsContext context, final int capacity, final TcpCompletionChannel channel)
    {
        super(context, entries(capacity), channel);
        this.mask = this.capacity - 1;
        wrIds = new long[this.capacity];
        statuses = new byte[this.capacity];
        opcodes = new byte[this.capacity];
        byteLens = new int[this.capacity];
        immDatas = new int[this.capacity];
        flags = new int[this.capacity];
        qpNums = new int[this.capacity];
        sequences = new AtomicLongArray(this.capacity);
    }

    private static int entries(final int capacity)
    {
        if (capacity <= 0)
        {
            throw new IllegalArgumentException("CQ capacity must be > 0: " + capacity);
        }
        return BitUtil.findNextPositivePowerOfTwo(capacity);
    }

    TcpVerbsContext tcpContext()
    {
        return context;
    }

    /**
     * Publishes a completion, raising an event if the CQ was armed for it. Any thread.
     *
     * @return false if the CQ is full or closed (the completion is lost; the QP must go to ERROR).
     */
    boolean offer(
        final long wrId,
        final WcStatus status,
        final WcOpcode opcode,
        final int byteLen,
        final int imm,
        final int wcFlags,
        final int qpNum,
        final boolean solicited)
    {
        if (closed)
        {
            return false;
        }
        long position;
        do
        {
            position = tail.get();
            if (position - head.get() >= capacity)
            {
                return false;
            }
        }
        while (!tail.compareAndSet(position, position + 1));

        final int i = (int)position & mask;
        wrIds[i] = wrId;
        statuses[i] = (byte)status.ordinal();
        opcodes[i] = (byte)opcode.ordinal();
        byteLens[i] = byteLen;
        immDatas[i] = imm;
        flags[i] = wcFlags;
        qpNums[i] = qpNum;
        sequences.set(i, position + 1);

        final int arming = armed.get();
        if (arming != DISARMED &&
            (arming == ARMED_ANY || solicited || status != WcStatus.SUCCESS) &&
            armed.compareAndSet(arming, DISARMED) &&
            channel != null)
        {
            channel.signal();
        }
        return true;
    }

    @Override
    public int poll(final WorkCompletions completions)
    {
        int count = 0;
        if (!closed)
        {
            long position = head.get();
            final int max = completions.capacity();
            while (count < max)
            {
                final int i = (int)position & mask;
                if (sequences.get(i) != position + 1)
                {
                    break;
                }
                completions.set(count++, wrIds[i], STATUSES[statuses[i]], OPCODES[opcodes[i]], byteLens[i],
                    immDatas[i], flags[i], qpNums[i]);
                position++;
            }
            if (count > 0)
            {
                head.lazySet(position);
            }
        }
        completions.count(count);
        return count;
    }

    @Override
    public void requestNotify(final boolean solicitedOnly)
    {
        if (!closed)
        {
            armed.set(solicitedOnly ? ARMED_SOLICITED : ARMED_ANY);
        }
    }

    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        context.removed(this);
    }

    @Override
    public String toString()
    {
        return "TcpCompletionQueue{capacity=" + capacity + '}';
    }
}
