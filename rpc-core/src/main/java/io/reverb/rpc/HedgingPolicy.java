package io.reverb.rpc;

import java.time.Duration;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * How to hedge a unary call the user marked idempotent (gRPC's {@code hedgingPolicy}): the first attempt is sent at
 * once, and while no attempt has answered, another is sent every {@link #hedgingDelayNanos() hedging delay}, up to
 * {@link #maxAttempts()} in all, each to a replica not yet tried when there is one. The first OK answer wins and
 * the other attempts are cancelled (their servers see a CANCEL). An attempt failing with one of the
 * {@link #nonFatalCodes()} lets the next hedge go at once; any other failure ends the call with it. Hedges share
 * the channel's retry budget ({@link RpcChannel.Builder#retryThrottling}): a non-fatal failure takes a token, a success gives some back, and no hedge
 * beyond the first attempt is sent while the budget is spent. Immutable.
 */
public final class HedgingPolicy
{
    private final int maxAttempts;
    private final long hedgingDelayNanos;
    private final Set<StatusCode> nonFatalCodes;
    private final boolean[] nonFatal = new boolean[StatusCode.values().length];

    private HedgingPolicy(final Builder builder)
    {
        this.maxAttempts = builder.maxAttempts;
        this.hedgingDelayNanos = builder.hedgingDelay.toNanos();
        this.nonFatalCodes = Set.copyOf(builder.nonFatalCodes);
        for (final StatusCode code : nonFatalCodes)
        {
            nonFatal[code.ordinal()] = true;
        }
    }

    /**
     * @return a builder: 2 attempts, 10 ms hedging delay, no non-fatal codes.
     */
    public static Builder builder()
    {
        return new Builder();
    }

    /**
     * @return attempts in all, including the first (2 to {@link RetryPolicy#MAX_ATTEMPTS_LIMIT}).
     */
    public int maxAttempts()
    {
        return maxAttempts;
    }

    /**
     * @return nanoseconds between hedges while no attempt has answered; 0 sends every attempt at once.
     */
    public long hedgingDelayNanos()
    {
        return hedgingDelayNanos;
    }

    /**
     * @return the codes after which the next hedge is sent at once instead of ending the call.
     */
    public Set<StatusCode> nonFatalCodes()
    {
        return nonFatalCodes;
    }

    /**
     * @param code a failed attempt's code.
     * @return true if the call goes on with its other attempts.
     */
    public boolean isNonFatal(final StatusCode code)
    {
        return nonFatal[code.ordinal()];
    }

    @Override
    public String toString()
    {
        return "HedgingPolicy{maxAttempts=" + maxAttempts + ", hedgingDelay=" + Duration.ofNanos(hedgingDelayNanos) +
            ", nonFatalCodes=" + nonFatalCodes + "}";
    }

    /**
     * Configures a {@link HedgingPolicy}; {@link #build()} validates.
     */
    public static final class Builder
    {
        private int maxAttempts = 2;
        private Duration hedgingDelay = Duration.ofMillis(10);
        private Set<StatusCode> nonFatalCodes = EnumSet.noneOf(StatusCode.class);

        private Builder()
        {
        }

        /**
         * @param attempts attempts in all, including the first: 2 to {@link RetryPolicy#MAX_ATTEMPTS_LIMIT}.
         * @return this.
         */
        public Builder maxAttempts(final int attempts)
        {
            this.maxAttempts = attempts;
            return this;
        }

        /**
         * @param delay time between hedges while no attempt answered, zero or positive (zero: all at once).
         * @return this.
         */
        public Builder hedgingDelay(final Duration delay)
        {
            this.hedgingDelay = Objects.requireNonNull(delay, "delay");
            return this;
        }

        /**
         * @param codes codes after which the next hedge goes at once (e.g. UNAVAILABLE); never OK.
         * @return this.
         */
        public Builder nonFatalCodes(final StatusCode... codes)
        {
            this.nonFatalCodes = codes.length == 0 ? EnumSet.noneOf(StatusCode.class) : EnumSet.of(codes[0], codes);
            return this;
        }

        /**
         * @return the policy.
         * @throws IllegalArgumentException naming the first invalid setting.
         */
        public HedgingPolicy build()
        {
            if (maxAttempts < 2 || maxAttempts > RetryPolicy.MAX_ATTEMPTS_LIMIT)
            {
                throw new IllegalArgumentException("maxAttempts must be 2.." + RetryPolicy.MAX_ATTEMPTS_LIMIT + ": " +
                    maxAttempts);
            }
            if (hedgingDelay.isNegative())
            {
                throw new IllegalArgumentException("hedgingDelay must not be negative: " + hedgingDelay);
            }
            if (nonFatalCodes.contains(StatusCode.OK))
            {
                throw new IllegalArgumentException("non-fatal codes must exclude OK: " + nonFatalCodes);
            }
            return new HedgingPolicy(this);
        }
    }
}
