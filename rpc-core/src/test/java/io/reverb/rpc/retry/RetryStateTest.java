package io.reverb.rpc.retry;

import io.reverb.rpc.RetryPolicy;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rpc.Deadline;
import io.reverb.rpc.StatusCode;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class RetryStateTest
{
    private final RetryPolicy policy = RetryPolicy.builder().maxAttempts(3)
        .backoff(Duration.ofMillis(10), Duration.ofSeconds(1), 2.0).retryableCodes(StatusCode.UNAVAILABLE).build();

    @Test
    void shouldRetryNeverSentAndRefusedAttemptsTransparentlyEvenWithoutPolicy()
    {
        final RetryState state = new RetryState(null, new RetryThrottle(10, 0.1), 2);
        assertThat(state.onFailure(AttemptFailure.NOT_SENT, StatusCode.UNAVAILABLE, false)).isEqualTo(RetryDecision.RETRY_NOW);
        assertThat(state.onFailure(AttemptFailure.REFUSED, StatusCode.UNAVAILABLE, false)).isEqualTo(RetryDecision.RETRY_NOW);
        assertThat(state.onFailure(AttemptFailure.REFUSED, StatusCode.UNAVAILABLE, false)).isEqualTo(RetryDecision.FAIL);
        assertThat(state.transparentRetries()).isEqualTo(2);
        assertThat(state.attempts()).isEqualTo(1);
    }

    @Test
    void shouldNeverRetryANonIdempotentCallTheServerMayHaveProcessed()
    {
        final RetryState state = new RetryState(null, null, 5);
        assertThat(state.onFailure(AttemptFailure.PROCESSED, StatusCode.UNAVAILABLE, false)).isEqualTo(RetryDecision.FAIL);
    }

    @Test
    void shouldRetryAnIdempotentCallUpToMaxAttemptsOnRetryableCodesOnly()
    {
        final RetryState state = new RetryState(policy, null, 0);
        assertThat(state.onFailure(AttemptFailure.PROCESSED, StatusCode.INTERNAL, false)).isEqualTo(RetryDecision.FAIL);
        assertThat(state.onFailure(AttemptFailure.PROCESSED, StatusCode.UNAVAILABLE, false))
            .isEqualTo(RetryDecision.RETRY_AFTER_BACKOFF);
        assertThat(state.backoffNanos(0.5)).isEqualTo(5_000_000L);
        assertThat(state.onFailure(AttemptFailure.PROCESSED, StatusCode.UNAVAILABLE, false))
            .isEqualTo(RetryDecision.RETRY_AFTER_BACKOFF);
        assertThat(state.backoffNanos(0.5)).isEqualTo(10_000_000L);
        assertThat(state.onFailure(AttemptFailure.PROCESSED, StatusCode.UNAVAILABLE, false)).isEqualTo(RetryDecision.FAIL);
        assertThat(state.attempts()).isEqualTo(3);
    }

    @Test
    void shouldNotRetryOnceAResponseReachedTheCaller()
    {
        final RetryState state = new RetryState(policy, null, 5);
        assertThat(state.onFailure(AttemptFailure.NOT_SENT, StatusCode.UNAVAILABLE, true)).isEqualTo(RetryDecision.FAIL);
        assertThat(state.onFailure(AttemptFailure.PROCESSED, StatusCode.UNAVAILABLE, true)).isEqualTo(RetryDecision.FAIL);
    }

    @Test
    void shouldNotRetryTheCallersOwnCancellationOrDeadline()
    {
        final RetryState state = new RetryState(RetryPolicy.builder()
            .retryableCodes(StatusCode.CANCELLED, StatusCode.DEADLINE_EXCEEDED).build(), null, 5);
        assertThat(state.onFailure(AttemptFailure.PROCESSED, StatusCode.CANCELLED, false)).isEqualTo(RetryDecision.FAIL);
        assertThat(state.onFailure(AttemptFailure.NOT_SENT, StatusCode.DEADLINE_EXCEEDED, false)).isEqualTo(RetryDecision.FAIL);
    }

    @Test
    void shouldStopRetryingWhenTheBudgetIsExhaustedAcrossCalls()
    {
        final RetryThrottle throttle = new RetryThrottle(4, 0.5);
        // calls failing with a retryable code drain the shared bucket: 4 -> 3 (retry), 3 -> 2 (no more)
        assertThat(new RetryState(policy, throttle, 0).onFailure(AttemptFailure.PROCESSED, StatusCode.UNAVAILABLE, false))
            .isEqualTo(RetryDecision.RETRY_AFTER_BACKOFF);
        assertThat(new RetryState(policy, throttle, 0).onFailure(AttemptFailure.PROCESSED, StatusCode.UNAVAILABLE, false))
            .isEqualTo(RetryDecision.FAIL);
        assertThat(new RetryState(policy, throttle, 0).onFailure(AttemptFailure.PROCESSED, StatusCode.UNAVAILABLE, false))
            .isEqualTo(RetryDecision.FAIL);
        // transparent retries do not need the budget
        assertThat(new RetryState(policy, throttle, 1).onFailure(AttemptFailure.NOT_SENT, StatusCode.UNAVAILABLE, false))
            .isEqualTo(RetryDecision.RETRY_NOW);
        // 3 failures took it from 4 to 1; 5 successes give back 2.5: 3.5, so one more retry (3.5 -> 2.5), then none
        final RetryState ok = new RetryState(policy, throttle, 0);
        for (int i = 0; i < 5; i++)
        {
            ok.onSuccess();
        }
        assertThat(throttle.tokens()).isEqualTo(3.5);
        assertThat(new RetryState(policy, throttle, 0).onFailure(AttemptFailure.PROCESSED, StatusCode.UNAVAILABLE, false))
            .isEqualTo(RetryDecision.RETRY_AFTER_BACKOFF);
        assertThat(new RetryState(policy, throttle, 0).onFailure(AttemptFailure.PROCESSED, StatusCode.UNAVAILABLE, false))
            .isEqualTo(RetryDecision.FAIL);
        assertThat(throttle.tokens()).isEqualTo(1.5);
    }

    @Test
    void shouldTellWhetherABackoffFitsTheDeadline()
    {
        final long[] now = {0};
        final Deadline deadline = Deadline.after(100, TimeUnit.MILLISECONDS, () -> now[0]);
        assertThat(RetryState.fitsDeadline(TimeUnit.MILLISECONDS.toNanos(99), deadline)).isTrue();
        assertThat(RetryState.fitsDeadline(TimeUnit.MILLISECONDS.toNanos(100), deadline)).isFalse();
        assertThat(RetryState.fitsDeadline(Long.MAX_VALUE, null)).isTrue();
    }
}
