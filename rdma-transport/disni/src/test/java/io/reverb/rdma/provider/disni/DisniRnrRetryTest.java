package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** What the configured RNR bound becomes through rdma_cm (a count of 655.36 ms waits, at most 6). */
class DisniRnrRetryTest
{
    @Test
    void shouldFailAtOnceWhenTheBoundIsZero()
    {
        assertThat(RnrRetry.count(0)).isZero();
        assertThat(RnrRetry.effectiveWaitNanos(0)).isZero();
    }

    @Test
    void shouldRoundTheDefault100MsUpToOneRetryOf655Ms()
    {
        final long hundredMs = TimeUnit.MILLISECONDS.toNanos(100);

        assertThat(RnrRetry.count(hundredMs)).isEqualTo(1);
        assertThat(TimeUnit.NANOSECONDS.toMillis(RnrRetry.effectiveWaitNanos(hundredMs))).isEqualTo(655);
        assertThat(RnrRetry.describe(hundredMs)).isEqualTo(
            "rnr_retry_count 1 (the peer's sends retry 655 ms while no receive is posted here)");
    }

    @Test
    void shouldCoverTheBoundWithWholeRetriesUpToSix()
    {
        assertThat(RnrRetry.count(RnrRetry.RETRY_WAIT_NANOS)).isEqualTo(1);
        assertThat(RnrRetry.count(RnrRetry.RETRY_WAIT_NANOS + 1)).isEqualTo(2);
        assertThat(RnrRetry.count(TimeUnit.SECONDS.toNanos(2))).isEqualTo(4);
        assertThat(RnrRetry.count(TimeUnit.SECONDS.toNanos(60))).isEqualTo(RnrRetry.MAX_FINITE_COUNT);
        assertThat(TimeUnit.NANOSECONDS.toMillis(RnrRetry.effectiveWaitNanos(Long.MAX_VALUE))).isEqualTo(3932);
    }
}
