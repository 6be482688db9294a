package io.reverb.rpc;

import java.time.Duration;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * How to retry a call the user marked idempotent (gRPC's {@code retryPolicy}): at most {@link #maxAttempts()}
 * attempts in all, only on the {@link #retryableCodes()}, with exponential backoff and full jitter between them
 * (the n-th retry waits a random time in {@code [0, min(initialBackoff * multiplier^(n-1), maxBackoff))}).
 * Immutable.
 */
public final class RetryPolicy
{
    /** The most attempts a policy may ask for, as in gRPC. */
    public static final int MAX_ATTEMPTS_LIMIT = 5;

    private final int maxAttempts;
    private final long initialBackoffNanos;
    private final long maxBackoffNanos;
    private final double backoffMultiplier;
    private final Set<StatusCode> retryableCodes;
    private final boolean[] retryable = new boolean[StatusCode.values().length];

    private RetryPolicy(final Builder builder)
    {
        this.maxAttempts = builder.maxAttempts;
        this.initialBackoffNanos = builder.initialBackoff.toNanos();
        this.maxBackoffNanos = builder.maxBackoff.toNanos();
        this.backoffMultiplier = builder.backoffMultiplier;
        this.retryableCodes = Set.copyOf(builder.retryableCodes);
        for (final StatusCode code : retryableCodes)
        {
            retryable[code.ordinal()] = true;
        }
    }

    /**
     * @return a builder: 3 attempts, 10 ms initial backoff, 1 s max, multiplier 2, retrying UNAVAILABLE.
     */
    public static Builder builder()
    {
        return new Builder();
    }

    /**
     * @return attempts in all, including the first (2 to {@link #MAX_ATTEMPTS_LIMIT}).
     */
    public int maxAttempts()
    {
        return maxAttempts;
    }

    /**
     * @return the status codes worth another attempt.
     */
    public Set<StatusCode> retryableCodes()
    {
        return retryableCodes;
    }

    /**
     * @param code a failed attempt's code.
     * @return true if another attempt may help.
     */
    public boolean isRetryable(final StatusCode code)
    {
        return retryable[code.ordinal()];
    }

    /**
     * @param retry    which retry: 1 for the wait before the second attempt.
     * @param random01 a uniform random number in [0, 1) (injected so tests are exact).
     * @return nanoseconds to wait before that retry.
     */
    public long backoffNanos(final int retry, final double random01)
    {
        if (retry < 1)
        {
            throw new IllegalArgumentException("retry counts from 1: " + retry);
        }
        final double ceiling = Math.min(initialBackoffNanos * Math.pow(backoffMultiplier, retry - 1), maxBackoffNanos);
        return (long)(ceiling * random01);
    }

    @Override
    public String toString()
    {
        return "RetryPolicy{maxAttempts=" + maxAttempts + ", initialBackoff=" + Duration.ofNanos(initialBackoffNanos) +
            ", maxBackoff=" + Duration.ofNanos(maxBackoffNanos) + ", multiplier=" + backoffMultiplier +
            ", retryableCodes=" + retryableCodes + "}";
    }

    /**
     * Configures a {@link RetryPolicy}; {@link #build()} validates.
     */
    public static final class Builder
    {
        private int maxAttempts = 3;
        private Duration initialBackoff = Duration.ofMillis(10);
        private Duration maxBackoff = Duration.ofSeconds(1);
        private double backoffMultiplier = 2.0;
        private Set<StatusCode> retryableCodes = EnumSet.of(StatusCode.UNAVAILABLE);

        private Builder()
        {
        }

        /**
         * @param attempts attempts in all, including the first: 2 to {@link #MAX_ATTEMPTS_LIMIT}.
         * @return this.
         */
        public Builder maxAttempts(final int attempts)
        {
            this.maxAttempts = attempts;
            return this;
        }

        /**
         * @param initial ceiling of the first retry's random wait, positive.
         * @param max     largest ceiling, at least initial.
         * @param multiplier growth of the ceiling per retry, at least 1.
         * @return this.
         */
        public Builder backoff(final Duration initial, final Duration max, final double multiplier)
        {
            this.initialBackoff = Objects.requireNonNull(initial, "initial");
            this.maxBackoff = Objects.requireNonNull(max, "max");
            this.backoffMultiplier = multiplier;
            return this;
        }

        /**
         * @param codes the codes worth retrying, at least one, never OK.
         * @return this.
         */
        public Builder retryableCodes(final StatusCode... codes)
        {
            this.retryableCodes = codes.length == 0 ? EnumSet.noneOf(StatusCode.class) : EnumSet.of(codes[0], codes);
            return this;
        }

        /**
         * @return the policy.
         * @throws IllegalArgumentException naming the first invalid setting.
         */
        public RetryPolicy build()
        {
            if (maxAttempts < 2 || maxAttempts > MAX_ATTEMPTS_LIMIT)
            {
                throw new IllegalArgumentException("maxAttempts must be 2.." + MAX_ATTEMPTS_LIMIT + ": " + maxAttempts);
            }
            if (initialBackoff.isNegative() || initialBackoff.isZero() || maxBackoff.compareTo(initialBackoff) < 0)
            {
                throw new IllegalArgumentException("backoff needs 0 < initial <= max: " + initialBackoff + ", " + maxBackoff);
            }
            if (!(backoffMultiplier >= 1.0))
            {
                throw new IllegalArgumentException("backoff multiplier must be >= 1: " + backoffMultiplier);
            }
            if (retryableCodes.isEmpty() || retryableCodes.contains(StatusCode.OK))
            {
                throw new IllegalArgumentException("retryable codes must be non-empty and exclude OK: " + retryableCodes);
            }
            return new RetryPolicy(this);
        }
    }
}
