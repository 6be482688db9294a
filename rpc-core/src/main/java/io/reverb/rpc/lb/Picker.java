package io.reverb.rpc.lb;

import io.reverb.rpc.Status;

/**
 * Chooses the subchannel for one call. Called on every call, from any thread: implementations are immutable
 * snapshots of the ready subchannels (a load balancer publishes a new picker when the set changes) and must not
 * allocate or lock in {@link #pick()}.
 */
public interface Picker
{
    /**
     * @return the subchannel to start the call on, or null when none is ready: the call then waits for the next
     * picker (wait-for-ready) or fails with {@link #noneReadyStatus()}.
     */
    Subchannel pick();

    /**
     * @return why {@link #pick()} returned null, e.g. UNAVAILABLE naming the last connection error.
     */
    Status noneReadyStatus();
}
