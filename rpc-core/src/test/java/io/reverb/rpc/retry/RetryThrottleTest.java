package io.reverb.rpc.retry;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RetryThrottleTest
{
    @Test
    void shouldStopRetriesOnceHalfTheTokensAreSpentAndResumeAfterSuccesses()
    {
        final RetryThrottle throttle = new RetryThrottle(10, 0.1);
        for (int i = 0; i < 4; i++)
        {
            assertThat(throttle.onFailure()).isTrue(); // 9, 8, 7, 6 left
        }
        assertThat(throttle.onFailure()).isFalse(); // 5: not more than half
        assertThat(throttle.isRetryPermitted()).isFalse();
        assertThat(throttle.tokens()).isEqualTo(5.0);

        for (int i = 0; i < 9; i++)
        {
            throttle.onSuccess();
        }
        assertThat(throttle.tokens()).isEqualTo(5.9);
        assertThat(throttle.isRetryPermitted()).isTrue();
    }

    @Test
    void shouldStayWithinZeroAndTheMaximum()
    {
        final RetryThrottle throttle = new RetryThrottle(2, 1.0);
        throttle.onSuccess();
        assertThat(throttle.tokens()).isEqualTo(2.0);
        throttle.onFailure();
        throttle.onFailure();
        throttle.onFailure();
        assertThat(throttle.tokens()).isZero();
    }
}
