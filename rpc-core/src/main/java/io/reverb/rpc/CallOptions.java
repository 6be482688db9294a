package io.reverb.rpc;

import java.time.Duration;

/**
 * Per-call settings: deadline, extra request metadata, wait-for-ready. Immutable; the {@code with*} methods
 * return copies, so a stub can hold one and derive others.
 */
public final class CallOptions
{
    /** No deadline, no metadata, fail fast. */
    public static final CallOptions DEFAULT = new CallOptions(null, null, false);

    private final Deadline deadline;
    private final Metadata metadata;
    private final boolean waitForReady;

    private CallOptions(final Deadline deadline, final Metadata metadata, final boolean waitForReady)
    {
        this.deadline = deadline;
        this.metadata = metadata;
        this.waitForReady = waitForReady;
    }

    /**
     * @param timeout time from now (the deadline is fixed when this is called, as in gRPC).
     * @return a copy with the deadline set.
     */
    public CallOptions withDeadlineAfter(final Duration timeout)
    {
        return withDeadline(Deadline.after(timeout));
    }

    /**
     * @param deadline the deadline, or null for none.
     * @return a copy with the deadline set.
     */
    public CallOptions withDeadline(final Deadline deadline)
    {
        return new CallOptions(deadline, metadata, waitForReady);
    }

    /**
     * @param extra metadata to send with the call; merged after any metadata already held.
     * @return a copy with the metadata merged.
     */
    public CallOptions withMetadata(final Metadata extra)
    {
        final Metadata merged = new Metadata();
        merged.merge(metadata);
        merged.merge(extra);
        return new CallOptions(deadline, merged, waitForReady);
    }

    /**
     * @return a copy that waits for the channel to connect instead of failing fast with UNAVAILABLE.
     */
    public CallOptions withWaitForReady()
    {
        return new CallOptions(deadline, metadata, true);
    }

    /**
     * @return a copy that fails fast with UNAVAILABLE while the channel cannot connect.
     */
    public CallOptions withoutWaitForReady()
    {
        return new CallOptions(deadline, metadata, false);
    }

    /**
     * @return the deadline, or null.
     */
    public Deadline deadline()
    {
        return deadline;
    }

    /**
     * @return the metadata to send (do not modify), or null when none.
     */
    public Metadata metadata()
    {
        return metadata;
    }

    /**
     * @return true if calls wait for the channel to become ready.
     */
    public boolean isWaitForReady()
    {
        return waitForReady;
    }

    @Override
    public String toString()
    {
        return "CallOptions{deadline=" + deadline + ", metadata=" + metadata + ", waitForReady=" + waitForReady + "}";
    }
}
