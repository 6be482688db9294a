package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Deadlines saturate rather than overflow, both ways: a timeout of centuries is "practically never" (it threw
 * {@code ArithmeticException} from {@code Duration.toNanos}), and one far in the past is expired (it wrapped round to
 * the far future, a call that never expired).
 */
class DeadlineTest
{
    private final AtomicLong now = new AtomicLong(-5);
    private final Deadline.Ticker ticker = now::get;

    @Test
    void shouldTakeAnyDuration()
    {
        assertThat(Deadline.after(ChronoUnit.FOREVER.getDuration()).isExpired()).isFalse();
        assertThat(Deadline.after(Duration.ofSeconds(Long.MAX_VALUE)).timeRemainingNanos()).isPositive();
        assertThat(Deadline.after(Duration.ofSeconds(Long.MIN_VALUE)).isExpired()).isTrue();
        assertThat(Deadline.after(Duration.ofMillis(-1)).isExpired()).isTrue();
    }

    @Test
    void shouldStayExpiredWhenFarInThePast()
    {
        final Deadline past = Deadline.after(Long.MIN_VALUE, TimeUnit.NANOSECONDS, ticker);
        now.addAndGet(1);
        assertThat(past.isExpired()).isTrue();
        assertThat(past.timeRemainingNanos()).isNegative();
        now.set(Long.MAX_VALUE - 10); // the clock may sit anywhere: the difference stays right
        final Deadline far = Deadline.after(Long.MAX_VALUE, TimeUnit.NANOSECONDS, ticker);
        final Deadline soon = Deadline.after(1, TimeUnit.SECONDS, ticker);
        assertThat(far.isExpired()).isFalse();
        assertThat(soon.compareTo(far)).isNegative();
        assertThat(Deadline.after(Long.MIN_VALUE, TimeUnit.NANOSECONDS, ticker).compareTo(soon)).isNegative();
    }
}
