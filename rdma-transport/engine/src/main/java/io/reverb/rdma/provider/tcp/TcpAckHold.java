package io.reverb.rdma.provider.tcp;

/**
 * Holding a lone ACK of a tcp QP for a request of this side to ride on ({@link TcpFrame}'s {@code acks}): whether it
 * may wait, and until when. A lone ACK may wait unless the QP is down, it answers a quarter of the peer's send queue,
 * the hold time is over, held ACKs had to go alone {@link #TIMEOUTS_BEFORE_BACKOFF} times in a row recently (the
 * traffic is one-way: holding only delays the peer's completions) or the poller that reads the socket goes to sleep
 * ({@link #flushNext}). State only, guarded by the QP's wire lock.
 *
 * <p>One hold that times out says little: in request/response traffic with large messages, the request that would
 * have carried an ACK sometimes comes later than the hold time (a message serialised slowly, a thread descheduled on
 * a busy machine). Backing off after every such timeout sent the next {@link #ACK_HOLD_BACKOFF} ACKs alone, each in
 * its own system call, each waking the peer's poller: for 1 MiB echoes over loopback about four lone ACKs per echo,
 * all of them backoff (17 timeouts in 11 s made 4,100 lone ACKs). Only timeouts in a row, with no ACK picked up by
 * a request between them, now mean one-way traffic.
 */
final class TcpAckHold
{
    /** After a held ACK had to go alone, this many ACKs go at once before holding is tried again. */
    static final int ACK_HOLD_BACKOFF = 256;
    /** Holds timed out in a row (no held ACK picked up by a request between them) before the backoff starts. */
    static final int TIMEOUTS_BEFORE_BACKOFF = 3;

    private final int maxAcks;
    private final long holdNanos;
    private long queuedAt;
    private int backoff;
    /** Holds that timed out since a held ACK last rode on a request. */
    private int timeoutsInARow;
    private boolean flush;

    /**
     * @param peerMaxSendWr the peer's send queue depth (told in the handshake, checked)
     * @param holdNanos     how long a lone ACK may wait to ride on a request ({@code VerbsConfig#tcpAckHoldNanos()}); 0
     *                      sends every ACK at once. The NIC's timer has millisecond granularity, so a held ACK that no
     *                      request picks up leaves 1-2 ms later.
     */
    TcpAckHold(final int peerMaxSendWr, final long holdNanos)
    {
        this.maxAcks = Math.max(1, Math.min(TcpFrame.MAX_PIGGYBACK_ACKS, peerMaxSendWr / 4));
        this.holdNanos = holdNanos;
    }

    /** The first ACK of a run was queued (nothing else was owed). */
    void started(final long now)
    {
        queuedAt = now;
    }

    /** @return true while a queued ACK may be waiting for a request */
    boolean pending()
    {
        return queuedAt != 0;
    }

    /** @return when a waiting ACK must leave alone */
    long deadline()
    {
        return queuedAt + holdNanos;
    }

    /** While on, nothing is held (the poller goes to sleep: no request of this side is coming soon). */
    void flushNext(final boolean on)
    {
        flush = on;
    }

    /**
     * @param loneAcks ACKs owed when they are all that is owed, else 0
     * @return true if they may wait for a request now
     */
    boolean hold(final long now, final int loneAcks, final boolean down)
    {
        if (queuedAt == 0)
        {
            return false;
        }
        if (holdNanos == 0 || flush || down || loneAcks == 0 || loneAcks >= maxAcks)
        {
            queuedAt = 0;
            return false;
        }
        if (backoff > 0)
        {
            backoff--;
            queuedAt = 0;
            return false;
        }
        if (now - queuedAt >= holdNanos)
        {
            if (++timeoutsInARow >= TIMEOUTS_BEFORE_BACKOFF)
            {
                backoff = ACK_HOLD_BACKOFF;
                timeoutsInARow = 0;
            }
            queuedAt = 0;
            return false;
        }
        return true;
    }

    /**
     * What was staged is written: unless an ACK is still held, nothing waits. A held ACK that left with nothing owed
     * rode on a request: holding works for this traffic, the count of timeouts in a row starts again.
     */
    void written(final boolean held, final boolean nothingOwed)
    {
        if (held && nothingOwed && queuedAt != 0)
        {
            timeoutsInARow = 0;
        }
        if (!held || nothingOwed)
        {
            queuedAt = 0;
        }
    }
}
