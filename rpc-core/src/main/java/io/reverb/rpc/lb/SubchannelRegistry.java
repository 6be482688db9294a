package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import java.util.ArrayList;
import java.util.List;

/**
 * The subchannels a {@link BalancedChannel} holds: each from its creation until it is shut down and its connector
 * closed ({@link #retire}), so that a channel whose addresses keep changing does not grow. Thread-safe.
 */
final class SubchannelRegistry
{
    private final List<ChannelSubchannel> held = new ArrayList<>();

    /** @param subchannel a new subchannel. */
    synchronized void add(final ChannelSubchannel subchannel)
    {
        held.add(subchannel);
    }

    /** @param subchannel a subchannel shut down, with nothing of it left to close. */
    synchronized void retire(final ChannelSubchannel subchannel)
    {
        held.remove(subchannel);
    }

    /** @return the subchannels held now, shut down ones included (a copy: iterate it without a lock). */
    synchronized List<ChannelSubchannel> snapshot()
    {
        return new ArrayList<>(held);
    }

    /** @return how many subchannels are held (tests: retired ones must go). */
    synchronized int size()
    {
        return held.size();
    }

    /**
     * @param than a subchannel.
     * @return true if a subchannel other than it is READY.
     */
    synchronized boolean anotherReady(final ChannelSubchannel than)
    {
        for (final ChannelSubchannel subchannel : held)
        {
            if (subchannel != than && subchannel.state() == ConnectivityState.READY)
            {
                return true;
            }
        }
        return false;
    }
}
