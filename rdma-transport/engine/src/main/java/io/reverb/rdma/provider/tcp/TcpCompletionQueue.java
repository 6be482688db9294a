package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.base.AbstractCompletionQueue;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.agrona.BitUtil;
import org.agrona.collections.ArrayUtil;

/**
 * A bounded multi-producer, single-consumer ring of completions in parallel primitive arrays.
 *
 * <p>Producers are the context's NIC thread, pollers that read sockets (below) and threads that post to a QP in
 * ERROR (which complete their flushed requests themselves). A producer claims a position with a CAS on {@code tail}, fills
 * the slot, then publishes it by storing {@code position + 1} into the slot's sequence; the poller
 * reads slots whose sequence shows they are published, so a slow producer holds back only the
 * entries after its own. The publish and the arming flag are both volatile, so a poller that arms
 * and then re-polls cannot miss a completion that raised no event (the ibverbs contract).
 *
 * <p><b>The poller reads the sockets.</b> A QP whose receive CQ this is ({@link #attachReader}) has its socket read
 * by the thread that polls this CQ while that thread keeps polling: once {@value #CLAIM_AFTER_IDLE_POLLS} polls in a
 * row found nothing, each poll that finds the ring empty reads the QPs' sockets without blocking
 * ({@link TcpQueuePair#pollSocket}), so a message goes from the socket to the poller and on to its handler with no
 * hand-over between threads, and the NIC thread, whose selector then stops watching those sockets for input, is not
 * woken by it. Arming the CQ ({@link #requestNotify}: the poller is about to sleep) keeps the reading with the poller
 * when the CQ has a completion channel: the sockets are registered with the channel's selector
 * ({@link TcpCompletionChannel}), so the sleeping poller is woken by the socket itself (the event-driven fallback, one
 * wake-up per message; an EVENT poller takes the reading over at its first arming). Without a channel, arming gives
 * the reading back to the NIC thread, and so does arming again without a poll since the last arming: that poller does
 * not read this CQ (a receiver whose consumer paused), yet the socket must be read, as a NIC places data and answers
 * its peer whether or not the CQ is polled (before, such a socket was left unread until the lease ran out behind
 * the NIC's idle select, ~120 ms). The NIC also takes it back from a poller that stops polling without sleeping in
 * the channel ({@link TcpQueuePair#POLLER_LEASE_NANOS}), and from one whose reads found nothing
 * {@value #RELEASE_AFTER_IDLE_READS} times in a row (an idle connection is not read by system calls on every poll).
 * On by default; {@link io.reverb.rdma.verbs.VerbsConfig#withTcpPollerReads(boolean)} (default
 * {@code -Dreverb.tcp.pollerReads}) turns it off.
 */
final class TcpCompletionQueue extends AbstractCompletionQueue<TcpVerbsContext, TcpCompletionChannel>
{
    private static final int DISARMED = 0;
    private static final int ARMED_ANY = 1;
    private static final int ARMED_SOLICITED = 2;
    private static final WcStatus[] STATUSES = WcStatus.values();
    private static final WcOpcode[] OPCODES = WcOpcode.values();
    /** Polls in a row that found nothing before the poller reads the sockets itself (a poller that spins). */
    static final int CLAIM_AFTER_IDLE_POLLS = 2;
    /** Socket reads in a row that found nothing before the poller gives an idle connection back to the NIC. */
    static final int RELEASE_AFTER_IDLE_READS = 1024;
    private static final TcpQueuePair[] NO_READERS = new TcpQueuePair[0];

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

    // The QPs whose sockets the poller of this CQ reads, and its state (poller thread only, but readers).
    private final Object readersLock = new Object();
    private volatile TcpQueuePair[] readers = NO_READERS;
    private boolean reading;
    private boolean movedData;
    private int idlePolls;
    private int idleReads;
    /** The poller polled this CQ since it last armed it (else it does not read its sockets: a paused receiver). */
    private boolean polledSinceArm = true;

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

    /** @return the channel this CQ raises events on, or null */
    TcpCompletionChannel tcpChannel()
    {
        return channel;
    }

    /** A QP whose receive CQ this is: its socket may be read by this CQ's poller. Any thread. */
    void attachReader(final TcpQueuePair qp)
    {
        synchronized (readersLock)
        {
            readers = ArrayUtil.add(readers, qp);
        }
    }

    /** The QP's socket is closed. Any thread. */
    void detachReader(final TcpQueuePair qp)
    {
        synchronized (readersLock)
        {
            readers = ArrayUtil.remove(readers, qp);
        }
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
        movedData = false;
        polledSinceArm = true;
        int count = take(completions);
        if (count == 0 && !closed && readers.length > 0 && (reading || ++idlePolls >= CLAIM_AFTER_IDLE_POLLS))
        {
            count = readSockets(completions);
        }
        else if (count > 0 && !reading)
        {
            idlePolls = 0;
        }
        return count;
    }

    /** Reads the sockets of the attached QPs (taking the reading over from the NIC), then polls again. */
    private int readSockets(final WorkCompletions completions)
    {
        reading = true;
        final long now = System.nanoTime();
        boolean read = false;
        boolean tried = false;
        // Armed: this is the poll that follows arming, before the poller sleeps in the channel.
        final boolean sleeping = channel != null && armed.get() != DISARMED;
        for (final TcpQueuePair qp : readers)
        {
            final int polled = qp.pollSocket(now, sleeping);
            read |= polled == TcpQueuePair.POLL_MOVED;
            tried |= polled != TcpQueuePair.POLL_WIRE_TAKEN;
        }
        // A poll that found every wire taken read nothing and says nothing of idleness: else a NIC thread preempted
        // while holding one made a spinning poller count 1,024 "idle" reads in microseconds and stop reading.
        if (read)
        {
            idleReads = 0;
            movedData = true;
        }
        else if (tried && ++idleReads >= RELEASE_AFTER_IDLE_READS)
        {
            // An idle connection: the NIC watches it again, and this CQ reads no more until a completion comes.
            releaseReaders();
            idlePolls = Integer.MIN_VALUE;
        }
        return take(completions);
    }

    /** @return true if the last poll read or wrote socket bytes (a message is on its way): see the SPI */
    @Override
    public boolean lastPollMovedData()
    {
        return movedData;
    }

    private void releaseReaders()
    {
        if (reading)
        {
            reading = false;
            idleReads = 0;
            for (final TcpQueuePair qp : readers)
            {
                qp.releaseReading();
            }
        }
    }

    private int take(final WorkCompletions completions)
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
            final TcpQueuePair[] qps = readers;
            final boolean polled = polledSinceArm;
            polledSinceArm = false;
            if (channel != null && qps.length > 0 && polled)
            {
                // The poller is going to sleep in the channel, whose selector watches the sockets it reads: it keeps
                // reading them (the poll that follows arming takes any it does not read yet), and nothing it owes
                // the peer waits for it meanwhile.
                reading = true;
                idleReads = 0;
                for (final TcpQueuePair qp : qps)
                {
                    qp.beforePollerSleeps();
                }
                return;
            }
            // No channel to sleep in, or a poller that arms again without having polled (it does not want what this
            // CQ holds now, e.g. a paused receiver, so it would not read the sockets either): the NIC reads them
            // (placing data, answering the peer) and raises the event. The poll that follows arming (the ibverbs
            // contract) does not count towards taking the reading over again.
            releaseReaders();
            if (idlePolls >= 0)
            {
                idlePolls = -1;
            }
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
