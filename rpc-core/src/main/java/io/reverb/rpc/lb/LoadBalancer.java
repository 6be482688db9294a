package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import io.reverb.rpc.Status;
import java.net.URI;
import java.util.List;

/**
 * A load-balancing policy for one channel: turns resolved addresses into subchannels and publishes a
 * {@link Picker} for each change of their states. Called serially by the channel (never concurrently with
 * itself); the picker it publishes is then used from any thread.
 */
public interface LoadBalancer
{
    /**
     * New addresses from the name resolver, in its order. Subchannels for addresses that are gone are shut down
     * (their calls finish); new addresses get subchannels. Calls in flight are never failed by an update.
     *
     * @param addresses the addresses; may be empty.
     */
    void handleResolvedAddresses(List<URI> addresses);

    /**
     * The resolver failed. Subchannels already known are kept; a picker with no ready subchannel reports the error.
     *
     * @param error the resolver's error.
     */
    void handleNameResolutionError(Status error);

    /**
     * Shuts every subchannel down.
     */
    void shutdown();

    /**
     * What the channel gives a load balancer.
     */
    interface Helper
    {
        /**
         * @param address  the address.
         * @param listener told of the subchannel's state changes.
         * @return a new subchannel in state {@link ConnectivityState#IDLE} (not connecting until asked).
         */
        Subchannel createSubchannel(URI address, SubchannelStateListener listener);

        /**
         * Publishes the channel's state and the picker for the next calls.
         *
         * @param state  the aggregate state.
         * @param picker the picker.
         */
        void updateBalancingState(ConnectivityState state, Picker picker);

        /**
         * Asks the name resolver to resolve again (e.g. after a connection failed).
         */
        void refreshNameResolution();
    }
}
