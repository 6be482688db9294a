package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;

/**
 * Told each time a {@link Subchannel}'s state changes. Called serially for one subchannel, never while the
 * subchannel's own locks are held.
 */
@FunctionalInterface
public interface SubchannelStateListener
{
    /**
     * @param subchannel the subchannel.
     * @param newState   its new state.
     */
    void onStateChange(Subchannel subchannel, ConnectivityState newState);
}
