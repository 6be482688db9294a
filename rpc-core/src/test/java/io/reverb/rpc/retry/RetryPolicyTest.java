package io.reverb.rpc.retry;

import io.reverb.rpc.RetryPolicy;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rpc.StatusCode;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class RetryPolicyTest
{
    private final RetryPolicy policy = RetryPolicy.builder().maxAttempts(4)
        .backoff(Duration.ofMillis(10), Duration.ofMillis(30), 2.0)
        .retryableCodes(StatusCode.UNAVAILABLE, StatusCode.RESOURCE_EXHAUSTED).build();

    @Test
    void shouldGrowTheBackoffCeilingUpToTheMaximumWithFullJitter()
    {
        assertThat(policy.backoffNanos(1, 0.999_999)).isEqualTo(9_999_990L);
        assertThat(policy.backoffNanos(2, 0.5)).isEqualTo(10_000_000L);
        assertThat(policy.backoffNanos(3, 0.5)).isEqualTo(15_000_000L); // ceiling 40 ms capped at 30 ms
        assertThat(policy.backoffNanos(3, 0.0)).isZero();
    }

    @Test
    void shouldRetryOnlyTheListedCodes()
    {
        assertThat(policy.isRetryable(StatusCode.UNAVAILABLE)).isTrue();
        assertThat(policy.isRetryable(StatusCode.RESOURCE_EXHAUSTED)).isTrue();
        assertThat(policy.isRetryable(StatusCode.INTERNAL)).isFalse();
    }

    @Test
    void shouldRejectInvalidSettingsNamingThem()
    {
        assertThatThrownBy(() -> RetryPolicy.builder().maxAttempts(1).build()).hasMessageContaining("maxAttempts");
        assertThatThrownBy(() -> RetryPolicy.builder().maxAttempts(6).build()).hasMessageContaining("maxAttempts");
        assertThatThrownBy(() -> RetryPolicy.builder().retryableCodes(StatusCode.OK).build()).hasMessageContaining("OK");
        assertThatThrownBy(() -> RetryPolicy.builder().backoff(Duration.ofSeconds(2), Duration.ofSeconds(1), 2).build())
            .hasMessageContaining("backoff");
        assertThatThrownBy(() -> RetryPolicy.builder().backoff(Duration.ofSeconds(1), Duration.ofSeconds(1), 0.5).build())
            .hasMessageContaining("multiplier");
    }
}
