package io.reverb.rpc.retry;

/**
 * What to do after a failed attempt.
 */
public enum RetryDecision
{
    /** Retry at once, on another pick (a transparent retry: it counts neither as an attempt nor against the budget). */
    RETRY_NOW,
    /** Retry after {@link RetryState#backoffNanos(double)}. */
    RETRY_AFTER_BACKOFF,
    /** Give the failure to the caller. */
    FAIL
}
