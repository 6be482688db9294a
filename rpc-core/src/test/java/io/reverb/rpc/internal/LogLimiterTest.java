package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class LogLimiterTest
{
    private long now = 7;
    private final LogLimiter limiter = new LogLimiter(() -> now);

    @Test
    void shouldPassABurstThenOneLinePerIntervalCountingTheLeftOut()
    {
        int passed = 0;
        for (int i = 0; i < 1_000; i++)
        {
            if (limiter.admit("m") != LogLimiter.SUPPRESS)
            {
                passed++;
            }
        }
        assertThat(passed).isEqualTo(LogLimiter.BURST);
        assertThat(limiter.admit("other")).as("keys are limited apart").isZero();
        now += LogLimiter.INTERVAL_NANOS;
        assertThat(limiter.admit("m")).isEqualTo(1_000 - LogLimiter.BURST);
        assertThat(limiter.admit("m")).isEqualTo(LogLimiter.SUPPRESS);
    }
}
