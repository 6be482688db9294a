package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import io.reverb.rpc.Status;
import java.net.URI;

/**
 * A logical connection to one address, created by a {@link LoadBalancer} through its {@link LoadBalancer.Helper}.
 * The channel behind it reconnects with backoff, watches health and GOAWAY, and folds all three into one
 * {@link ConnectivityState}. Calls picked onto it are counted by its {@link #load()}.
 */
public interface Subchannel
{
    /**
     * @return the address, e.g. {@code tcp://10.0.0.7:7000}.
     */
    URI address();

    /**
     * @return the state now (the listener has been, or is about to be, told of it).
     */
    ConnectivityState state();

    /**
     * Why the last attempt to reach the address failed (as grpc-java's {@code ConnectivityStateInfo.getStatus()} in
     * TRANSIENT_FAILURE), so that a balancer failing calls fast can say why, not only that.
     *
     * @return the status of the last failed attempt (e.g. UNAVAILABLE "cannot connect to ...: Connection refused"),
     * or null if none failed yet or the subchannel does not know.
     */
    default Status lastFailure()
    {
        return null;
    }

    /**
     * Asks for a connection when {@link ConnectivityState#IDLE}; does nothing otherwise.
     */
    void requestConnection();

    /**
     * Stops picking this subchannel for new calls. Calls already running on it finish (as after a GOAWAY), then
     * its connection closes. Idempotent.
     */
    void shutdown();

    /**
     * @return the subchannel's live load figures (calls outstanding, recent latency).
     */
    SubchannelLoad load();
}
