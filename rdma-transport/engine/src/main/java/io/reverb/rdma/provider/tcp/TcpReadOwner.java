package io.reverb.rdma.provider.tcp;

import java.io.IOException;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;

/**
 * Who reads a tcp QP's socket: the NIC thread, whose selector then watches the socket for input, or the poller of
 * the QP's receive CQ ({@link TcpCompletionQueue}), which reads it at each poll and, while it sleeps in the CQ's
 * completion channel, has the channel's selector watch it ({@link TcpCompletionChannel}). The poller takes the
 * reading with a poll ({@link #polled}); it goes back to the NIC when the poller arms a CQ that has no channel, when
 * its reads stay idle, when the QP goes down, or when the lease runs out: the poller neither polled nor slept in its
 * channel for the lease time ({@link #leaseCheck}).
 *
 * <p>State only: the QP calls every method with its wire lock held, except the two volatile hints the NIC reads
 * without it. The QP turns the NIC selector's interest on and off; this class owns the channel's registration.
 */
final class TcpReadOwner
{
    /** {@link #leaseCheck} result: the lease ran out, the NIC takes the reading back. */
    static final long EXPIRED = 0;

    private final TcpCompletionChannel channel;
    /** Written under the wire lock; read without it by the NIC as a hint that the poller is at work. */
    private volatile boolean pollerReading;
    /** The poller released the reading but found the wire taken: the NIC applies it on its next cycle. */
    private volatile boolean releaseRequested;
    private long polls;
    private long leaseSeenPolls;
    private long leaseSince;
    private SelectionKey channelKey;
    /** The channel registration fires once: it is re-armed by the next read of the socket by the poller. */
    private boolean channelArmed;
    private boolean channelWatching;
    /** NIC wake-ups to read this socket (written by the NIC under the wire lock; tests read it). */
    private volatile long nicReads;

    /** @param channel the receive CQ's completion channel, or null */
    TcpReadOwner(final TcpCompletionChannel channel)
    {
        this.channel = channel;
    }

    boolean pollerReading()
    {
        return pollerReading;
    }

    /** The NIC was woken to read the socket, and has read it. */
    void nicRead()
    {
        nicReads++;
    }

    /** @return how many times the NIC was woken to read the socket (a counter for tests) */
    long nicReads()
    {
        return nicReads;
    }

    boolean releaseRequested()
    {
        return releaseRequested;
    }

    /** Any thread, without the wire: asks the NIC to take the reading back. */
    void requestRelease()
    {
        releaseRequested = true;
    }

    /**
     * The poller polls the socket (it reads it now).
     *
     * @return true if it takes the reading over with this poll
     */
    boolean polled(final long now)
    {
        releaseRequested = false;
        polls++;
        channelArmed = true;
        if (pollerReading)
        {
            return false;
        }
        pollerReading = true;
        leaseSeenPolls = polls;
        leaseSince = now;
        return true;
    }

    /**
     * The poller is going to sleep in its channel: the channel's selector watches the socket from now on. Registered
     * only then, so that a poller that never sleeps there (BUSY) holds no registration, which would keep the socket's
     * descriptor open after it is closed until that selector selects again.
     */
    void registerWithChannel(final SelectableChannel socket, final TcpQueuePair qp)
    {
        if (channelKey == null && channel != null && pollerReading)
        {
            try
            {
                channelKey = socket.register(channel.selector(), 0, qp);
            }
            catch (final IOException | RuntimeException ex)
            {
                // The channel is closed: its poller sleeps there no more.
                channelKey = null;
            }
        }
    }

    /**
     * The NIC reads again.
     *
     * @return true if the poller held the reading
     */
    boolean release()
    {
        releaseRequested = false;
        if (!pollerReading)
        {
            return false;
        }
        pollerReading = false;
        return true;
    }

    /** The channel saw the socket readable while the poller slept: it does not watch it again until the next read. */
    void channelFired()
    {
        channelArmed = false;
    }

    /** Watches the socket in the channel while the poller reads it and no RNR wait stopped reading. */
    void updateChannelInterest(final boolean rnrWaiting)
    {
        final boolean watch = pollerReading && channelArmed && !rnrWaiting;
        if (watch != channelWatching && channelKey != null && channelKey.isValid())
        {
            channelWatching = watch;
            try
            {
                channelKey.interestOps(watch ? SelectionKey.OP_READ : 0);
                if (watch && channel.waiting())
                {
                    // A select already blocked does not see a changed interest set (java.nio.channels.SelectionKey):
                    // turned on by another thread (the NIC ending an RNR wait) while the poller sleeps, it must
                    // re-select, else the socket's bytes wait for the poller's timeout and the NIC's idle select.
                    channel.selector().wakeup();
                }
            }
            catch (final ClosedSelectorException | CancelledKeyException ex)
            {
                // The channel was closed meanwhile (on another thread): its poller sleeps there no more, and the
                // caller (e.g. the QP going down) must not fail for it.
                channelWatching = false;
            }
        }
    }

    /**
     * NIC thread: is the poller still at it? It is if it polled since the last check, or if it sleeps in its channel
     * while the channel watches this socket.
     *
     * @return {@link #EXPIRED}, nanoseconds until the next check, or Long.MAX_VALUE if nothing is to be timed
     */
    long leaseCheck(final long now, final long leaseNanos)
    {
        if (!pollerReading)
        {
            return Long.MAX_VALUE;
        }
        if (polls != leaseSeenPolls)
        {
            leaseSeenPolls = polls;
            leaseSince = now;
        }
        else if (channelWatching && channel.waiting())
        {
            // The channel wakes the poller when this socket has bytes.
            leaseSince = now;
            return Long.MAX_VALUE;
        }
        final long left = leaseSince + leaseNanos - now;
        return left <= 0 ? EXPIRED : left;
    }

    /** The socket is closed. */
    void close()
    {
        pollerReading = false;
        if (channelKey != null)
        {
            channelKey.cancel();
        }
    }
}
