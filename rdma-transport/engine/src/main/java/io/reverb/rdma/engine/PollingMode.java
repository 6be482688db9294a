package io.reverb.rdma.engine;

/**
 * How a completion poller waits when its completion queues are empty.
 */
public enum PollingMode
{
    /** Spin on the CQs forever: lowest latency, one core per poller at 100% even when idle. */
    BUSY,
    /** Arm the CQs, poll once more to close the race, then block on the completion channel. */
    EVENT,
    /**
     * Spin while completions keep coming (the spin budget follows the recent gap between
     * completions, and spinning stops while it mostly misses), then yield the core for up to 300 us (a
     * yield gives way to any thread that wants the core), then arm and block like {@link #EVENT}. The default.
     */
    ADAPTIVE
}
