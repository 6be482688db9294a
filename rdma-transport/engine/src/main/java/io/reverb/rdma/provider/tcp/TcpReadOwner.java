package io.reverb.rdma.provider.tcp;

import java.io.IOException;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * Who reads a tcp QP's socket, the NIC thread or the poller of the QP's receive CQ: the hand-off between them as one
 * state machine. The QP ({@link TcpQueuePair}) applies the effects each transition returns (the NIC selector's
 * interest, waking the NIC); this class holds the state, the lease and the poller's channel watch.
 *
 * <h2>States</h2>
 * <pre>
 *   NIC        the NIC thread reads; its selector watches the socket for input (unless an RNR wait stopped reading)
 *   POLLER     the poller reads the socket at each poll ({@link TcpQueuePair#pollSocket}); the NIC's selector does
 *              not watch it and the NIC times the lease; while the poller sleeps in its completion channel, the
 *              channel's selector watches the socket instead (the channel watch, below)
 *   RELEASING  the poller gave the reading back but found the wire taken: still the poller's (nobody else watches
 *              the socket) until the NIC applies the release on its next duty cycle, which it must not skip
 *   CLOSED     the socket is closed (terminal)
 * </pre>
 *
 * <h2>Transitions</h2>
 * Every transition but {@link #requestRelease} is made by the thread that holds the QP's {@link TcpWireLock}, and
 * asserts it; {@link #requestRelease} is a CAS, so it cannot undo a transition made meanwhile under the wire.
 * <pre>
 *   event (thread)                                from             to         the QP then
 *   polled: the poller reads (poller)             NIC              POLLER     NIC stops watching, NIC woken; lease starts
 *                                                 POLLER           POLLER     (lease renewed: one more poll)
 *                                                 RELEASING        POLLER     (the request is withdrawn; lease renewed)
 *   requestRelease: released without the wire    POLLER           RELEASING  wakes the NIC now
 *     (poller, wire not held)                     NIC, RELEASING,  unchanged  nothing (nothing to give back)
 *                                                 CLOSED
 *   release: the poller arms a CQ without a       POLLER,          NIC        NIC watches again
 *     channel, or again without polling, or its   RELEASING
 *     reads stay idle; the QP goes down (any)     NIC              NIC        nothing
 *   leaseCheck (NIC, each duty cycle)             RELEASING        NIC        (via release) NIC watches again
 *                                                 POLLER, polled   POLLER     lease renewed
 *                                                   since the last check, or sleeping with the channel watching
 *                                                 POLLER, lease    NIC        (via release) NIC watches again
 *                                                   time without either
 *   close: the socket is closed (any)             any              CLOSED     channel registration cancelled
 * </pre>
 * When the wire is taken, the NIC skips a QP whose poller is at work ({@link #pollerAtWork}: POLLER only); it waits
 * for the wire in RELEASING, whose release only it can apply. A poller that finds the wire taken does not count that
 * poll as an idle read ({@link TcpCompletionQueue}), and the poll after arming waits for the wire (only that poll
 * re-arms the channel's watch before the poller sleeps).
 *
 * <h2>The channel watch (POLLER with a completion channel)</h2>
 * <pre>
 *   registerWithChannel: the poller is about to sleep there    the socket is registered once (a poller that never
 *                                                              sleeps there, BUSY, holds no registration)
 *   polled                                                     armed: the registration may fire again
 *   channelFired: the channel saw the socket readable          not armed until the next poll (a socket that its
 *                                                              poller does not read cannot keep it awake)
 *   updateChannelInterest: watching = POLLER or RELEASING,     turned on from another thread (the NIC ending an RNR
 *     armed, no RNR wait                                       wait) while the poller is blocked in the channel:
 *                                                              its selector is woken (a blocked select does not see
 *                                                              a changed interest set); a channel closed meanwhile
 *                                                              is not an error (its poller sleeps there no more)
 * </pre>
 */
final class TcpReadOwner
{
    /** {@link #leaseCheck} result: the lease ran out (or a release waits): the NIC takes the reading back. */
    static final long EXPIRED = 0;

    static final int NIC = 0;
    static final int POLLER = 1;
    static final int RELEASING = 2;
    static final int CLOSED = 3;

    private static final AtomicIntegerFieldUpdater<TcpReadOwner> STATE =
        AtomicIntegerFieldUpdater.newUpdater(TcpReadOwner.class, "state");

    /** The completion channel of the QP's receive CQ, as far as the read hand-off uses it. */
    interface Channel
    {
        /** @return the selector the poller's sockets are registered with while it sleeps */
        Selector selector();

        /** @return true while the poller is blocked (or about to block) in the channel */
        boolean waiting();

        /** Wakes the poller blocked in the channel's selector, if one is. */
        void wakeWaiter();
    }

    private final Channel channel;
    private final TcpWireLock wire;
    /** Written under the wire (but by {@link #requestRelease}'s CAS); read without it by the NIC and posters. */
    private volatile int state = NIC;
    private long polls;
    private long leaseSeenPolls;
    private long leaseSince;
    private SelectionKey channelKey;
    /** The channel registration fires once: it is re-armed by the next read of the socket by the poller. */
    private boolean channelArmed;
    private boolean channelWatching;
    /** NIC wake-ups to read this socket (written by the NIC under the wire lock; tests read it). */
    private volatile long nicReads;

    /**
     * @param channel the receive CQ's completion channel, or null
     * @param wire the QP's wire lock, which every transition but {@link #requestRelease} holds
     */
    TcpReadOwner(final Channel channel, final TcpWireLock wire)
    {
        this.channel = channel;
        this.wire = wire;
    }

    /** @return {@link #NIC}, {@link #POLLER}, {@link #RELEASING} or {@link #CLOSED} */
    int state()
    {
        return state;
    }

    /** @return true if the poller has the reading (POLLER or RELEASING): the NIC's selector does not watch it */
    boolean pollerReading()
    {
        final int s = state;
        return s == POLLER || s == RELEASING;
    }

    /** @return true in POLLER: a NIC that finds the wire taken may skip this QP (the poller reads and writes it) */
    boolean pollerAtWork()
    {
        return state == POLLER;
    }

    /** @return true in RELEASING: the NIC has a release to apply */
    boolean releasePending()
    {
        return state == RELEASING;
    }

    /** The NIC was woken to read the socket, and has read it (wire held). */
    void nicRead()
    {
        nicReads++;
    }

    /** @return how many times the NIC was woken to read the socket (a counter for tests) */
    long nicReads()
    {
        return nicReads;
    }

    /**
     * The poller, without the wire: gives the reading back, for the NIC to apply on its next duty cycle.
     *
     * @return true if it went POLLER → RELEASING (the NIC must be woken); false if the poller did not have it
     */
    boolean requestRelease()
    {
        return STATE.compareAndSet(this, POLLER, RELEASING);
    }

    /**
     * The poller reads the socket now (wire held).
     *
     * @return true if it takes the reading over with this poll (NIC → POLLER)
     */
    boolean polled(final long now)
    {
        assert wire.isHeldByCurrentThread();
        final int s = state;
        if (s == CLOSED)
        {
            return false;
        }
        polls++;
        channelArmed = true;
        if (s != NIC)
        {
            if (s == RELEASING)
            {
                state = POLLER;
            }
            return false;
        }
        state = POLLER;
        leaseSeenPolls = polls;
        leaseSince = now;
        return true;
    }

    /**
     * The NIC reads again (wire held): POLLER or RELEASING → NIC.
     *
     * @return true if the poller held the reading (the NIC's selector must watch the socket again)
     */
    boolean release()
    {
        assert wire.isHeldByCurrentThread();
        final int s = state;
        if (s != POLLER && s != RELEASING)
        {
            return false;
        }
        state = NIC;
        return true;
    }

    /**
     * NIC thread (wire held): is the poller still at it? It is if it polled since the last check, or if it sleeps in
     * its channel while the channel watches this socket. A pending release ends it at once.
     *
     * @return {@link #EXPIRED} (the caller releases), nanoseconds until the next check, or Long.MAX_VALUE if nothing
     *     is to be timed
     */
    long leaseCheck(final long now, final long leaseNanos)
    {
        assert wire.isHeldByCurrentThread();
        final int s = state;
        if (s == RELEASING)
        {
            return EXPIRED;
        }
        if (s != POLLER)
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

    /**
     * The poller is going to sleep in its channel (wire held): the channel's selector watches the socket from now on.
     * Registered only then, so that a poller that never sleeps there (BUSY) holds no registration, which would keep
     * the socket's descriptor open after it is closed until that selector selects again.
     */
    void registerWithChannel(final SelectableChannel socket, final Object attachment)
    {
        assert wire.isHeldByCurrentThread();
        if (channelKey == null && channel != null && pollerReading())
        {
            try
            {
                channelKey = socket.register(channel.selector(), 0, attachment);
            }
            catch (final IOException | RuntimeException ex)
            {
                // The channel is closed: its poller sleeps there no more.
                channelKey = null;
            }
        }
    }

    /** @return true if the socket is registered with the poller's channel */
    boolean registeredWithChannel()
    {
        return channelKey != null;
    }

    /** The channel saw the socket readable while the poller slept (wire held): no watch until the next read. */
    void channelFired()
    {
        assert wire.isHeldByCurrentThread();
        channelArmed = false;
    }

    /** @return true while the channel's selector watches the socket for input */
    boolean channelWatching()
    {
        return channelWatching;
    }

    /** Watches the socket in the channel while the poller reads it and no RNR wait stopped reading (wire held). */
    void updateChannelInterest(final boolean rnrWaiting)
    {
        assert wire.isHeldByCurrentThread();
        final boolean watch = pollerReading() && channelArmed && !rnrWaiting;
        if (watch != channelWatching && channelKey != null && channelKey.isValid())
        {
            channelWatching = watch;
            try
            {
                channelKey.interestOps(watch ? SelectionKey.OP_READ : 0);
                if (watch)
                {
                    // A select already blocked does not see a changed interest set (java.nio.channels.SelectionKey):
                    // turned on by another thread (the NIC ending an RNR wait) while the poller sleeps, it must
                    // re-select, else the socket's bytes wait for the poller's timeout and the NIC's idle select.
                    channel.wakeWaiter();
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

    /** The socket is closed (wire held): CLOSED from any state. */
    void close()
    {
        assert wire.isHeldByCurrentThread();
        state = CLOSED;
        if (channelKey != null)
        {
            channelKey.cancel();
        }
    }
}
