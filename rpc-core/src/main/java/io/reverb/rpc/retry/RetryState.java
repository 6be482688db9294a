package io.reverb.rpc.retry;

import io.reverb.rpc.RetryPolicy;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.StatusCode;

/**
 * The retry bookkeeping of one call: transparent retries for attempts the server never saw, then the call's
 * {@link RetryPolicy} (if the user marked it idempotent) within the channel's {@link RetryThrottle}. Used by one
 * call at a time (not thread-safe); allocated only when a first attempt fails.
 *
 * <p>Rules, in order:
 * <ol>
 * <li>once any response (headers or a message) reached the caller, the call is committed: never retried;</li>
 * <li>{@link AttemptFailure#NOT_SENT} and {@link AttemptFailure#REFUSED} are retried at once, on a new pick, up to
 * {@code maxTransparentRetries} times, for every call, idempotent or not;</li>
 * <li>otherwise, only a call with a policy, on a code the policy retries, while attempts are left and the
 * throttle permits, after the policy's backoff; and not if the backoff would outlast the deadline.</li>
 * </ol>
 */
public final class RetryState
{
    private final RetryPolicy policy;
    private final RetryThrottle throttle;
    private final int maxTransparentRetries;
    private int attempts = 1;
    private int transparentRetries;

    /**
     * @param policy                the call's policy, or null when the call is not idempotent.
     * @param throttle              the channel's budget, or null for none.
     * @param maxTransparentRetries how many never-seen attempts may be retried at once (e.g. the number of replicas).
     */
    public RetryState(final RetryPolicy policy, final RetryThrottle throttle, final int maxTransparentRetries)
    {
        if (maxTransparentRetries < 0)
        {
            throw new IllegalArgumentException("maxTransparentRetries must not be negative: " + maxTransparentRetries);
        }
        this.policy = policy;
        this.throttle = throttle;
        this.maxTransparentRetries = maxTransparentRetries;
    }

    /**
     * @param failure         how far the attempt got.
     * @param code            its status code.
     * @param responseStarted true if response headers or a message reached the caller.
     * @return what to do; for {@link RetryDecision#RETRY_AFTER_BACKOFF} ask {@link #backoffNanos(double)}.
     */
    public RetryDecision onFailure(final AttemptFailure failure, final StatusCode code, final boolean responseStarted)
    {
        if (responseStarted || code == StatusCode.OK || code == StatusCode.CANCELLED || code == StatusCode.DEADLINE_EXCEEDED)
        {
            return RetryDecision.FAIL; // committed, or the caller's own cancellation or deadline
        }
        if (failure != AttemptFailure.PROCESSED && transparentRetries < maxTransparentRetries)
        {
            transparentRetries++;
            return RetryDecision.RETRY_NOW;
        }
        if (policy == null || !policy.isRetryable(code))
        {
            return RetryDecision.FAIL;
        }
        final boolean permitted = throttle == null || throttle.onFailure();
        if (!permitted || attempts >= policy.maxAttempts())
        {
            return RetryDecision.FAIL;
        }
        attempts++;
        return RetryDecision.RETRY_AFTER_BACKOFF;
    }

    /**
     * The call succeeded: refills the throttle.
     */
    public void onSuccess()
    {
        if (throttle != null)
        {
            throttle.onSuccess();
        }
    }

    /**
     * @param random01 a uniform random number in [0, 1).
     * @return the wait before the attempt just granted by {@link RetryDecision#RETRY_AFTER_BACKOFF}.
     */
    public long backoffNanos(final double random01)
    {
        return policy == null ? 0 : policy.backoffNanos(attempts - 1, random01);
    }

    /**
     * @param backoffNanos the wait before the next attempt.
     * @param deadline     the call's deadline, or null.
     * @return true if the next attempt would start before the deadline.
     */
    public static boolean fitsDeadline(final long backoffNanos, final Deadline deadline)
    {
        return deadline == null || deadline.timeRemainingNanos() > backoffNanos;
    }

    /**
     * @return attempts made so far, counting the first and not counting transparent retries.
     */
    public int attempts()
    {
        return attempts;
    }

    /**
     * @return transparent retries made so far.
     */
    public int transparentRetries()
    {
        return transparentRetries;
    }
}
