package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import io.reverb.rpc.health.HealthProtocol;


/**
 * Folds what a subchannel knows of its replica into the one state a load balancer sees: the connection's state,
 * the replica's health (when health checking is on) and whether the replica sent GOAWAY. Only a connected,
 * SERVING, not draining replica is {@link ConnectivityState#READY}. Not thread-safe: one subchannel updates it
 * serially.
 *
 * <table>
 * <caption>effective state</caption>
 * <tr><th>connection</th><th>GOAWAY</th><th>health</th><th>load balancer sees</th></tr>
 * <tr><td>not READY</td><td>any</td><td>any</td><td>the connection's state</td></tr>
 * <tr><td>READY</td><td>received</td><td>any</td><td>IDLE (drained: reconnect, calls in flight finish)</td></tr>
 * <tr><td>READY</td><td>no</td><td>off, SERVING, or no health service (UNIMPLEMENTED)</td><td>READY</td></tr>
 * <tr><td>READY</td><td>no</td><td>no answer yet</td><td>CONNECTING</td></tr>
 * <tr><td>READY</td><td>no</td><td>NOT_SERVING, SERVICE_UNKNOWN, UNKNOWN</td><td>TRANSIENT_FAILURE</td></tr>
 * </table>
 */
public final class SubchannelReadiness
{
    private static final int NOT_KNOWN = -1;
    private static final int ASSUME_SERVING = -2;

    private final boolean healthChecking;
    private ConnectivityState transport = ConnectivityState.IDLE;
    private boolean draining;
    private int health = NOT_KNOWN;

    /**
     * @param healthChecking true to wait for SERVING before picking the subchannel.
     */
    public SubchannelReadiness(final boolean healthChecking)
    {
        this.healthChecking = healthChecking;
    }

    /**
     * @param state the connection's new state; a new connection forgets the old one's GOAWAY and health.
     * @return the effective state.
     */
    public ConnectivityState onTransportState(final ConnectivityState state)
    {
        if (state != ConnectivityState.READY)
        {
            draining = false;
            health = NOT_KNOWN;
        }
        transport = state;
        return state();
    }

    /**
     * @param servingStatus a {@code ServingStatus} number from the health Watch stream ({@link HealthProtocol}).
     * @return the effective state.
     */
    public ConnectivityState onHealth(final int servingStatus)
    {
        health = servingStatus;
        return state();
    }

    /**
     * The replica has no health service (the Watch call answered UNIMPLEMENTED): treat it as serving.
     *
     * @return the effective state.
     */
    public ConnectivityState onHealthUnimplemented()
    {
        health = ASSUME_SERVING;
        return state();
    }

    /**
     * The replica sent GOAWAY on the current connection.
     *
     * @return the effective state.
     */
    public ConnectivityState onGoAway()
    {
        draining = true;
        return state();
    }

    /**
     * @return the state the load balancer should see.
     */
    public ConnectivityState state()
    {
        if (transport != ConnectivityState.READY)
        {
            return transport;
        }
        if (draining)
        {
            return ConnectivityState.IDLE;
        }
        if (!healthChecking || health == HealthProtocol.SERVING || health == ASSUME_SERVING)
        {
            return ConnectivityState.READY;
        }
        return health == NOT_KNOWN ? ConnectivityState.CONNECTING : ConnectivityState.TRANSIENT_FAILURE;
    }
}
