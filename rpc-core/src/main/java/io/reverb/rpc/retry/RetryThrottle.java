package io.reverb.rpc.retry;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The retry budget of one channel (gRPC's retry throttling): a token bucket that starts full at
 * {@code maxTokens}; each failed attempt with a retryable code takes one token, each successful call gives back
 * {@code tokenRatio}; retries (and hedges) are allowed only while more than half the tokens are left. When a
 * service struggles, failures drain the bucket and retries stop, so they cannot multiply its load; successes
 * refill it. Lock-free; tokens are counted in thousandths, as gRPC does, so that a ratio such as 0.1 is exact.
 */
public final class RetryThrottle
{
    private static final int SCALE = 1000;

    private final int maxMilliTokens;
    private final int thresholdMilliTokens;
    private final int ratioMilliTokens;
    private final AtomicInteger milliTokens;

    /**
     * @param maxTokens  size of the bucket, 1 to 1000.
     * @param tokenRatio tokens given back per success, in (0, 1], with at most three decimals.
     */
    public RetryThrottle(final int maxTokens, final double tokenRatio)
    {
        if (maxTokens < 1 || maxTokens > 1000)
        {
            throw new IllegalArgumentException("maxTokens must be 1..1000: " + maxTokens);
        }
        if (!(tokenRatio > 0.0 && tokenRatio <= 1.0))
        {
            throw new IllegalArgumentException("tokenRatio must be in (0, 1]: " + tokenRatio);
        }
        this.maxMilliTokens = maxTokens * SCALE;
        this.thresholdMilliTokens = maxMilliTokens / 2;
        this.ratioMilliTokens = (int)Math.round(tokenRatio * SCALE);
        this.milliTokens = new AtomicInteger(maxMilliTokens);
    }

    /**
     * A failed attempt whose code the policy retries: takes one token.
     *
     * @return true if retries are still allowed afterwards.
     */
    public boolean onFailure()
    {
        int now;
        int next;
        do
        {
            now = milliTokens.get();
            next = Math.max(0, now - SCALE);
        }
        while (now != next && !milliTokens.compareAndSet(now, next));
        return next > thresholdMilliTokens;
    }

    /**
     * A call that succeeded: gives back {@code tokenRatio} tokens.
     */
    public void onSuccess()
    {
        int now;
        int next;
        do
        {
            now = milliTokens.get();
            next = Math.min(maxMilliTokens, now + ratioMilliTokens);
        }
        while (now != next && !milliTokens.compareAndSet(now, next));
    }

    /**
     * @return true if a retry may be made now.
     */
    public boolean isRetryPermitted()
    {
        return milliTokens.get() > thresholdMilliTokens;
    }

    /**
     * @return tokens left, e.g. 7.5.
     */
    public double tokens()
    {
        return milliTokens.get() / (double)SCALE;
    }

    @Override
    public String toString()
    {
        return "RetryThrottle{tokens=" + tokens() + "/" + maxMilliTokens / SCALE + "}";
    }
}
