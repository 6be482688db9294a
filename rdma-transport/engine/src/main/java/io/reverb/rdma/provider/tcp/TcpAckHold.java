package io.reverb.rdma.provider.tcp;

/**
 * Holding a lone ACK of a tcp QP for a request of this side to ride on ({@link TcpFrame}'s {@code acks}): whether it
 * may wait, and until when. A lone ACK may wait unless the QP is down, it answers a quarter of the peer's send queue,
 * the hold time is over, a held ACK had to go alone recently (the traffic is one-way: holding only delays the peer's
 * completions) or the poller that reads the socket goes to sleep ({@link #flushNext}). State only, guarded by the QP's
 * wire lock.
 */
final class TcpAckHold
{
    /** After a held ACK had to go alone, this many ACKs go at once before holding is tried again. */
    static final int ACK_HOLD_BACKOFF = 256;

    private final int maxAcks;
    private final long holdNanos;
    private long queuedAt;
    private int backoff;
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
            backoff = ACK_HOLD_BACKOFF;
            queuedAt = 0;
            return false;
        }
        return true;
    }

    /** What was staged is written: unless an ACK is still held, nothing waits. */
    void written(final boolean held, final boolean nothingOwed)
    {
        if (!held || nothingOwed)
        {
            queuedAt = 0;
        }
    }
}
